// The runner scale-set API's calls made with the admin token: runner groups, scale sets, message
// sessions (create, refresh, delete), JIT configs and the sets' runners. Paths are under the
// Actions service's base URL (actions_service.h) with `api-version=6.0-preview`. A 401 drops the
// admin token and the call is sent once more after a new discovery. Answers a caller must branch
// on are values (get → nullopt when absent, delete → DeleteOutcome) or typed errors
// (scaleset_errors.h); other non-2xx answers and malformed bodies throw GithubError.
// The queue calls (poll, acknowledge, acquire) take the session's token: message_session.h.
#pragma once

#include <atomic>
#include <optional>
#include <string>

#include "common/github/actions_caller.h"
#include "common/github/actions_service.h"
#include "common/github/runner.h"
#include "common/github/scaleset_types.h"

namespace runpool::github {

class ScaleSetClient {
 public:
  // Both must outlive the client.
  ScaleSetClient(ActionsCaller& caller, ActionsServiceAuth& auth);

  // Names are matched by the service (case-insensitively); more than one match throws.
  std::optional<RunnerGroup> get_runner_group(const std::string& name);
  std::optional<ScaleSet> get_scale_set(int64_t runner_group_id, const std::string& name);
  std::optional<ScaleSet> get_scale_set_by_id(int64_t id);  // nullopt: gone
  ScaleSet create_scale_set(const ScaleSetSpec& spec);      // ScaleSetExistsError: name taken
  ScaleSet update_scale_set(int64_t id, const ScaleSetUpdate& update);  // ScaleSetGoneError
  // 204 → kDeleted, 404 → kAlreadyGone, 400 JobStillRunningException → kBusy.
  DeleteOutcome delete_scale_set(int64_t id);

  // SessionConflictError while another session is live; ScaleSetGoneError.
  MessageSessionInfo create_session(int64_t scale_set_id, const std::string& owner_name);
  // A new queue token. SessionExpiredError when the session is no longer the set's: any 404 but
  // the set's own (ScaleSetGoneError).
  MessageSessionInfo refresh_session(int64_t scale_set_id, const std::string& session_id);
  // 204 → kDeleted; the session already expired or replaced (400) → kAlreadyGone.
  DeleteOutcome delete_session(int64_t scale_set_id, const std::string& session_id);

  // A runner of the set, registered now, for one job. RunnerNameTakenError when the name is
  // registered in the scope; ScaleSetGoneError.
  ScaleSetJitConfig generate_jit_config(int64_t scale_set_id, const std::string& runner_name,
                                        const std::string& work_folder = "");
  std::optional<ScaleSetRunner> get_runner(int64_t runner_id);  // nullopt on 404
  std::optional<ScaleSetRunner> get_runner_by_name(const std::string& name);
  // 204 → kDeleted (also when already gone), 400 JobStillRunningException → kBusy.
  DeleteOutcome delete_runner(int64_t runner_id);

  // The service's base URL (discovering first if need be): the queue calls use it too.
  std::string service_url() { return auth_.connection().base_url; }
  ActionsCaller& caller() { return caller_; }
  long requests_sent() const { return requests_sent_.load(); }

 private:
  // `path` starts with "/_apis/"; sent with the admin token, once more after a 401.
  GithubReply call(const std::string& operation, const std::string& method, const std::string& path,
                   const std::string& body = "");

  ActionsCaller& caller_;
  ActionsServiceAuth& auth_;
  std::atomic<long> requests_sent_{0};
};

}  // namespace runpool::github
