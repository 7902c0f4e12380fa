#include "controller/github_runners.h"

namespace runpool::controller {

GithubRunners::GithubRunners(const Settings& settings, HttpClient& http, Clock& clock)
    : settings_(settings), http_(http), clock_(clock) {}

GithubRunners::~GithubRunners() = default;

github::GithubClient& GithubRunners::client() {
  std::lock_guard<std::mutex> lock(mu_);
  if (client_) return *client_;
  require_github(settings_);
  github::GithubSettings gs;
  gs.api_base = settings_.github_api_url;
  gs.timeout = settings_.github_timeout;
  gs.max_pages = settings_.github_max_pages;
  caller_ = std::make_unique<github::GithubCaller>(http_, clock_, gs);
  github::OwnerScope scope = github::OwnerScope::parse(settings_.github_owner);
  if (!settings_.github_token.empty()) {
    auth_ = std::make_unique<github::StaticTokenSource>(settings_.github_token);
  } else {
    github::GithubAppConfig app;
    app.issuer = settings_.github_app_id;
    try {
      app.private_key_pem = settings_.github_app_private_key.empty()
                                ? github::load_private_key(settings_.github_app_private_key_file)
                                : settings_.github_app_private_key;
    } catch (const std::exception& e) {
      throw ConfigError(std::string("github_app_private_key_file: ") + e.what());
    }
    app.installation_id = settings_.github_app_installation_id;
    if (scope.is_enterprise()) {  // load_settings refuses this too; a Settings built in code may not have
      throw ConfigError("github_app_id: GitHub Apps cannot manage an enterprise's runners; give github_token, a "
                        "classic personal access token with the manage_runners:enterprise scope");
    }
    try {
      auth_ = std::make_unique<github::AppInstallationTokenSource>(*caller_, scope, app);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(std::string("github_app_private_key: ") + e.what());
    }
  }
  client_ = std::make_unique<github::GithubClient>(*caller_, *auth_, scope);
  return *client_;
}

Secret GithubRunners::registration_token() { return client().create_registration_token().token; }
Secret GithubRunners::remove_token() { return client().create_remove_token().token; }

// config.sh --url: https://github.com/owner/repo, …/org or …/enterprises/slug.
std::string GithubRunners::registration_url() {
  require_github(settings_);
  return settings_.github_server_url + "/" + github::OwnerScope::parse(settings_.github_owner).web_path();
}

std::vector<github::Runner> GithubRunners::list() { return client().list_runners(); }
github::DeleteOutcome GithubRunners::remove(int64_t runner_id) { return client().delete_runner(runner_id); }
std::optional<github::Runner> GithubRunners::get(int64_t runner_id) { return client().get_runner(runner_id); }
std::optional<github::Runner> GithubRunners::find(const std::string& name) {
  // GitHub filters by name without regard to case; only the exact name is the assignment's.
  for (auto& r : client().list_runners(name)) {
    if (r.name == name) return r;
  }
  return std::nullopt;
}

bool GithubRunners::remove_labels(int64_t runner_id) {
  try {
    client().remove_all_labels(runner_id);
    return true;
  } catch (const github::GithubError& e) {
    if (e.status() == 404) return false;
    throw;
  }
}

long GithubRunners::requests_sent(const std::string& operation) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!caller_) return 0;  // GitHub not used yet
  return operation.empty() ? caller_->requests_sent() : caller_->requests_for(operation);
}

std::vector<github::WorkflowRun> GithubRunners::workflow_runs(const std::string& repository, const std::string& status) {
  return client().list_workflow_runs(repository, status);
}

std::vector<github::WorkflowJob> GithubRunners::run_jobs(const std::string& repository, int64_t run_id) {
  return client().list_run_jobs(repository, run_id);
}

void GithubRunners::rerun_job(const std::string& repository, int64_t job_id) { client().rerun_job(repository, job_id); }

}  // namespace runpool::controller
