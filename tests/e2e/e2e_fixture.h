// The e2e harness: a pool of its own per test, driven by the real runpoolctl, whose instances run
// the real runpool-agent on the local cloud (user-data rendered from cloud-init/user-data.sh.in),
// serving jobs from the GitHub stand-in's broker with the stand-in runner (a stock build unless a
// test picks another). The
// test looks at the world through the same table, queues, EC2 and broker, and plays "the outside"
// (an operator killing an instance, a process crashing) where a test needs it.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/process.h"
#include "common/aws/ec2_query.h"
#include "common/json.h"
#include "common/pool/pool_message.h"
#include "tests/support/job_users.h"
#include "tests/support/runpoolctl_harness.h"

namespace runpool::controller::e2e {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using pool::InstanceRecord;
using pool::State;
using testing::CtlPool;
using testing::CtlProcess;
using testing::CtlResult;
using testing::describe;

inline int64_t now_ms() { return to_epoch_ms(system_clock().now()); }

// Polls `pred` every 100 ms until it holds or `timeout` passes.
inline bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return pred();
}

// The label a job of `config.sh` is never registered for: the test template's config.sh hangs
// for labels containing it (an agent stuck in registration, e.g. GitHub unreachable).
inline constexpr const char* kNeverRegisters = "never-registers";
// The label whose registration fails: the test template's config.sh exits 1 for it (its agent
// reports failed).
inline constexpr const char* kFailsRegistration = "fails-registration";

// The agent's default job uid range: each assignment's runner and jobs run as a new user from it.
inline constexpr long kJobUidFirst = 1000000000;
inline constexpr long kJobUidLast = 1099999999;
inline bool is_job_uid(long uid) { return uid >= kJobUidFirst && uid <= kJobUidLast; }

// RUNPOOL_TIME_FACTOR=f runs the suites at GitHub's real timings scaled by f, their ratios kept:
// the broker's long poll 50 s·f, job lock 10 min·f, session conflict 4 min·f, a scale set's session
// lapse 4 min·f (assumed: GitHub's is unknown) (the GitHub stand-in's `timeFactor`), the runner's
// own retries likewise, and the agent's poll wait one long poll. Unset:
// the quick CI timings (1 s polls, a 3 s lock).
inline std::optional<double> time_factor() {
  const char* v = std::getenv("RUNPOOL_TIME_FACTOR");
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const double f = std::strtod(v, &end);
  if (*end || !(f > 0 && f <= 1)) throw std::runtime_error("RUNPOOL_TIME_FACTOR must be a number in (0, 1]");
  return f;
}
// The agent's wait for a dispatch already on the runner's long poll: one poll of the broker.
inline std::string drain_poll_wait() {
  const auto f = time_factor();
  return f ? std::to_string(std::llround(50000 * *f)) + "ms" : "1s";
}

class E2eTest : public ::testing::Test {
 protected:
  // The stand-in runner build every instance runs (tests/localcloud/runner/README.md), at the
  // suite's time factor.
  void use_runner_build(const std::string& mode) {
    std::ofstream out(fs::path(base_) / "runner-template" / ".standin.json", std::ios::trunc);
    out << "{\"mode\": \"" << mode << "\"";
    if (auto f = time_factor()) out << ", \"timeFactor\": " << *f;
    out << "}\n";
  }

  void SetUp() override {
    // The runner roots live under a directory the runner user can reach; the runner template is
    // the local cloud's stand-in runner, as released (stock: no drain of its own).
    base_ = testing::make_temp_dir("runpool-e2e");
    chmod(base_.c_str(), 0755);
    const fs::path tmpl = fs::path(base_) / "runner-template";
    fs::copy(fs::path(RUNPOOL_SOURCE_DIR) / "tests" / "localcloud" / "runner", tmpl, fs::copy_options::recursive);
    // RUNPOOL_RUNNER_BUILD=drain-file|pr4461 runs a suite against another build (default stock).
    const char* build = std::getenv("RUNPOOL_RUNNER_BUILD");
    use_runner_build(build && *build ? build : "stock");
    hang_registration_for(tmpl / "config.sh", kNeverRegisters);
    fail_registration_for(tmpl / "config.sh", kFailsRegistration);
    Json::Value gh;
    gh["sessionIdleMs"] = 3000;
    if (auto f = time_factor()) {
      gh["timeFactor"] = *f;
    } else {
      gh["pollMs"] = 1000;
      gh["sessionConflictMs"] = 4000;
      gh["lockExpiryMs"] = 3000;
    }
    const Json::Value timings = cloud_.control("POST", "/_control/github/settings", gh);
    if (time_factor()) {
      std::printf("GitHub's timings at factor %g: long poll %lld ms, job lock %lld ms, session conflict %lld ms\n",
                  *time_factor(), static_cast<long long>(timings["pollMs"].asInt64()),
                  static_cast<long long>(timings["lockExpiryMs"].asInt64()),
                  static_cast<long long>(timings["sessionConflictMs"].asInt64()));
    }

    std::string extra = std::string("user_data_template = ") + RUNPOOL_SOURCE_DIR + "/cloud-init/user-data.sh.in\n" +
                        "agent_binary = " + RUNPOOL_AGENT_BINARY + "\n" +
                        "agent_runner_root = " + base_ + "/{instance_id}/runner\n" +
                        "agent_runner_template = " + tmpl.string() + "\n" +
                        "agent_runner_user = runpool-runner\n" +
                        "agent_heartbeat_interval = 500ms\n" + "agent_assignment_poll_interval = 200ms\n" +
                        "agent_extra = notice_poll_interval=500ms; boot_grace=60s; drain_signal_timeout=60s; "
                        "config_sh_timeout=60s; cleanup_timeout=2s; terminate_wait=5s; listener_restart_backoff=200ms; "
                        "job_completion_wait=5s; " +
                        clean_sweep_roots() + "; "
                        "drain_poll_wait=" + drain_poll_wait() + "\n" +
                        "provision_timeout = 120s\nrelease_timeout = 90s\nmax_heartbeat_age = 30s\n" + more_config();
    // A pool and table of its own per test: nothing of one test is claimable by the next.
    static int n = 0;
    pool_name_ = "e2e" + std::to_string(++n);
    pool_ = std::make_unique<CtlPool>(cloud_, pool_name_, "ctl-" + pool_name_, extra);
    auto init = pool_->run({"init"});
    ASSERT_EQ(init.exit_code, 0) << describe(init);
    table_ = std::make_unique<pool::DynamoStateTable>(aws_.db, pool_->table(), cloud_.instance_role_id());
  }
  void TearDown() override {
    cloud_.clear_faults();
    cloud_.control("DELETE", "/_control/ec2/capacity");
    std::vector<std::string> ids;
    for (const auto& r : records()) {
      ids.push_back(r.instance_id);
      for (pid_t p : pids_matching(r.instance_id, "runpool-agent")) kill(p, SIGCONT);  // a test may stop one
    }
    if (!ids.empty()) {
      try {
        aws_.ec2.terminate_instances(ids);
      } catch (const std::exception&) {
      }
    }
    runpool::testing::retire_leftover_job_users(base_);
    std::error_code ec;
    fs::remove_all(base_, ec);
  }

  // More runpoolctl configuration lines for a test's pool (later lines win).
  virtual std::string more_config() const { return ""; }
  // Where agents look for a job user's files when an assignment ends: the test's own tree (the
  // runner roots, where jobs work) and the machine's shared scratch places. The red-team suite
  // sweeps everywhere ("/"), as an instance does by default.
  // Each local instance keeps its job users' state in its own directory (they share one machine).
  virtual std::string clean_sweep_roots() const {
    return "clean_sweep_roots=" + base_ + " /dev/shm /var/tmp; job_users_state=" + base_ + "/{instance_id}/job-users";
  }

  // ---- runpoolctl

  CtlResult ctl(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
                std::chrono::milliseconds timeout = 180s) {
    return pool_->run(args, env, timeout);
  }
  std::unique_ptr<CtlProcess> start_ctl(const std::vector<std::string>& args,
                                        const std::map<std::string, std::string>& env = {}) {
    return pool_->start(args, env);
  }
  static std::vector<std::string> provision_args(const std::string& label, int count,
                                                 const std::vector<std::string>& more = {}) {
    std::vector<std::string> a = {"--json", "provision", "--count", std::to_string(count), "--label", label};
    if (std::find(more.begin(), more.end(), "--usage-class") == more.end()) {
      a.insert(a.end(), {"--usage-class", "on-demand"});
    }
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  // A provision expected to succeed; its JSON report.
  Json::Value provision(const std::string& label, int count, const std::vector<std::string>& more = {},
                        const std::map<std::string, std::string>& env = {}) {
    CtlResult r = ctl(provision_args(label, count, more), env);
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
    Json::Value j = parse_json(r.out.empty() ? "{}" : r.out, "provision");
    EXPECT_TRUE(j["ok"].asBool()) << r.out;
    return j;
  }
  // A release expected to succeed; its JSON report.
  Json::Value release(const std::string& label, const std::map<std::string, std::string>& env = {}) {
    CtlResult r = ctl({"--json", "release", "--wait", "--label", label}, env);
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
    return parse_json(r.out.empty() ? "{}" : r.out, "release");
  }
  // One refresh pass; its JSON report (exit code in ["exit_code"]).
  Json::Value refresh(const std::map<std::string, std::string>& env = {}) {
    CtlResult r = ctl({"--json", "refresh"}, env);
    Json::Value j = parse_json(r.out.empty() ? "{}" : r.out, "refresh");
    j["exit_code"] = r.exit_code;
    j["stderr"] = r.err;
    return j;
  }
  // The refresh action of `kind` about `subject` (instance id or runner name); null when none.
  static Json::Value action(const Json::Value& refresh, const std::string& kind, const std::string& subject) {
    for (const auto& a : refresh["actions"]) {
      if (a["action"].asString() == kind &&
          (a["instance_id"].asString() == subject || a["runner_name"].asString() == subject)) {
        return a;
      }
    }
    return Json::Value();
  }
  static std::vector<std::string> ids_of(const Json::Value& provision_report) {
    std::vector<std::string> ids;
    for (const auto& i : provision_report["instances"]) ids.push_back(i["instance_id"].asString());
    return ids;
  }

  // ---- the broker

  int64_t queue_job(const std::string& label, const std::string& name, const std::string& run = "true",
                    int duration_ms = 500) {
    Json::Value body;
    body["label"] = label;
    body["name"] = name;
    body["durationMs"] = duration_ms;
    body["owner"] = "acme";
    body["repo"] = "app";
    body["run"] = run;
    return cloud_.control("POST", "/_control/github/jobs", body)["id"].asInt64();
  }
  Json::Value job(int64_t id) { return cloud_.control("GET", "/_control/github/jobs/" + std::to_string(id)); }
  // Waits until the job is over (completed or lost); its fate.
  Json::Value finished_job(int64_t id, std::chrono::milliseconds timeout = 60s) {
    eventually(
        [&] {
          std::string s = job(id)["state"].asString();
          return s == "completed" || s == "lost";
        },
        timeout);
    return job(id);
  }
  // The instance a runner name of this pool (<pool>-<instance>-g<generation>) stands for.
  std::string instance_of_runner(const std::string& runner_name) const {
    const std::string prefix = pool_name_ + "-";
    if (runner_name.rfind(prefix, 0) != 0) return "";
    std::string rest = runner_name.substr(prefix.size());
    auto g = rest.rfind("-g");
    return g == std::string::npos ? "" : rest.substr(0, g);
  }
  // The pool's runners registered on GitHub.
  std::vector<std::string> registered_runners() {
    std::vector<std::string> out;
    // A named value: a range-for over a member of a temporary would read a destroyed object.
    const Json::Value all = cloud_.control("GET", "/_control/github/runners");
    for (const auto& r : all["runners"]) {
      if (r["name"].asString().rfind(pool_name_ + "-", 0) == 0) out.push_back(r["name"].asString());
    }
    return out;
  }

  // ---- the table, the queues, EC2

  std::vector<InstanceRecord> records() {
    std::vector<InstanceRecord> all;
    if (!table_) return all;  // SetUp failed before the table existed
    table_->scan([&](const InstanceRecord& r) { all.push_back(r); });
    return all;
  }
  InstanceRecord record(const std::string& id) {
    auto r = table_->get(id);
    if (!r) throw std::runtime_error("no record for " + id);
    return *r;
  }
  std::string queue_url(const std::string& cls = "small") { return aws_.sqs.get_queue_url(pool_name_ + "-" + cls); }
  // Every message of the class's queue: received, then visible again (or deleted when `drop`
  // says so for its body).
  std::vector<std::string> queue_bodies(const std::string& cls = "small",
                                        const std::function<bool(const std::string&)>& drop = {}) {
    const std::string url = queue_url(cls);
    std::vector<std::string> bodies;
    std::vector<std::string> keep;
    for (int i = 0; i < 10; ++i) {
      auto got = aws_.sqs.receive_messages({.queue_url = url, .max_messages = 10, .wait_seconds = 1,
                                            .visibility_timeout = 30});
      if (got.empty()) break;
      for (auto& m : got) {
        if (drop && drop(m.body)) {
          aws_.sqs.delete_message(url, m.receipt_handle);
          continue;
        }
        bodies.push_back(m.body);
        keep.push_back(m.receipt_handle);
      }
    }
    for (const auto& h : keep) aws_.sqs.change_message_visibility(url, h, 0);
    std::sort(bodies.begin(), bodies.end());
    return bodies;
  }
  void send_message(const std::string& body, const std::string& cls = "small") {
    aws_.sqs.send_message(queue_url(cls), body);
  }
  static std::string message_for(const std::string& id, int64_t generation) {
    return pool::pool_message_body({id, generation});
  }

  std::string ec2_state(const std::string& id) {
    try {
      return cloud_.control("GET", "/_control/ec2/instances/" + id)["state"].asString();
    } catch (const std::exception&) {
      return "<unknown>";
    }
  }
  // TerminateInstances from outside the pool (an operator, a script), with SkipOsShutdown: the
  // instance's processes get no SIGTERM first — the runner cannot even report its job cancelled.
  void kill_instance(const std::string& id) {
    aws::Ec2Form form("TerminateInstances");
    form.add_list("InstanceId", {id});
    form.add("SkipOsShutdown", "true");
    aws::ec2_call(aws_.ec2_caller, form);
  }
  // Host pids of the instance's processes whose command line contains `needle`.
  std::vector<pid_t> pids_matching(const std::string& id, const std::string& needle) {
    std::vector<pid_t> out;
    Json::Value summary;
    try {
      summary = cloud_.control("GET", "/_control/ec2/instances/" + id);
    } catch (const std::exception&) {
      return out;
    }
    for (const auto& p : summary["pids"]) {
      pid_t pid = static_cast<pid_t>(p.asInt());
      if (agent::process_cmdline(pid).find(needle) != std::string::npos) out.push_back(pid);
    }
    return out;
  }
  std::string console(const std::string& id) {
    try {
      return cloud_.control("GET", "/_control/ec2/instances/" + id + "/console")["text"].asString();
    } catch (const std::exception& e) {
      return e.what();
    }
  }
  std::string consoles() {
    std::string out;
    for (const auto& r : records()) out += "\n--- console of " + r.instance_id + "\n" + console(r.instance_id);
    return out;
  }
  // Capacity rules of the EC2 stand-in: `available` true, false or a number of launches.
  void capacity(const std::string& type, const std::string& usage, const Json::Value& available) {
    Json::Value c;
    c["instanceType"] = type;
    c["usageClass"] = usage;
    c["available"] = available;
    cloud_.control("POST", "/_control/ec2/capacity", c);
  }

  runpool::testing::LocalCloud& cloud_ = runpool::testing::LocalCloud::shared();
  testing::CloudClients aws_{cloud_};
  std::string base_;
  std::string pool_name_;
  std::unique_ptr<CtlPool> pool_;
  std::unique_ptr<pool::DynamoStateTable> table_;

 private:
  // Makes the template's config.sh hang when asked to configure a label containing `marker`.
  static void hang_registration_for(const fs::path& config_sh, const std::string& marker) {
    on_labels(config_sh, marker, "exec sleep 600");
  }
  static void fail_registration_for(const fs::path& config_sh, const std::string& marker) {
    on_labels(config_sh, marker, "echo 'Http response code: Forbidden' >&2; exit 1");
  }
  // config.sh runs `command` first when its --labels contain `marker`.
  static void on_labels(const fs::path& config_sh, const std::string& marker, const std::string& command) {
    std::string text = testing::slurp(config_sh.string());
    auto nl = text.find('\n');
    text.insert(nl + 1, "case \" $* \" in *\" --labels \"*" + marker + "*) " + command + " ;; esac\n");
    std::ofstream(config_sh, std::ios::trunc) << text;
  }
};

}  // namespace runpool::controller::e2e
