#include "common/github/github_client.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "common/github/link_header.h"
#include "common/github/runner_json.h"
#include "common/json.h"
#include "common/text.h"

namespace runpool::github {
namespace {

// Turns a body that is not what the API promises into GithubError (jsoncpp's own exceptions
// included: a number too large for int64 must not escape as a foreign type).
template <typename Fn>
auto parse_as(const std::string& operation, const GithubReply& reply, Fn fn) {
  try {
    return fn(parse_body(operation, reply.http), "GitHub " + operation + " response");
  } catch (const JsonError& e) {
    throw GithubError(operation, reply.status(), e.what());
  } catch (const Json::Exception& e) {
    throw GithubError(operation, reply.status(), std::string("unreadable response: ") + e.what());
  }
}

Json::Value labels_body(const std::vector<std::string>& labels) {
  Json::Value body(Json::objectValue);
  body["labels"] = Json::Value(Json::arrayValue);
  for (const std::string& l : labels) body["labels"].append(l);
  return body;
}

void check_labels(const std::vector<std::string>& labels, size_t min, const char* what) {
  if (labels.size() < min || labels.size() > 100) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(min) + " to 100 labels are needed, got " +
                                std::to_string(labels.size()));
  }
  for (const std::string& l : labels) {
    if (l.empty()) throw std::invalid_argument(std::string(what) + ": empty label");
  }
}

std::string repository_path(const std::string& repository) {
  size_t slash = repository.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == repository.size() ||
      repository.find('/', slash + 1) != std::string::npos) {
    throw std::invalid_argument("'" + repository.substr(0, 200) + "' is not a repository (owner/name)");
  }
  return "/repos/" + url_encode(repository.substr(0, slash)) + "/" + url_encode(repository.substr(slash + 1));
}

}  // namespace

GithubClient::GithubClient(GithubCaller& caller, TokenSource& auth, OwnerScope scope)
    : caller_(caller), auth_(auth), scope_(std::move(scope)) {}

std::string GithubClient::runner_path(int64_t runner_id) const {
  return scope_.runners_path() + "/" + std::to_string(runner_id);
}

GithubReply GithubClient::call(const std::string& operation, const std::string& method, const std::string& target,
                               const std::string& body) {
  Secret token = auth_.token();
  GithubReply reply = caller_.send(operation, method, target, token, body);
  requests_sent_ += reply.attempts;
  if (reply.status() == 401 && auth_.invalidate(token)) {
    token = auth_.token();
    reply = caller_.send(operation, method, target, token, body);
    requests_sent_ += reply.attempts;
  }
  return reply;
}

RunnerToken GithubClient::create_registration_token() {
  const std::string op = "CreateRegistrationToken";
  GithubReply reply = call(op, "POST", scope_.runners_path() + "/registration-token");
  if (!reply.ok()) throw error_from(op, reply.http);
  return parse_as(op, reply, parse_runner_token);
}

RunnerToken GithubClient::create_remove_token() {
  const std::string op = "CreateRemoveToken";
  GithubReply reply = call(op, "POST", scope_.runners_path() + "/remove-token");
  if (!reply.ok()) throw error_from(op, reply.http);
  return parse_as(op, reply, parse_runner_token);
}

JitConfig GithubClient::generate_jit_config(const JitConfigRequest& request) {
  const std::string op = "GenerateJitConfig";
  if (request.name.empty()) throw std::invalid_argument(op + ": the runner name is empty");
  check_labels(request.labels, 1, "GenerateJitConfig");
  Json::Value body(Json::objectValue);
  body["name"] = request.name;
  body["runner_group_id"] = static_cast<Json::Int64>(request.runner_group_id);
  body["labels"] = labels_body(request.labels)["labels"];
  if (!request.work_folder.empty()) body["work_folder"] = request.work_folder;

  GithubReply reply = call(op, "POST", scope_.runners_path() + "/generate-jitconfig", write_json(body));
  if (!reply.ok()) {
    GithubError e = error_from(op, reply.http);
    bool taken = reply.status() == 409 ||
                 (reply.status() == 422 && text::lower(e.message()).find("already exists") != std::string::npos);
    if (taken) throw RunnerNameTakenError(e, reply.attempts > 1);
    throw e;
  }
  return parse_as(op, reply, parse_jit_config);
}

std::vector<Runner> GithubClient::list_runners(const std::optional<std::string>& name) {
  const std::string op = "ListRunners";
  const GithubSettings& s = caller_.settings();
  std::string target = scope_.runners_path() + "?per_page=" + std::to_string(s.per_page);
  if (name) target += "&name=" + url_encode(*name);

  std::vector<Runner> all;
  std::set<int64_t> seen;
  for (int page = 1;; ++page) {
    if (page > s.max_pages) {
      throw GithubError(op, 0, "more than " + std::to_string(s.max_pages) + " pages of runners; not listing a part");
    }
    GithubReply reply = call(op, "GET", target);
    if (!reply.ok()) throw error_from(op, reply.http);
    for (Runner& r : parse_as(op, reply, parse_runner_page)) {
      if (name && text::lower(r.name) != text::lower(*name)) continue;
      if (seen.insert(r.id).second) all.push_back(std::move(r));
    }
    auto next = next_link(reply.http.header("link"));
    if (!next) break;
    target = *next;
  }
  return all;
}

std::optional<Runner> GithubClient::get_runner(int64_t runner_id) {
  const std::string op = "GetRunner";
  GithubReply reply = call(op, "GET", runner_path(runner_id));
  if (reply.status() == 404) return std::nullopt;
  if (!reply.ok()) throw error_from(op, reply.http);
  return parse_as(op, reply, parse_runner);
}

DeleteOutcome GithubClient::delete_runner(int64_t runner_id) {
  const std::string op = "DeleteRunner";
  GithubReply reply = call(op, "DELETE", runner_path(runner_id));
  if (reply.ok()) return DeleteOutcome::kDeleted;
  if (reply.status() == 404) return DeleteOutcome::kAlreadyGone;
  if (reply.status() == 422) {
    spdlog::debug("GitHub {}: runner {} is busy: {}", op, runner_id, error_from(op, reply.http).message());
    return DeleteOutcome::kBusy;
  }
  throw error_from(op, reply.http);
}

std::vector<RunnerLabel> GithubClient::labels_call(const std::string& operation, const std::string& method,
                                                   int64_t runner_id, const std::string& suffix,
                                                   const std::string& body) {
  GithubReply reply = call(operation, method, runner_path(runner_id) + "/labels" + suffix, body);
  if (!reply.ok()) throw error_from(operation, reply.http);
  return parse_as(operation, reply, parse_label_list);
}

std::vector<RunnerLabel> GithubClient::list_labels(int64_t runner_id) {
  return labels_call("ListRunnerLabels", "GET", runner_id, "", "");
}

std::vector<RunnerLabel> GithubClient::add_labels(int64_t runner_id, const std::vector<std::string>& labels) {
  check_labels(labels, 1, "AddRunnerLabels");
  return labels_call("AddRunnerLabels", "POST", runner_id, "", write_json(labels_body(labels)));
}

std::vector<RunnerLabel> GithubClient::set_labels(int64_t runner_id, const std::vector<std::string>& labels) {
  check_labels(labels, 0, "SetRunnerLabels");
  return labels_call("SetRunnerLabels", "PUT", runner_id, "", write_json(labels_body(labels)));
}

std::vector<RunnerLabel> GithubClient::remove_label(int64_t runner_id, const std::string& label) {
  if (label.empty()) throw std::invalid_argument("RemoveRunnerLabel: empty label");
  return labels_call("RemoveRunnerLabel", "DELETE", runner_id, "/" + url_encode(label), "");
}

std::vector<RunnerLabel> GithubClient::remove_all_labels(int64_t runner_id) {
  return labels_call("RemoveAllRunnerLabels", "DELETE", runner_id, "", "");
}

std::vector<RunnerDownload> GithubClient::list_downloads() {
  const std::string op = "ListRunnerDownloads";
  GithubReply reply = call(op, "GET", scope_.runners_path() + "/downloads");
  if (!reply.ok()) throw error_from(op, reply.http);
  return parse_as(op, reply, parse_downloads);
}

// Every page of a listing, following Link rel="next".
template <typename Item, typename Parse>
std::vector<Item> GithubClient::all_pages(const std::string& op, std::string target, Parse parse) {
  std::vector<Item> all;
  for (int page = 1;; ++page) {
    if (page > caller_.settings().max_pages) {
      throw GithubError(op, 0, "more than " + std::to_string(caller_.settings().max_pages) + " pages; not listing a part");
    }
    GithubReply reply = call(op, "GET", target);
    if (!reply.ok()) throw error_from(op, reply.http);
    for (Item& i : parse_as(op, reply, parse)) all.push_back(std::move(i));
    auto next = next_link(reply.http.header("link"));
    if (!next) break;
    target = *next;
  }
  return all;
}

std::vector<WorkflowRun> GithubClient::list_workflow_runs(const std::string& repository, const std::string& status) {
  std::string target = repository_path(repository) + "/actions/runs?status=" + url_encode(status) +
                       "&per_page=" + std::to_string(caller_.settings().per_page);
  return all_pages<WorkflowRun>("ListWorkflowRuns", target, parse_workflow_run_page);
}

std::vector<WorkflowJob> GithubClient::list_run_jobs(const std::string& repository, int64_t run_id) {
  std::string target = repository_path(repository) + "/actions/runs/" + std::to_string(run_id) +
                       "/jobs?filter=latest&per_page=" + std::to_string(caller_.settings().per_page);
  return all_pages<WorkflowJob>("ListJobsForWorkflowRun", target, parse_workflow_job_page);
}

void GithubClient::rerun_job(const std::string& repository, int64_t job_id) {
  const std::string op = "ReRunJobForWorkflowRun";
  GithubReply reply = call(op, "POST", repository_path(repository) + "/actions/jobs/" + std::to_string(job_id) + "/rerun");
  if (reply.status() != 201) throw error_from(op, reply.http);
}

}  // namespace runpool::github
