// The self-hosted runner API for one owner scope (a repository or an organization): registration
// and remove tokens, JIT configs, runners (paginated listing, get, delete), labels, downloads.
// Every call authenticates through a TokenSource (a 401 to a cached installation token refetches
// it once) and sends through a GithubCaller (retries, rate limits). Answers a caller must branch
// on are values (get → nullopt on 404, delete → DeleteOutcome); other non-2xx answers, and
// malformed bodies, throw GithubError — never with a token in the message.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include <json/json.h>

#include "common/github/auth.h"
#include "common/github/endpoint.h"
#include "common/github/github_caller.h"
#include "common/github/github_error.h"
#include "common/github/runner.h"
#include "common/github/workflow_run.h"

namespace runpool::github {

class GithubClient {
 public:
  // `caller` and `auth` must outlive the client; both may be shared with other clients.
  GithubClient(GithubCaller& caller, TokenSource& auth, OwnerScope scope);

  const OwnerScope& scope() const { return scope_; }

  RunnerToken create_registration_token();
  RunnerToken create_remove_token();

  // A taken name (409, or 422 "already exists") throws RunnerNameTakenError; empty name or labels,
  // or more than 100 labels, throw std::invalid_argument before any request.
  JitConfig generate_jit_config(const JitConfigRequest& request);

  // Every runner of the scope, following Link rel="next" for at most settings().max_pages pages
  // (more throws GithubError rather than return a silently partial list). With `name`, only that
  // runner (GitHub's ?name= filter, re-checked here case-insensitively for servers without it).
  // A runner seen on two pages (the list shifted while paging) is listed once.
  std::vector<Runner> list_runners(const std::optional<std::string>& name = std::nullopt);

  // nullopt on 404. GitHub also answers 404 when the token cannot see the scope at all.
  std::optional<Runner> get_runner(int64_t runner_id);

  // 204 → kDeleted, 404 → kAlreadyGone, 422 (running a job) → kBusy.
  DeleteOutcome delete_runner(int64_t runner_id);

  // Each returns the runner's labels after the call.
  std::vector<RunnerLabel> list_labels(int64_t runner_id);
  std::vector<RunnerLabel> add_labels(int64_t runner_id, const std::vector<std::string>& labels);
  std::vector<RunnerLabel> set_labels(int64_t runner_id, const std::vector<std::string>& labels);
  std::vector<RunnerLabel> remove_label(int64_t runner_id, const std::string& label);  // 404: not on it
  std::vector<RunnerLabel> remove_all_labels(int64_t runner_id);  // custom ones; read-only stay

  std::vector<RunnerDownload> list_downloads();

  // A repository's ("owner/name") workflow runs whose status is `status` (GitHub's filter, e.g.
  // "queued"), newest first, every page (at most settings().max_pages); and a run's jobs, each
  // name's latest execution (filter=latest). Outside the client's owner scope: any repository the
  // token can read (Actions: read). std::invalid_argument for a repository not "owner/name".
  std::vector<WorkflowRun> list_workflow_runs(const std::string& repository, const std::string& status);
  std::vector<WorkflowJob> list_run_jobs(const std::string& repository, int64_t run_id);
  // "Re-run a job and its dependent jobs in a workflow run" (POST …/actions/jobs/{id}/rerun): 201
  // → returns; any other answer throws GithubError (403: the run is not over, too old, or may not
  // be re-run). A POST retried after a lost 201 finds the run going again and gets 403, so a
  // retry never re-runs twice (the caller can tell by the run's jobs: controller/spot_rerun.cc).
  void rerun_job(const std::string& repository, int64_t job_id);

  // HTTP requests this client sent, retries and 401 re-sends included (token fetches by an App
  // token source are counted by the caller, not here).
  long requests_sent() const { return requests_sent_.load(); }

 private:
  // Sends with a token from `auth_`, re-sending once with a fresh one after a 401 the token
  // source can do something about.
  GithubReply call(const std::string& operation, const std::string& method, const std::string& target,
                   const std::string& body = "");
  std::vector<RunnerLabel> labels_call(const std::string& operation, const std::string& method, int64_t runner_id,
                                       const std::string& suffix, const std::string& body);
  std::string runner_path(int64_t runner_id) const;
  template <typename Item, typename Parse>
  std::vector<Item> all_pages(const std::string& op, std::string target, Parse parse);

  GithubCaller& caller_;
  TokenSource& auth_;
  OwnerScope scope_;
  std::atomic<long> requests_sent_{0};
};

}  // namespace runpool::github
