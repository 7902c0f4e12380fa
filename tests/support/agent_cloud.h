// Test harness for the agent's integration tests: real instances launched through the local
// cloud's EC2 stand-in, running the real runpool-agent from the build tree (user-data rendered from
// cloud-init/user-data.sh.in), a state table on dynalite written as the controller would, and the
// GitHub stand-in with its job broker. Header-only: only test binaries (linked with the LocalCloud
// fixture) include it.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "agent/process.h"
#include "common/cloud_init/user_data.h"
#include "common/aws/dynamodb.h"
#include "common/aws/ec2.h"
#include "common/github/github_client.h"
#include "common/pool/dynamo_state_table.h"
#include "common/pool/runner_name.h"
#include "common/pool/transitions.h"
#include "tests/support/job_users.h"
#include "tests/support/local_cloud.h"

namespace runpool::agent::testing {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Polls `pred` every 50 ms until it holds or `timeout` passes.
inline bool eventually(const std::function<bool()>& pred, Duration timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return pred();
}

struct AgentOptions {
  // The runner build the stand-in models (tests/localcloud/runner/README.md): stock, pr4461 or
  // drain-file. The agent detects what it can do; nothing is configured.
  std::string runner_mode = "stock";
  bool spot = false;
  std::string extra_config{};  // more `key = value` lines (later lines win)
};

class AgentCloud {
 public:
  using Options = AgentOptions;

  static constexpr const char* kOwner = "agent-org";
  static constexpr const char* kRepo = "agent-repo";
  static constexpr const char* kPool = "itest";

  AgentCloud()
      : cloud_(runpool::testing::LocalCloud::shared()),
        creds_(cloud_.controller_credentials()),
        ddb_caller_(http_, creds_, system_clock(),
                    aws::ServiceSettings{"dynamodb", cloud_.dynamodb(), cloud_.region(), RetryPolicy{}, 10s}),
        ec2_caller_(ec2_http_, creds_, system_clock(),
                    aws::ServiceSettings{"ec2", cloud_.ec2(), cloud_.region(), RetryPolicy{}, 10s}),
        db_(ddb_caller_),
        ec2_(ec2_caller_),
        gh_caller_(gh_http_, system_clock(), github_settings()),
        pat_(Secret("ghp_agent_itest_" + std::to_string(getpid()))),
        gh_(gh_caller_, pat_, github::OwnerScope::parse(std::string(kOwner) + "/" + kRepo)) {
    table_name_ = "agent-itest-" + std::to_string(getpid());
    db_.create_table(pool::DynamoStateTable::create_table_request(table_name_));
    db_.wait_until_active(table_name_, 20s);
    table_ = std::make_unique<pool::DynamoStateTable>(db_, table_name_, cloud_.instance_role_id());
    Json::Value pat;
    pat["token"] = pat_.token().reveal();
    pat["owners"].append(kOwner);
    cloud_.control("POST", "/_control/github/pats", pat);
    // Quick polls so a drain or a deletion is noticed within a second.
    Json::Value gh;
    gh["pollMs"] = 1000;
    gh["sessionIdleMs"] = 3000;
    gh["sessionConflictMs"] = 4000;
    cloud_.control("POST", "/_control/github/settings", gh);

    char tmpl[] = "/tmp/agent-itest-XXXXXX";
    base_ = mkdtemp(tmpl);
    chmod(base_.c_str(), 0755);  // the runner user must reach the runner roots below
    for (const char* mode : {"stock", "pr4461", "drain-file"}) {
      fs::path t = base_ / (std::string("template-") + mode);
      fs::copy(fs::path(RUNPOOL_SOURCE_DIR) / "tests" / "localcloud" / "runner", t, fs::copy_options::recursive);
      std::ofstream(t / ".standin.json") << "{\"mode\": \"" << mode << "\"}\n";
    }
  }

  ~AgentCloud() {
    for (const auto& id : launched_) {
      try {
        ec2_.terminate_instances({id});
      } catch (const std::exception&) {
      }
    }
    for (const auto& id : launched_) {
      eventually([&] { return state_of(id) == "terminated"; }, 10s);
    }
    runpool::testing::retire_leftover_job_users(base_);
    std::error_code ec;
    fs::remove_all(base_, ec);
  }

  runpool::testing::LocalCloud& cloud() { return cloud_; }
  pool::StateTable& table() { return *table_; }
  aws::Ec2Client& ec2() { return ec2_; }
  github::GithubClient& github() { return gh_; }
  Secret github_pat() { return pat_.token(); }  // for agent-org (and its repository)
  const fs::path& base() const { return base_; }
  std::string reg_url() const { return cloud_.github_web() + "/" + kOwner + "/" + kRepo; }

  std::string agent_config(const Options& o) const {
    std::ostringstream c;
    c << "# runpool-agent, integration test\n"
      << "table = " << table_name_ << "\n"
      << "pool = " << kPool << "\n"
      << "instance_role_id = " << cloud_.instance_role_id() << "\n"
      << "region = " << cloud_.region() << "\n"
      << "endpoint_dynamodb = " << cloud_.dynamodb() << "\n"
      << "endpoint_ec2 = " << cloud_.ec2() << "\n"
      << "endpoint_sqs = " << cloud_.sqs() << "\n"
      << "runner_root = " << (base_ / "{instance_id}" / "runner").string() << "\n"
      << "runner_template = " << (base_ / ("template-" + o.runner_mode)).string() << "\n"
      << "runner_user = runpool-runner\n"
      // Each assignment's runner runs as a new job user; its files are looked for in the test's
      // tree and the shared scratch places (an instance sweeps every local filesystem).
      << "clean_sweep_roots = " << base_.string() << " /dev/shm /var/tmp\n"
      << "job_users_state = " << (base_ / "{instance_id}" / "job-users").string() << "\n"
      // One long poll of the GitHub stand-in (pollMs above).
      << "drain_poll_wait = 1s\n"
      << "heartbeat_interval = 200ms\nassignment_poll_interval = 100ms\nnotice_poll_interval = 100ms\n"
      // Tests write records directly, without runpoolctl's wake-ups: idle agents poll fast too
      // (agent_wake_test.cc sets a long idle poll to show the wake-up at work).
      << "idle_poll_interval = 100ms\n"
      << "boot_grace = 3s\ndeadline_grace = 0s\ntable_unreachable_limit = 10s\nlistener_restart_backoff = 200ms\n"
      << "listener_max_restarts = 5\ndrain_signal_timeout = 15s\nstock_idle_wait = 5s\nconfig_sh_timeout = 30s\n"
      << "cleanup_timeout = 2s\nterminate_wait = 5s\naws_timeout = 5s\n"
      << o.extra_config;
    return c.str();
  }

  // Launches one instance running the agent; waits until it runs.
  std::string launch(const Options& o = Options{}) {
    aws::RunInstancesRequest r;
    r.image_id = "ami-0123456789abcdef0";
    r.instance_type = "c7i.large";
    r.user_data = cloud_init::render_user_data(read_text(fs::path(RUNPOOL_SOURCE_DIR) / "cloud-init" / "user-data.sh.in"),
                                   agent_config(o), RUNPOOL_AGENT_BINARY);
    r.iam_instance_profile_name = "runpool-agent";
    // As the controller tags a launch (controller/launch_plan.cc); the class matches
    // write_launched_record's.
    r.tag_specifications = {
        {"instance", {{"runpool:pool", kPool}, {"runpool:table", table_name_}, {"runpool:resource-class", "small"}}}};
    r.instance_initiated_shutdown_behavior = "terminate";
    r.instance_metadata_tags = true;
    r.spot = o.spot;
    aws::RunInstancesResult result = ec2_.run_instances(r);
    if (result.instances.size() != 1) throw std::runtime_error("expected one instance");
    const std::string id = result.instances[0].instance_id;
    launched_.push_back(id);
    if (!eventually([&] { return state_of(id) == "running"; }, 10s)) throw std::runtime_error(id + " not running");
    return id;
  }

  // The record provision would write for a fresh launch: created, generation 1, label, token.
  pool::InstanceRecord write_launched_record(const std::string& id, const std::string& label,
                                             const pool::Timeouts& t = {}) {
    pool::InstanceRecord r = pool::launched_record(id, kPool, label, "small", pool::UsageClass::kOnDemand,
                                                   "c7i.large", gh_.create_registration_token().token, reg_url(),
                                                   to_epoch_ms(system_clock().now()), t);
    if (!table_->create(r)) throw std::runtime_error("record exists");
    return r;
  }

  // The same for a scale set's job: a JIT configuration instead of the registration token.
  pool::InstanceRecord write_launched_jit_record(const std::string& id, const std::string& label, const Secret& jit,
                                                 const pool::Timeouts& t = {}) {
    pool::InstanceRecord r = pool::launched_record(id, kPool, label, "small", pool::UsageClass::kOnDemand, "c7i.large",
                                                   Secret(), reg_url(), to_epoch_ms(system_clock().now()), t);
    r.jit_config = jit;
    if (!table_->create(r)) throw std::runtime_error("record exists");
    return r;
  }

  pool::InstanceRecord record(const std::string& id) {
    auto r = table_->get(id);
    if (!r) throw std::runtime_error("no record for " + id);
    return *r;
  }

  void apply(const std::string& id, const pool::Step& s) {
    if (!table_->transition(id, s.expect, s.change)) throw std::runtime_error("transition refused for " + id);
  }

  Json::Value instance(const std::string& id) { return cloud_.control("GET", "/_control/ec2/instances/" + id); }
  std::string state_of(const std::string& id) {
    try {
      return instance(id)["state"].asString();
    } catch (const std::exception&) {
      return "";
    }
  }
  std::string console(const std::string& id) {
    try {
      return cloud_.control("GET", "/_control/ec2/instances/" + id + "/console")["text"].asString();
    } catch (const std::exception& e) {
      return e.what();
    }
  }

  // Host pids of the instance's processes.
  std::vector<pid_t> pids(const std::string& id) {
    std::vector<pid_t> out;
    const Json::Value summary = instance(id);
    for (const auto& p : summary["pids"]) out.push_back(static_cast<pid_t>(p.asInt()));
    return out;
  }
  std::vector<pid_t> pids_matching(const std::string& id, const std::string& needle) {
    std::vector<pid_t> out;
    for (pid_t p : pids(id)) {
      if (process_cmdline(p).find(needle) != std::string::npos) out.push_back(p);
    }
    return out;
  }
  // The instance's processes owned by a job user (or the fixed runner user).
  std::vector<pid_t> runner_user_pids(const std::string& id) {
    auto fixed = lookup_user("runpool-runner");
    std::vector<pid_t> out;
    for (pid_t p : pids(id)) {
      struct stat st {};
      if (stat(("/proc/" + std::to_string(p)).c_str(), &st) != 0) continue;
      if ((st.st_uid >= 1000000000u && st.st_uid <= 1099999999u) || (fixed && st.st_uid == fixed->uid)) out.push_back(p);
    }
    return out;
  }

  fs::path root_of(const std::string& id) const { return base_ / id / "runner"; }

  std::vector<github::Runner> runners_named(const std::string& name) { return gh_.list_runners(name); }
  std::string runner_name(const std::string& id, int64_t generation) const {
    return pool::runner_name(kPool, id, generation);
  }

  // Queues a job for `label` through the broker, with a broker `fault` if given
  // (tests/localcloud/github/README.md); returns its id.
  int64_t queue_job(const std::string& label, int duration_ms, const std::string& run = "",
                    const std::string& fault = "") {
    Json::Value body;
    body["label"] = label;
    body["name"] = "job-" + label;
    body["durationMs"] = duration_ms;
    body["owner"] = kOwner;
    body["repo"] = kRepo;
    if (!run.empty()) body["run"] = run;
    if (!fault.empty()) body["fault"] = fault;
    return cloud_.control("POST", "/_control/github/jobs", body)["id"].asInt64();
  }
  Json::Value job(int64_t id) { return cloud_.control("GET", "/_control/github/jobs/" + std::to_string(id)); }

  // Registration → `registered` reported → running (as provision would mark it).
  void wait_registered_and_mark_running(const std::string& id, int64_t generation, Duration timeout = 30s) {
    bool ok = eventually(
        [&] {
          auto r = record(id);
          return r.generation == generation && pool::agent_reported(r, pool::AgentSignal::kRegistered);
        },
        timeout);
    if (!ok) throw std::runtime_error("no `registered` from " + id + "; console:\n" + console(id));
    apply(id, pool::mark_running(record(id), to_epoch_ms(system_clock().now()), timeouts_));
  }

  // release: draining with a remove token, then the agent's `drained`.
  bool drain(const std::string& id, Duration timeout = 40s) {
    apply(id, pool::start_drain(record(id), gh_.create_remove_token().token, to_epoch_ms(system_clock().now()),
                                timeouts_));
    const int64_t g = record(id).generation;
    return eventually(
        [&] {
          auto r = record(id);
          return r.generation == g && pool::agent_reported(r, pool::AgentSignal::kDrained);
        },
        timeout);
  }

  const pool::Timeouts& timeouts() const { return timeouts_; }

 private:
  static github::GithubSettings github_settings() {
    github::GithubSettings s;
    s.api_base = runpool::testing::LocalCloud::shared().github();
    s.user_agent = "runpool-agent-itest";
    s.retry = RetryPolicy{6, Duration{10}, Duration{200}, Duration{5s}};
    s.timeout = 10s;
    return s;
  }

  runpool::testing::LocalCloud& cloud_;
  CurlHttpClient http_, ec2_http_, gh_http_;
  aws::StaticCredentialsProvider creds_;
  aws::AwsCaller ddb_caller_, ec2_caller_;
  aws::DynamoDbClient db_;
  aws::Ec2Client ec2_;
  github::GithubCaller gh_caller_;
  github::StaticTokenSource pat_;
  github::GithubClient gh_;
  std::string table_name_;
  std::unique_ptr<pool::DynamoStateTable> table_;
  fs::path base_;
  std::vector<std::string> launched_;
  pool::Timeouts timeouts_;
};

}  // namespace runpool::agent::testing
