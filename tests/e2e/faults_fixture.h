// The faults suite's harness: the full run-scoped lifecycle (cold provision → jobs → release to
// the pool → warm provision → jobs → release → refresh retires) with the real runpoolctl and real
// agents, while the local cloud injects faults, and a scheduled `runpoolctl refresh` runs beside
// it as it would in production. It checks what must hold whatever the faults: every job ran
// exactly once and succeeded, no refresh pass disturbed a healthy instance, and at the end nothing
// runs and nothing is registered. The local cloud's counters (/_control/stats) prove the faults
// were hit.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "tests/e2e/e2e_fixture.h"

namespace runpool::controller::e2e {

// CI size by default; RUNPOOL_RELIABILITY_FULL=1 for the longer run.
struct FaultsSize {
  int instances = 2;
  int jobs = 3;    // per workflow
  int trials = 1;  // lifecycles per scenario
  std::chrono::milliseconds outage{5000};
  // CI: faults fall evenly at their rates (a short run meets its share); full: independent draws.
  int spread = 1;
  static FaultsSize from_env() {
    const char* full = std::getenv("RUNPOOL_RELIABILITY_FULL");
    if (full && std::string(full) == "1") return {3, 6, 3, std::chrono::milliseconds(15000), 0};
    return {};
  }
};

// Per service, summed over operations.
struct FaultCounts {
  int64_t requests = 0, errors = 0, throttles = 0, retry_afters = 0;
  int64_t injected() const { return errors + throttles + retry_afters; }
};

// What one refresh pass of the schedule did.
struct Pass {
  int exit_code = 0;
  Json::Value actions;
  std::string err;
};

class FaultsE2e : public E2eTest {
 protected:
  // An idle agent silent this long is retired by refresh: longer than any outage here, so a
  // retirement during the run is a wrong one.
  std::string more_config() const override { return "agent_silence = 45s\n"; }

  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure()) return;
    // Where each job leaves its mark: every job user may write here, and a job run twice shows.
    // Outside the agents' sweep roots, or the end of each assignment would remove the marks.
    marks_ = testing::make_temp_dir("runpool-e2e-marks");
    chmod(marks_.c_str(), 01777);
    cloud_.control("POST", "/_control/stats/reset");
  }
  void TearDown() override {
    stop_schedule();
    Json::Value s;
    s["imdsTokenMaxTtlSeconds"] = 21600;
    s["credentialTtlMs"] = 6 * 3600 * 1000;
    cloud_.control("POST", "/_control/ec2/settings", s);
    E2eTest::TearDown();
    std::error_code ec;
    if (!marks_.empty()) fs::remove_all(marks_, ec);
  }

  void set_faults(const std::string& service, Json::Value knobs) {
    knobs["service"] = service;
    cloud_.control("POST", "/_control/faults", knobs);
  }
  FaultCounts counts(const std::string& service) {
    const Json::Value all = cloud_.control("GET", "/_control/stats");
    FaultCounts c;
    for (const auto& op : all[service]) {
      c.requests += op["requests"].asInt64();
      c.errors += op["errors"].asInt64();
      c.throttles += op["throttles"].asInt64();
      c.retry_afters += op["retryAfters"].asInt64();
    }
    return c;
  }
  FaultCounts counts_of(const std::string& service, const std::string& operation) {
    const Json::Value op = cloud_.control("GET", "/_control/stats")[service][operation];
    return {op["requests"].asInt64(), op["errors"].asInt64(), op["throttles"].asInt64(), op["retryAfters"].asInt64()};
  }
  // One line per service for the report.
  void print_counts(const std::string& scenario) {
    for (const char* s : {"dynamodb", "sqs", "ec2", "imds", "github"}) {
      FaultCounts c = counts(s);
      std::printf("[faults] %s %s: requests %lld, 5xx %lld, throttled %lld, retry-after %lld\n", scenario.c_str(), s,
                  (long long)c.requests, (long long)c.errors, (long long)c.throttles, (long long)c.retry_afters);
    }
  }

  // ---- the schedule: `runpoolctl refresh` every `every`, as cron would run it

  void start_schedule(std::chrono::milliseconds every = 2000ms) {
    stop_schedule();
    stop_ = false;
    schedule_ = std::thread([this, every] {
      for (int i = 0; i < 1000 && !stop_; ++i) {
        CtlResult r = ctl({"--json", "refresh"}, {}, 120s);
        Pass p;
        p.exit_code = r.exit_code;
        p.err = r.err;
        auto doc = try_parse_json(r.out);
        if (doc && doc->isObject()) p.actions = (*doc)["actions"];
        {
          std::lock_guard<std::mutex> lock(passes_mu_);
          passes_.push_back(std::move(p));
        }
        for (auto t = every; t > 0ms && !stop_; t -= 100ms) std::this_thread::sleep_for(100ms);
      }
    });
  }
  void stop_schedule() {
    stop_ = true;
    if (schedule_.joinable()) schedule_.join();
  }
  // Every action of the schedule's passes that would disturb an instance of a healthy lifecycle.
  // (A ghost-runner DELETE may race a deregistration harmlessly: runner names carry the
  // generation, and the jobs' own checks would show a live runner deleted.)
  std::vector<std::string> disturbing_actions() {
    static const std::set<std::string> disturbing = {"terminate", "retry-terminate", "terminate-untracked",
                                                     "close", "drain"};
    std::lock_guard<std::mutex> lock(passes_mu_);
    std::vector<std::string> out;
    for (const auto& p : passes_) {
      for (const auto& a : p.actions) {
        if (disturbing.count(a["action"].asString())) out.push_back(write_json(a));
      }
    }
    return out;
  }
  std::vector<Pass> passes() {
    std::lock_guard<std::mutex> lock(passes_mu_);
    return passes_;
  }
  // Lines of every runpoolctl run of this pool (each leaves its stderr in the pool's directory)
  // that contain `needle`.
  int ctl_log_lines(const std::string& needle) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(pool_->dir())) {
      if (e.path().extension() != ".err") continue;
      std::istringstream in(testing::slurp(e.path().string()));
      for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
    }
    return n;
  }

  // ---- jobs

  // Queues `count` jobs of `duration_ms` for `label`; each appends a line to its own mark file.
  std::vector<std::pair<int64_t, std::string>> queue_jobs(const std::string& label, int count, int duration_ms) {
    std::vector<std::pair<int64_t, std::string>> jobs;
    for (int i = 0; i < count; ++i) {
      const std::string name = label + "-job" + std::to_string(i);
      jobs.emplace_back(queue_job(label, name, "echo ran >> '" + marks_ + "/" + name + "'", duration_ms), name);
    }
    return jobs;
  }
  // Every job completed, succeeded, was dispatched once and ran once.
  void expect_each_ran_once(const std::vector<std::pair<int64_t, std::string>>& jobs) {
    for (const auto& [id, name] : jobs) {
      Json::Value j = finished_job(id, 180s);
      EXPECT_EQ(j["state"].asString(), "completed") << write_json(j) << consoles();
      EXPECT_EQ(j["result"].asString(), "Succeeded") << write_json(j);
      EXPECT_EQ(j["dispatches"].size(), 1u) << "dispatched more than once: " << write_json(j);
      EXPECT_EQ(testing::slurp(marks_ + "/" + name), "ran\n") << name << " did not run exactly once";
    }
  }

  // ---- the lifecycle

  struct Hooks {
    std::function<void()> idle;     // after the first release: every instance idle in the pool
    std::function<void()> running;  // while the second workflow's first jobs run
    int job_ms = 500;               // the second workflow's jobs
  };

  // One full lifecycle under whatever faults are set; `tag` names its labels. Returns the
  // instances it used (all released at its end, idle for 2 s). The schedule runs while jobs run
  // and while the pool is idle between the workflows, not across a release or provision: a pass
  // that sweeps the pool queue while release advertises hides the new messages from a provision
  // for the rest of the pass, which then launches cold (a known controller issue, reported).
  std::vector<std::string> lifecycle(const std::string& tag, const FaultsSize& size, const Hooks& hooks) {
    const std::string w1 = tag + "-w1", w2 = tag + "-w2";
    Json::Value cold = provision(w1, size.instances);
    if (!cold["ok"].asBool()) return {};
    EXPECT_EQ(cold["launched"].asInt(), size.instances) << write_json(cold);
    std::vector<std::string> ids = ids_of(cold);
    start_schedule();
    expect_each_ran_once(queue_jobs(w1, size.jobs, 500));
    stop_schedule();
    Json::Value r1 = release(w1);
    EXPECT_EQ(r1["terminated"].size(), 0u) << write_json(r1) << consoles();
    for (const auto& id : ids) EXPECT_EQ(record(id).state, State::kIdle) << id;
    EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
    start_schedule();
    if (hooks.idle) hooks.idle();
    std::this_thread::sleep_for(1000ms);
    stop_schedule();

    CtlResult wr = ctl(provision_args(w2, size.instances));
    EXPECT_EQ(wr.exit_code, 0) << describe(wr) << consoles();
    Json::Value warm = parse_json(wr.out.empty() ? "{}" : wr.out, "provision");
    if (!warm["ok"].asBool()) return ids;
    EXPECT_EQ(warm["warm"].asInt(), size.instances) << describe(wr);
    EXPECT_EQ(warm["launched"].asInt(), 0) << write_json(warm);
    for (const auto& i : warm["instances"]) ids.push_back(i["instance_id"].asString());  // any launched
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    start_schedule();
    auto jobs2 = queue_jobs(w2, size.jobs, hooks.job_ms);
    if (hooks.running) {
      // Wait (bounded) until as many jobs run as there are runners, then disturb.
      const size_t busy = static_cast<size_t>(std::min(size.instances, size.jobs));
      EXPECT_TRUE(eventually(
          [&] {
            size_t n = 0;
            for (const auto& j : jobs2) n += job(j.first)["state"].asString() == "running";
            return n >= busy;
          },
          120s))
          << consoles();
      hooks.running();
    }
    expect_each_ran_once(jobs2);
    stop_schedule();
    // The last release leaves them idle for 2 s only: then refresh retires them.
    Json::Value r2 = release(w2, {{"RUNPOOL_IDLE_TTL", "2s"}});
    EXPECT_EQ(r2["terminated"].size(), 0u) << write_json(r2) << consoles();
    return ids;
  }

  // The agents' warnings and errors on the instances' consoles ("<time> <level> <message>"), each
  // message once with a count; digits masked, so ids and numbers do not split a message.
  std::map<std::string, int> agent_warnings(const std::vector<std::string>& ids) {
    std::map<std::string, int> out;
    for (const auto& id : ids) {
      std::istringstream in(console(id));
      for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string time, level;
        words >> time >> level;
        if (level != "warning" && level != "error" && level != "critical") continue;
        std::string msg;
        std::getline(words, msg);
        msg = level + ":" + msg.substr(0, 110);
        for (char& c : msg) c = std::isdigit(static_cast<unsigned char>(c)) ? '#' : c;
        ++out[msg];
      }
    }
    return out;
  }

  // Refresh passes (bounded) until every instance is retired; then nothing may run or be
  // registered: records terminated, EC2 instances gone, no agent process left, no runner.
  void retire_and_expect_nothing_left(const std::vector<std::string>& ids) {
    std::this_thread::sleep_for(2500ms);
    bool retired = false;
    for (int pass = 0; pass < 30 && !retired; ++pass) {
      Json::Value j = refresh();
      retired = true;
      for (const auto& id : ids) {
        auto r = table_->get(id);
        retired = retired && (!r || r->state == State::kTerminated);
      }
      if (!retired) std::this_thread::sleep_for(1000ms);
    }
    EXPECT_TRUE(retired) << consoles();
    for (const auto& id : ids) {
      EXPECT_TRUE(eventually(
          [&] {
            std::string s = ec2_state(id);
            return s == "shutting-down" || s == "terminated" || s == "<unknown>";
          },
          60s))
          << id << " is " << ec2_state(id);
      EXPECT_TRUE(eventually([&] { return pids_matching(id, "runpool-agent").empty(); }, 60s)) << id;
    }
    EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
  }

  std::string marks_;
  std::atomic<bool> stop_{false};
  std::thread schedule_;
  std::mutex passes_mu_;
  std::vector<Pass> passes_;
};

}  // namespace runpool::controller::e2e
