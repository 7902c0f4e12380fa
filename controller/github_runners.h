// Runners on GitHub for the pool's owner scope. The GitHub client (and its PAT or App token
// source) is built on first use, so commands that never talk to GitHub need no credentials.
#pragma once

#include <memory>
#include <mutex>

#include "common/clock.h"
#include "common/github/auth.h"
#include "common/github/github_client.h"
#include "common/http.h"
#include "controller/runners.h"
#include "controller/settings.h"

namespace runpool::controller {

class GithubRunners final : public Runners {
 public:
  GithubRunners(const Settings& settings, HttpClient& http, Clock& clock);
  ~GithubRunners() override;

  Secret registration_token() override;
  Secret remove_token() override;
  std::string registration_url() override;
  std::vector<github::Runner> list() override;
  github::DeleteOutcome remove(int64_t runner_id) override;
  bool remove_labels(int64_t runner_id) override;
  std::optional<github::Runner> get(int64_t runner_id) override;
  std::optional<github::Runner> find(const std::string& name) override;
  long requests_sent(const std::string& operation) override;
  std::vector<github::WorkflowRun> workflow_runs(const std::string& repository, const std::string& status) override;
  std::vector<github::WorkflowJob> run_jobs(const std::string& repository, int64_t run_id) override;
  void rerun_job(const std::string& repository, int64_t job_id) override;

  // The REST client, built on first use (serve's scale-set discovery asks it for registration
  // tokens). Throws ConfigError when GitHub is not configured.
  github::GithubClient& client();

 private:

  const Settings& settings_;
  HttpClient& http_;
  Clock& clock_;
  std::mutex mu_;
  std::unique_ptr<github::GithubCaller> caller_;
  std::unique_ptr<github::TokenSource> auth_;
  std::unique_ptr<github::GithubClient> client_;
};

}  // namespace runpool::controller
