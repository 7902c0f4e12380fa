#include "common/github/message_session.h"

#include <stdexcept>

#include <spdlog/spdlog.h>

#include "common/github/scaleset_json.h"
#include "common/json.h"

namespace runpool::github {
namespace {

// `url` with `suffix` appended to its path, its query kept.
std::string append_to_path(const std::string& url, const std::string& suffix) {
  size_t query = url.find('?');
  if (query == std::string::npos) return url + suffix;
  return url.substr(0, query) + suffix + url.substr(query);
}

}  // namespace

MessageSession::MessageSession(ScaleSetClient& client, int64_t scale_set_id, const std::string& owner_name,
                               ActionsCaller* queue_caller)
    : client_(client), queue_caller_(queue_caller ? *queue_caller : client.caller()), scale_set_id_(scale_set_id),
      info_(client.create_session(scale_set_id, owner_name)) {
  spdlog::debug("scale set {}: message session {} opened", scale_set_id_, info_.session_id);
}

MessageSessionInfo MessageSession::info() const {
  std::lock_guard<std::mutex> lock(mu_);
  return info_;
}

int MessageSession::refreshes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refreshes_;
}

void MessageSession::refresh() {
  std::string id = info().session_id;
  MessageSessionInfo fresh = client_.refresh_session(scale_set_id_, id);
  std::lock_guard<std::mutex> lock(mu_);
  info_ = std::move(fresh);
  ++refreshes_;
}

DeleteOutcome MessageSession::close() { return client_.delete_session(scale_set_id_, info().session_id); }

GithubReply MessageSession::queue_call(const std::string& operation, const std::string& method,
                                       const std::string& url, const std::string& body, bool long_poll,
                                       std::vector<std::pair<std::string, std::string>> headers) {
  auto send = [&](const Secret& token) {
    ActionsRequest request;
    request.method = method;
    request.url = url;
    request.authorization = Secret("Bearer " + token.reveal());
    request.headers = headers;
    request.body = body;
    request.long_poll = long_poll;
    return queue_caller_.send(operation, request);
  };
  Secret token = info().message_queue_token;
  GithubReply reply = send(token);
  if (reply.status() != 401) return reply;
  spdlog::info("scale set {}: the queue token was refused; refreshing the session", scale_set_id_);
  if (info().message_queue_token == token) refresh();  // else another call refreshed it already
  return send(info().message_queue_token);
}

std::optional<ScaleSetMessage> MessageSession::get_message(int64_t last_message_id, int max_capacity) {
  const std::string op = "GetMessage";
  if (max_capacity < 0) throw std::invalid_argument(op + ": max_capacity must be >= 0");
  std::string url = info().message_queue_url;
  if (last_message_id > 0) {
    url += (url.find('?') == std::string::npos ? "?" : "&") + std::string("lastMessageId=") +
           std::to_string(last_message_id);
  }
  GithubReply reply = queue_call(op, "GET", url, "", /*long_poll=*/true,
                                 {{"Accept", std::string("application/json; api-version=") + kActionsApiVersion},
                                  {"X-ScaleSetMaxCapacity", std::to_string(max_capacity)}});
  if (reply.status() == 202) return std::nullopt;
  if (reply.status() != 200) throw_actions_error(op, reply);
  return parse_actions_reply(op, reply, parse_scale_set_message);
}

void MessageSession::delete_message(int64_t message_id) {
  const std::string op = "DeleteMessage";
  std::string url = append_to_path(info().message_queue_url, "/" + std::to_string(message_id));
  GithubReply reply = queue_call(op, "DELETE", url, "", false, {{"Content-Type", "application/json"}});
  if (!reply.ok()) throw_actions_error(op, reply);
}

std::vector<int64_t> MessageSession::acquire_jobs(const std::vector<int64_t>& runner_request_ids) {
  const std::string op = "AcquireJobs";
  if (runner_request_ids.empty()) return {};
  Json::Value body(Json::arrayValue);
  for (int64_t id : runner_request_ids) body.append(static_cast<Json::Int64>(id));
  std::string url = with_api_version(client_.service_url() + "/_apis/runtime/runnerscalesets/" +
                                     std::to_string(scale_set_id_) + "/acquirejobs");
  GithubReply reply = queue_call(op, "POST", url, write_json(body), false, {});
  if (!reply.ok()) throw_actions_error(op, reply);
  return parse_actions_reply(op, reply, parse_acquired_jobs);
}

}  // namespace runpool::github
