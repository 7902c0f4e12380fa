// A message session on a scale set and the calls made with its queue token: the long poll for
// messages, their acknowledgement, and acquiring the jobs they offer. A set has one live session
// at a time; its queue (owned by the set, not the session) delivers each envelope until it is
// acknowledged. A 401 on a queue call means the queue token expired: the session is refreshed
// (new token) and the call sent once more. close() deletes the session so that the next
// listener need not wait for it to lapse; the destructor does no I/O.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/github/scaleset_client.h"
#include "common/github/scaleset_types.h"

namespace runpool::github {

class MessageSession {
 public:
  // Creates the session (SessionConflictError while another is live, ScaleSetGoneError).
  // Queue calls go through `queue_caller` when given, else the client's caller: give the poll a
  // connection of its own, since CurlHttpClient runs one transfer at a time and a held poll
  // would stall other calls for up to a minute. Both must outlive this.
  MessageSession(ScaleSetClient& client, int64_t scale_set_id, const std::string& owner_name,
                 ActionsCaller* queue_caller = nullptr);

  // Waits up to the service's hold (≈50 s) for a message after `last_message_id` (0: from the
  // oldest unacknowledged). nullopt: none came (202). `max_capacity` (≥ 0) tells the service how
  // many jobs the set can take. An empty or malformed 200 throws GithubError.
  std::optional<ScaleSetMessage> get_message(int64_t last_message_id, int max_capacity);
  // Acknowledges an envelope: it is not delivered again.
  void delete_message(int64_t message_id);
  // Claims JobAvailable jobs for the set; returns the ids now the set's (the others were taken
  // elsewhere or are gone). Each becomes a JobAssigned message.
  std::vector<int64_t> acquire_jobs(const std::vector<int64_t>& runner_request_ids);

  void refresh();  // a new queue token (SessionExpiredError when the session is gone)
  DeleteOutcome close();

  MessageSessionInfo info() const;
  int64_t scale_set_id() const { return scale_set_id_; }
  int refreshes() const;

 private:
  // Sends a queue call with the current token; after a 401 refreshes (unless another thread
  // already did) and sends once more.
  GithubReply queue_call(const std::string& operation, const std::string& method, const std::string& url,
                         const std::string& body, bool long_poll,
                         std::vector<std::pair<std::string, std::string>> headers);

  ScaleSetClient& client_;
  ActionsCaller& queue_caller_;
  int64_t scale_set_id_;
  mutable std::mutex mu_;  // guards info_ and refreshes_; never held across a request
  MessageSessionInfo info_;
  int refreshes_ = 0;
};

}  // namespace runpool::github
