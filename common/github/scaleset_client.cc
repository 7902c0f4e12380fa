#include "common/github/scaleset_client.h"

#include <stdexcept>

#include "common/github/scaleset_json.h"
#include "common/json.h"

namespace runpool::github {
namespace {

const std::string kScaleSetsPath = "/_apis/runtime/runnerscalesets";
const std::string kAgentsPath = "/_apis/distributedtask/pools/0/agents";

// {count, value:[x]}: nullopt for none, the one, or an error for several.
template <typename T>
std::optional<T> at_most_one(const std::string& operation, const GithubReply& reply,
                             T (*parse)(const Json::Value&, const std::string&)) {
  auto one = [&](const Json::Value& doc, const std::string& what) -> std::optional<T> {
    const Json::Value& values = list_values(doc, what);
    if (values.empty()) return std::nullopt;
    if (values.size() > 1) throw JsonError(what + ": " + std::to_string(values.size()) + " matches, expected one");
    return parse(values[0], what + " value[0]");
  };
  return parse_actions_reply(operation, reply, one);
}

std::string set_path(int64_t id) { return kScaleSetsPath + "/" + std::to_string(id); }

}  // namespace

ScaleSetClient::ScaleSetClient(ActionsCaller& caller, ActionsServiceAuth& auth) : caller_(caller), auth_(auth) {}

GithubReply ScaleSetClient::call(const std::string& operation, const std::string& method, const std::string& path,
                                 const std::string& body) {
  auto send = [&] {
    ActionsServiceConnection c = auth_.connection();
    ActionsRequest request;
    request.method = method;
    request.url = with_api_version(c.base_url + path);
    request.authorization = Secret("Bearer " + c.admin_token.reveal());
    request.body = body;
    GithubReply reply = caller_.send(operation, request);
    requests_sent_ += reply.attempts;
    return std::make_pair(reply, c.admin_token);
  };
  auto [reply, token] = send();
  if (reply.status() == 401 && auth_.invalidate(token)) reply = send().first;
  return reply;
}

std::optional<RunnerGroup> ScaleSetClient::get_runner_group(const std::string& name) {
  const std::string op = "GetRunnerGroup";
  if (name.empty()) throw std::invalid_argument(op + ": empty runner group name");
  GithubReply reply = call(op, "GET", "/_apis/runtime/runnergroups/?groupName=" + url_encode(name));
  if (!reply.ok()) throw_actions_error(op, reply);
  return at_most_one<RunnerGroup>(op, reply, parse_runner_group);
}

std::optional<ScaleSet> ScaleSetClient::get_scale_set(int64_t runner_group_id, const std::string& name) {
  const std::string op = "GetScaleSet";
  if (name.empty()) throw std::invalid_argument(op + ": empty scale set name");
  GithubReply reply = call(op, "GET", kScaleSetsPath + "?runnerGroupId=" + std::to_string(runner_group_id) +
                                          "&name=" + url_encode(name));
  if (!reply.ok()) throw_actions_error(op, reply);
  return at_most_one<ScaleSet>(op, reply, parse_scale_set);
}

std::optional<ScaleSet> ScaleSetClient::get_scale_set_by_id(int64_t id) {
  const std::string op = "GetScaleSetById";
  GithubReply reply = call(op, "GET", set_path(id));
  if (reply.status() == 404) return std::nullopt;
  if (!reply.ok()) throw_actions_error(op, reply);
  return parse_actions_reply(op, reply, parse_scale_set);
}

ScaleSet ScaleSetClient::create_scale_set(const ScaleSetSpec& spec) {
  const std::string op = "CreateScaleSet";
  GithubReply reply = call(op, "POST", kScaleSetsPath, write_json(scale_set_spec_json(spec)));
  if (!reply.ok()) throw_actions_error(op, reply);
  return parse_actions_reply(op, reply, parse_scale_set);
}

ScaleSet ScaleSetClient::update_scale_set(int64_t id, const ScaleSetUpdate& update) {
  const std::string op = "UpdateScaleSet";
  GithubReply reply = call(op, "PATCH", set_path(id), write_json(scale_set_update_json(update)));
  if (!reply.ok()) throw_actions_error(op, reply);
  return parse_actions_reply(op, reply, parse_scale_set);
}

DeleteOutcome ScaleSetClient::delete_scale_set(int64_t id) {
  const std::string op = "DeleteScaleSet";
  GithubReply reply = call(op, "DELETE", set_path(id));
  if (reply.ok()) return DeleteOutcome::kDeleted;
  if (reply.status() == 404) return DeleteOutcome::kAlreadyGone;
  if (actions_error_from(op, reply.http).is("JobStillRunningException")) return DeleteOutcome::kBusy;
  throw_actions_error(op, reply);
}

MessageSessionInfo ScaleSetClient::create_session(int64_t scale_set_id, const std::string& owner_name) {
  const std::string op = "CreateMessageSession";
  Json::Value body(Json::objectValue);
  body["ownerName"] = owner_name;
  GithubReply reply = call(op, "POST", set_path(scale_set_id) + "/sessions", write_json(body));
  if (!reply.ok()) throw_actions_error(op, reply);
  return parse_actions_reply(op, reply, parse_message_session);
}

MessageSessionInfo ScaleSetClient::refresh_session(int64_t scale_set_id, const std::string& session_id) {
  const std::string op = "RefreshMessageSession";
  GithubReply reply = call(op, "PATCH", set_path(scale_set_id) + "/sessions/" + url_encode(session_id));
  // Whatever the 404 is called (GitHub was reported to answer RunnerAdminException "… session ID
  // that doesn't exist"), the session is gone, unless the set is.
  if (reply.status() == 404) {
    ActionsServiceError e = actions_error_from(op, reply.http);
    if (!e.is("RunnerScaleSetNotFoundException")) throw SessionExpiredError(e);
  }
  if (!reply.ok()) throw_actions_error(op, reply);
  return parse_actions_reply(op, reply, parse_message_session);
}

DeleteOutcome ScaleSetClient::delete_session(int64_t scale_set_id, const std::string& session_id) {
  const std::string op = "DeleteMessageSession";
  GithubReply reply = call(op, "DELETE", set_path(scale_set_id) + "/sessions/" + url_encode(session_id));
  if (reply.ok()) return DeleteOutcome::kDeleted;
  if (actions_error_from(op, reply.http).is("RunnerScaleSetSessionExpiredException")) {
    return DeleteOutcome::kAlreadyGone;
  }
  throw_actions_error(op, reply);
}

ScaleSetJitConfig ScaleSetClient::generate_jit_config(int64_t scale_set_id, const std::string& runner_name,
                                                      const std::string& work_folder) {
  const std::string op = "GenerateScaleSetJitConfig";
  if (runner_name.empty()) throw std::invalid_argument(op + ": the runner name is empty");
  Json::Value body(Json::objectValue);
  body["name"] = runner_name;
  body["workFolder"] = work_folder;
  GithubReply reply = call(op, "POST", set_path(scale_set_id) + "/generatejitconfig", write_json(body));
  if (!reply.ok()) throw_actions_error(op, reply);
  return parse_actions_reply(op, reply, parse_scale_set_jit_config);
}

std::optional<ScaleSetRunner> ScaleSetClient::get_runner(int64_t runner_id) {
  const std::string op = "GetScaleSetRunner";
  GithubReply reply = call(op, "GET", kAgentsPath + "/" + std::to_string(runner_id));
  if (reply.status() == 404) return std::nullopt;
  if (!reply.ok()) throw_actions_error(op, reply);
  return parse_actions_reply(op, reply, parse_scale_set_runner);
}

std::optional<ScaleSetRunner> ScaleSetClient::get_runner_by_name(const std::string& name) {
  const std::string op = "GetScaleSetRunnerByName";
  if (name.empty()) throw std::invalid_argument(op + ": empty runner name");
  GithubReply reply = call(op, "GET", kAgentsPath + "?agentName=" + url_encode(name));
  if (!reply.ok()) throw_actions_error(op, reply);
  return at_most_one<ScaleSetRunner>(op, reply, parse_scale_set_runner);
}

DeleteOutcome ScaleSetClient::delete_runner(int64_t runner_id) {
  const std::string op = "DeleteScaleSetRunner";
  GithubReply reply = call(op, "DELETE", kAgentsPath + "/" + std::to_string(runner_id));
  if (reply.ok()) return DeleteOutcome::kDeleted;
  if (reply.status() == 404) return DeleteOutcome::kAlreadyGone;
  if (actions_error_from(op, reply.http).is("JobStillRunningException")) return DeleteOutcome::kBusy;
  throw_actions_error(op, reply);
}

}  // namespace runpool::github
