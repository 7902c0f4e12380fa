// GitHub as the controller uses it: registration and remove tokens for the pool's owner scope, the
// URL runners register with, the runner list (for refresh's ghost sweep), and the workflow runs
// of the repositories it provisioned for (refresh's re-run check). Behind an interface
// for tests; GithubRunners is the real one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/github/github_error.h"
#include "common/github/runner.h"
#include "common/github/workflow_run.h"
#include "common/secret.h"

namespace runpool::controller {

class Runners {
 public:
  virtual ~Runners() = default;
  virtual Secret registration_token() = 0;
  virtual Secret remove_token() = 0;
  // https://github.com/owner[/repo] (or the GHES / local server's equivalent).
  virtual std::string registration_url() = 0;
  virtual std::vector<github::Runner> list() = 0;
  virtual github::DeleteOutcome remove(int64_t runner_id) = 0;
  // Removes every custom label of the runner (DELETE …/runners/{id}/labels). Registered with
  // --no-default-labels, it then matches no job's runs-on: what a drain does first, as the agent
  // (holding only a remove token) cannot. False when GitHub no longer knows the runner.
  virtual bool remove_labels(int64_t runner_id) = 0;
  // One runner by id (scale-down's last-chance check); nullopt when GitHub does not know it. The
  // default looks through list(); GithubRunners asks for the one runner.
  // HTTP requests sent to GitHub so far — each retry and redirect hop counts, as GithubCaller
  // counts them — for one of the GitHub client's operations ("ListRunners", "GetRunner",
  // "CreateRemoveToken", "DeleteRunner", …), or for all of them ("": App installation tokens too).
  virtual long requests_sent(const std::string& operation) = 0;
  // A repository's ("owner/name") workflow runs of a status, and a run's latest jobs: refresh's
  // re-run check (common/pool/rerun_plan.h).
  virtual std::vector<github::WorkflowRun> workflow_runs(const std::string& repository, const std::string& status) = 0;
  virtual std::vector<github::WorkflowJob> run_jobs(const std::string& repository, int64_t run_id) = 0;
  // Re-runs a job lost to a spot interruption (common/pool/spot_rerun.h): returns on GitHub's 201,
  // throws github::GithubError otherwise. Only the real client and the fakes of tests that re-run
  // implement it; the others refuse every call.
  virtual void rerun_job(const std::string& repository, int64_t job_id) {
    throw github::GithubError("ReRunJobForWorkflowRun", 0, "not offered by this GitHub client (" + repository + ", job " +
                                                                std::to_string(job_id) + ")");
  }
  virtual std::optional<github::Runner> get(int64_t runner_id) {
    for (auto& r : list()) {
      if (r.id == runner_id) return r;
    }
    return std::nullopt;
  }
  // The runner GitHub lists under exactly this name (a drain's check that its runner is gone);
  // nullopt when none. The default looks through list(); GithubRunners asks for the name.
  virtual std::optional<github::Runner> find(const std::string& name) {
    for (auto& r : list()) {
      if (r.name == name) return r;
    }
    return std::nullopt;
  }
};

}  // namespace runpool::controller
