// Races on one small warm pool, real agents: randomized trials of concurrent `runpoolctl
// provision`, `release` and `refresh` processes, plus one run identity whose provision is killed
// (SIGKILL, as a lost runner or a timed-out step leaves it) and retried the way a retried step
// calls it (same GITHUB_RUN_ID/ATTEMPT/JOB, no --label) — at a random moment, or (a third of the
// trials) at the crash point where EC2 launched its fleet and the answer never came back (the
// local cloud's /_control/hold). A sampler watches the table, GitHub's
// runners and EC2 the whole time. Asserted: an instance's assignment (instance, generation) never
// carries two labels — neither in the table, across the provisions' reports, nor as runners online
// at once; every provision gets its runners or fails with a reason; a retried provision never
// launches a second set of instances; the runners that stay assigned serve only their label.
//
// Seeded: RUNPOOL_RACE_SEED=<seed> RUNPOOL_RACE_TRIALS=1 replays a trial's schedule; the full size
// (RUNPOOL_RELIABILITY_FULL=1) runs 50 trials.
#include <atomic>
#include <functional>
#include <mutex>
#include <regex>

#include "controller/compute.h"
#include "controller/launch_plan.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/e2e/race_trials.h"

namespace runpool::controller::e2e {
namespace {

constexpr const char* kSeedVar = "RUNPOOL_RACE_SEED";
constexpr const char* kTrialsVar = "RUNPOOL_RACE_TRIALS";
constexpr int kPoolSize = 3;  // idle instances at the start of every trial

// Watches every assignment of the pool on its own thread (every 100 ms, EC2 every 500 ms):
// (instance, generation) → label from the table, the runners GitHub has per instance, and the
// instances EC2 launched per label tag.
class AssignmentSampler {
 public:
  // `observe`, if given, also sees every look at the pool's records (on the sampler's thread).
  AssignmentSampler(runpool::testing::LocalCloud& cloud, const std::string& table, std::string pool,
                    std::function<void(const std::vector<InstanceRecord>&)> observe = {})
      : cloud_(cloud),
        clients_(cloud),
        table_(clients_.db, table, cloud.instance_role_id()),
        pool_(std::move(pool)),
        observe_(std::move(observe)) {
    thread_ = std::thread([this] {
      for (int i = 0; i < 200000 && !stop_; ++i) {  // bounded: ~6 h at most
        sample(i % 5 == 0);
        std::this_thread::sleep_for(100ms);
      }
    });
  }
  ~AssignmentSampler() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<std::string> violations() const {
    std::lock_guard<std::mutex> l(mu_);
    return violations_;
  }
  std::set<std::string> launched_for(const std::string& label) const {
    std::lock_guard<std::mutex> l(mu_);
    auto it = launched_.find(label);
    return it == launched_.end() ? std::set<std::string>{} : it->second;
  }
  int samples() const { return samples_; }
  int offline_doubles() const { return offline_doubles_; }  // looks with 2+ runners of one instance, 1 online at most
  // One more look at EC2 now (its launches), so a check right after a command sees them.
  void look_at_ec2() { sample(true); }

 private:
  void sample(bool with_ec2) {
    try {
      std::vector<InstanceRecord> recs;
      table_.scan([&](const InstanceRecord& r) {
        if (r.pool == pool_) recs.push_back(r);
      });
      if (observe_) observe_(recs);
      const Json::Value gh = cloud_.control("GET", "/_control/github/runners");
      Json::Value ec2;
      if (with_ec2) ec2 = cloud_.control("GET", "/_control/ec2/instances");
      std::lock_guard<std::mutex> l(mu_);
      ++samples_;
      for (const auto& r : recs) {
        const bool assigned = r.state == State::kCreated || r.state == State::kClaimed ||
                              r.state == State::kRunning || r.state == State::kDraining;
        if (!assigned || r.label.empty()) continue;
        auto [it, fresh] = label_of_.emplace(std::make_pair(r.instance_id, r.generation), r.label);
        if (!fresh && it->second != r.label) {
          violations_.push_back("table: " + r.instance_id + " generation " + std::to_string(r.generation) +
                                " assigned to " + it->second + " and then to " + r.label);
        }
      }
      std::map<std::string, std::vector<std::string>> by_instance, online;
      for (const auto& run : gh["runners"]) {
        const std::string name = run["name"].asString();
        const std::string prefix = pool_ + "-";
        if (name.rfind(prefix, 0) != 0) continue;
        const auto g = name.rfind("-g");
        if (g == std::string::npos || g < prefix.size()) continue;
        const std::string id = name.substr(prefix.size(), g - prefix.size());
        const int64_t gen = std::atoll(name.c_str() + g + 2);
        std::set<std::string> custom;
        for (const auto& lab : run["labels"]) {
          if (lab["type"].asString() == "custom") custom.insert(lab["name"].asString());
        }
        by_instance[id].push_back(name);
        if (run["session"].isObject() && run["session"]["live"].asBool()) online[id].push_back(name);
        // runpoolctl removes a runner's labels when it asks for its drain: with none, nothing more
        // can be routed to it, whatever the table's label still says.
        if (custom.empty()) continue;
        auto it = label_of_.find({id, gen});
        if (it != label_of_.end() && custom.count(it->second) == 0) {
          violations_.push_back("github: " + name + " registered for " + write_json(run["labels"]) +
                                " while the table assigned it " + it->second);
        }
        if (custom.size() != 1) violations_.push_back("github: " + name + " carries " + std::to_string(custom.size()) +
                                                      " assignment labels");
      }
      for (const auto& [id, names] : online) {
        if (names.size() > 1) {
          violations_.push_back("github: " + id + " has " + std::to_string(names.size()) +
                                " runners online at once: " + ::testing::PrintToString(names));
        }
      }
      for (const auto& [id, names] : by_instance) offline_doubles_ += names.size() > 1 && online[id].size() <= 1;
      for (const auto& i : ec2["instances"]) {
        if (i["tags"][kTagPool].asString() == pool_) launched_[i["tags"][kTagLabel].asString()].insert(i["id"].asString());
      }
    } catch (const std::exception&) {
      // A missed look; the next one looks again.
    }
  }

  runpool::testing::LocalCloud& cloud_;
  testing::CloudClients clients_;
  pool::DynamoStateTable table_;
  std::string pool_;
  std::function<void(const std::vector<InstanceRecord>&)> observe_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int64_t>, std::string> label_of_;
  std::map<std::string, std::set<std::string>> launched_;
  std::vector<std::string> violations_;
  std::atomic<int> samples_{0};
  int offline_doubles_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// One concurrent command of a trial. A `retry` is a run identity: attempt 1, SIGKILLed
// `kill_after_ms` after its start (or done before), then attempt 2 `retry_gap_ms` later.
struct Command {
  std::string kind;  // provision | retry | release | refresh
  std::string label;
  int count = 0;
  int64_t offset_ms = 0;
  int64_t kill_after_ms = -1;
  int64_t retry_gap_ms = 0;
  bool crash_after_fleet = false;  // retry: attempt 1 killed once EC2 launched its fleet, the answer withheld
  std::map<std::string, std::string> env;
  std::vector<CtlResult> results;  // one per attempt
};

struct Totals {
  int trials = 0, commands = 0, max_concurrency = 0, provisions_ok = 0, provisions_failed = 0;
  int warm = 0, launched = 0, retries = 0, retries_killed_mid = 0, retry_adopted = 0, jobs_checked = 0;
  int fleet_withheld = 0;
  int releases = 0, refreshes = 0;
  std::map<std::string, int> failure_reasons;
};

class Races : public E2eTest {
 protected:
  std::string more_config() const override {
    return "orphan_grace = 10s\nmin_running_time_linux = 0s\ncancel_drain_wait = 30s\n";
  }

  std::vector<std::string> args_of(const Command& c) const {
    if (c.kind == "provision") return provision_args(c.label, c.count, {"--timeout", "90s"});
    if (c.kind == "retry") {
      return {"--json", "provision", "--count", std::to_string(c.count), "--usage-class", "on-demand",
              "--timeout", "90s"};
    }
    if (c.kind == "release") return {"--json", "release", "--wait", "--label", c.label};
    return {"--json", "refresh"};
  }

  // Runs one command (its attempts) on the calling thread, counting concurrent processes.
  void run(Command& c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(c.offset_ms));
    auto once = [&](int64_t kill_after_ms) {
      const int now = ++running_;
      for (int m = max_running_; now > m && !max_running_.compare_exchange_weak(m, now);) {
      }
      auto p = start_ctl(args_of(c), c.env);
      if (kill_after_ms >= 0 && c.crash_after_fleet) {
        // The crash point: EC2 served the fleet, its answer never reaches the provision, which dies
        // there (or at kill_after_ms if it never launches: the pool had enough).
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kill_after_ms);
        while (std::chrono::steady_clock::now() < until &&
               !cloud_.control("GET", "/_control/hold")["held"]["ready"].asBool()) {
          std::this_thread::sleep_for(20ms);
        }
        fleet_withheld_ = cloud_.control("GET", "/_control/hold")["held"]["ready"].asBool();
        p->signal(SIGKILL);
        c.results.push_back(p->wait(30s));
        cloud_.control("DELETE", "/_control/hold");
      } else if (kill_after_ms >= 0) {
        // Unreaped until wait(): a process already done is a zombie, untouched by the SIGKILL, and
        // wait() then reports its own exit.
        std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms));
        p->signal(SIGKILL);
        c.results.push_back(p->wait(30s));
      } else {
        c.results.push_back(p->wait(240s));
      }
      --running_;
    };
    if (c.kind != "retry") return once(-1);
    if (c.crash_after_fleet) {
      Json::Value hold;
      hold["caller"] = "controller";
      hold["operations"].append("CreateFleet");
      hold["bodyMatch"] = c.label;  // [A-Za-z0-9_-]: no regex syntax
      hold["nth"] = 1;
      hold["when"] = "after";
      cloud_.control("POST", "/_control/hold", hold);
    }
    once(c.kill_after_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(c.retry_gap_ms));
    once(-1);
  }

  std::vector<Command> plan(std::mt19937_64& rng, int trial) const {
    std::vector<Command> cmds;
    std::vector<std::string> plain;
    const int n_plain = static_cast<int>(uniform(rng, 2, 3));
    for (int k = 0; k < n_plain; ++k) {
      Command c;
      c.kind = "provision";
      c.label = "r" + std::to_string(trial) + "-p" + std::to_string(k);
      c.count = static_cast<int>(uniform(rng, 1, 2));
      c.offset_ms = uniform(rng, 0, 2500);
      plain.push_back(c.label);
      cmds.push_back(c);
    }
    Command retry;
    retry.kind = "retry";
    const std::string run_id = std::to_string(1000 + trial);
    retry.env = {{"GITHUB_RUN_ID", run_id}, {"GITHUB_RUN_ATTEMPT", "1"}, {"GITHUB_JOB", "build"}};
    retry.label = pool_name_ + "-" + run_id + "-1-build";  // derive_label's form
    retry.count = static_cast<int>(uniform(rng, 1, 3));
    retry.offset_ms = uniform(rng, 0, 2500);
    retry.crash_after_fleet = chance(rng, 1.0 / 3);
    retry.kill_after_ms = retry.crash_after_fleet ? 15000 : uniform(rng, 200, 5000);
    retry.retry_gap_ms = uniform(rng, 0, 1000);
    cmds.push_back(retry);
    for (int k = 0, n = static_cast<int>(uniform(rng, 1, 2)); k < n; ++k) {
      Command c;
      c.kind = "release";
      c.label = plain[uniform(rng, 0, n_plain - 1)];
      c.offset_ms = uniform(rng, 500, 6000);
      cmds.push_back(c);
    }
    for (int k = 0, n = static_cast<int>(uniform(rng, 1, 2)); k < n; ++k) {
      Command c;
      c.kind = "refresh";
      c.offset_ms = uniform(rng, 0, 6000);
      cmds.push_back(c);
    }
    return cmds;
  }

  // The CreateFleet calls (so far) whose ClientToken is one a provision of `label` would send.
  int fleet_calls_for(const std::string& label, int count) {
    std::set<std::string> tokens;
    for (int round = 1; round <= 4; ++round) {
      for (int n = 1; n <= count; ++n) tokens.insert(fleet_client_token(pool_name_, label, pool::UsageClass::kOnDemand, round, n));
    }
    int calls = 0;
    const Json::Value c = cloud_.control("GET", "/_control/ec2/calls");
    for (const auto& t : c["clientTokens"]["CreateFleet"]) calls += tokens.count(t.asString());
    return calls;
  }

  // Releases every label concurrently; then refresh, and the pool trimmed back to kPoolSize.
  void reset_pool(const std::set<std::string>& labels) {
    std::vector<std::unique_ptr<CtlProcess>> procs;
    for (const auto& l : labels) procs.push_back(start_ctl({"--json", "release", "--wait", "--label", l}));
    for (auto& p : procs) {
      CtlResult r = p->wait(240s);
      EXPECT_EQ(r.exit_code, 0) << describe(r);
    }
    Json::Value rf = refresh();
    EXPECT_EQ(rf["exit_code"].asInt(), 0) << write_json(rf);
    CtlResult sd = ctl({"--json", "scale-down", "--idle", std::to_string(kPoolSize)});
    EXPECT_EQ(sd.exit_code, 0) << describe(sd);
    for (const auto& r : records()) {
      const bool assigned = r.state == State::kCreated || r.state == State::kClaimed || r.state == State::kRunning ||
                            r.state == State::kDraining;
      EXPECT_FALSE(assigned) << r.instance_id << " still " << pool::state_name(r.state) << " for " << r.label
                             << " after every label was released";
    }
  }

  std::atomic<int> running_{0}, max_running_{0};
  std::atomic<bool> fleet_withheld_{false};  // this trial's attempt 1 died with its fleet's answer withheld
};

// A failure reason without its instance ids and times, to count alike reasons together.
std::string reason_kind(std::string why) {
  why = std::regex_replace(why, std::regex("i-[0-9a-f]+"), "i-*");
  why = std::regex_replace(why, std::regex("[0-9]+(\\.[0-9]+)?s\\b"), "Ns");
  return why.substr(0, 120);
}

TEST_F(Races, ConcurrentProvisionsReleasesAndRefreshesNeverDoubleAssign) {
  const uint64_t base = base_seed(kSeedVar);
  const int trials = trial_count(kTrialsVar, 2, 50);
  std::printf("races: %d trial(s), base seed %llu (replay all: %s=%llu %s=%d)\n", trials,
              static_cast<unsigned long long>(base), kSeedVar, static_cast<unsigned long long>(base), kTrialsVar,
              trials);
  RecordProperty("seed", std::to_string(base));

  Json::Value seed = provision("race-pool", kPoolSize);
  ASSERT_EQ(ids_of(seed).size(), static_cast<size_t>(kPoolSize)) << write_json(seed);
  release("race-pool");

  AssignmentSampler sampler(cloud_, pool_->table(), pool_name_);
  Totals t;
  int double_assignments = 0, double_launches = 0;
  size_t seen = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const uint64_t ts = base + static_cast<uint64_t>(trial);
    const std::string hint = replay_hint(kSeedVar, kTrialsVar, ts, "e2e.races_test");
    SCOPED_TRACE(hint);
    std::mt19937_64 rng(ts);
    std::vector<Command> cmds = plan(rng, trial);
    max_running_ = 0;
    fleet_withheld_ = false;
    std::vector<std::thread> threads;
    for (auto& c : cmds) threads.emplace_back([this, &c] { run(c); });
    for (auto& th : threads) th.join();
    sampler.look_at_ec2();
    ++t.trials;
    t.max_concurrency = std::max(t.max_concurrency, max_running_.load());

    // Every provision got its runners or said why not; no (instance, generation) won by two labels.
    std::map<std::pair<std::string, int64_t>, std::string> owner;
    std::map<std::string, std::map<std::string, int64_t>> won;  // label → instance → generation
    auto check_provision = [&](const std::string& label, int count, const CtlResult& r) {
      std::optional<Json::Value> j = try_parse_json(r.out);
      if (!j || !j->isObject()) {
        ADD_FAILURE() << "provision " << label << " printed no report: " << describe(r);
        return;
      }
      if (r.exit_code != 0) {
        EXPECT_EQ(r.exit_code, 1) << describe(r);
        EXPECT_FALSE((*j)["ok"].asBool()) << r.out;
        EXPECT_FALSE((*j)["error"].asString().empty()) << "a failed provision must say why: " << describe(r);
        ++t.provisions_failed;
        ++t.failure_reasons[reason_kind((*j)["error"].asString())];
        return;
      }
      ++t.provisions_ok;
      t.warm += (*j)["warm"].asInt();
      t.launched += (*j)["launched"].asInt();
      EXPECT_TRUE((*j)["ok"].asBool()) << r.out;
      EXPECT_EQ((*j)["label"].asString(), label) << r.out;
      EXPECT_EQ((*j)["instances"].size(), static_cast<size_t>(count)) << r.out;
      for (const auto& i : (*j)["instances"]) {
        const std::string id = i["instance_id"].asString();
        const int64_t gen = i["generation"].asInt64();
        auto [it, fresh] = owner.emplace(std::make_pair(id, gen), label);
        if (!fresh && it->second != label) {
          ++double_assignments;
          ADD_FAILURE() << id << " generation " << gen << " won by both " << it->second << " and " << label;
        }
        won[label][id] = gen;
      }
    };
    std::set<std::string> labels;
    std::string retry_line;
    for (auto& c : cmds) {
      t.commands += static_cast<int>(c.results.size());
      if (c.kind == "release") {
        ++t.releases;
        EXPECT_EQ(c.results[0].exit_code, 0) << describe(c.results[0]);
      } else if (c.kind == "refresh") {
        ++t.refreshes;
        EXPECT_LE(c.results[0].exit_code, 1) << describe(c.results[0]);
      } else if (c.kind == "provision") {
        labels.insert(c.label);
        check_provision(c.label, c.count, c.results[0]);
      } else {
        labels.insert(c.label);
        ++t.retries;
        const bool killed = c.results[0].exit_code == -1;
        if (killed) {
          ++t.retries_killed_mid;
        } else {
          check_provision(c.label, c.count, c.results[0]);
        }
        const CtlResult& again = c.results[1];
        EXPECT_EQ(again.exit_code, 0) << "the retried provision " << c.label << ": " << describe(again);
        check_provision(c.label, c.count, again);
        const bool adopted = again.err.find("keeping it") != std::string::npos;
        t.retry_adopted += adopted;
        const std::set<std::string> launched = sampler.launched_for(c.label);
        const int fleets = fleet_calls_for(c.label, c.count);
        if (static_cast<int>(launched.size()) > c.count) {
          ++double_launches;
          ADD_FAILURE() << "run identity " << c.label << " (count " << c.count << ") launched " << launched.size()
                        << " instances over its attempts: " << ::testing::PrintToString(launched) << "\nattempt 1 "
                        << describe(c.results[0]) << "\nattempt 2 " << describe(again);
        }
        t.fleet_withheld += fleet_withheld_.load();
        retry_line = "retry of " + std::to_string(c.count) + ": attempt 1 " +
                     (fleet_withheld_ ? std::string("SIGKILLed with its CreateFleet answer withheld")
                      : c.crash_after_fleet && killed ? std::string("SIGKILLed (no CreateFleet: the pool had enough)")
                      : killed ? "SIGKILLed at " + std::to_string(c.kill_after_ms) + " ms"
                               : "done (exit " + std::to_string(c.results[0].exit_code) + ")") +
                     ", attempt 2 " + (adopted ? "adopted" : "adopted nothing") + ", " +
                     std::to_string(launched.size()) + " launched, " + std::to_string(fleets) + " CreateFleet";
      }
    }

    // The labels still holding what their provision won serve their jobs, on their instances only.
    std::vector<std::pair<std::string, int64_t>> jobs;
    for (const auto& [label, gens] : won) {
      bool intact = true;
      for (const auto& [id, gen] : gens) {
        InstanceRecord r = record(id);
        intact = intact && r.state == State::kRunning && r.label == label && r.generation == gen;
      }
      if (intact) jobs.push_back({label, queue_job(label, "race-" + label, "true", 200)});
    }
    for (const auto& [label, id] : jobs) {
      Json::Value j = finished_job(id, 90s);
      ++t.jobs_checked;
      EXPECT_EQ(j["result"].asString(), "Succeeded") << write_json(j);
      EXPECT_EQ(won[label].count(instance_of_runner(j["runnerName"].asString())), 1u)
          << label << "'s job ran on " << j["runnerName"].asString();
    }

    for (const std::vector<std::string> v = sampler.violations(); seen < v.size(); ++seen) {
      ++double_assignments;
      ADD_FAILURE() << "sampler: " << v[seen];
    }
    std::printf("trial %d (seed %llu): %zu commands, max %d at once; %zu labels won, %zu jobs checked; %s\n", trial,
                static_cast<unsigned long long>(ts), cmds.size(), max_running_.load(), won.size(), jobs.size(),
                retry_line.c_str());
    reset_pool(labels);
    if (HasFailure()) {
      std::printf("FAILED %s\n", hint.c_str());
      break;  // the pool may be in no state for another trial
    }
  }
  sampler.stop();

  std::printf("RACES SUMMARY: %d trials (base seed %llu), %d runpoolctl processes (%d provision attempts ok, %d "
              "failed clearly; %d warm + %d launched; %d releases, %d refreshes), max %d at once; %d run identities "
              "retried (attempt 1 killed mid-way %d times, %d of them with the CreateFleet answer withheld; %d retries "
              "adopted), %d jobs checked on their label; "
              "%d sampler looks; double assignments %d, double launches %d; %d looks with a stale offline runner\n",
              t.trials, static_cast<unsigned long long>(base), t.commands, t.provisions_ok, t.provisions_failed,
              t.warm, t.launched, t.releases, t.refreshes, t.max_concurrency, t.retries, t.retries_killed_mid,
              t.fleet_withheld, t.retry_adopted, t.jobs_checked, sampler.samples(), double_assignments, double_launches,
              sampler.offline_doubles());
  for (const auto& [why, n] : t.failure_reasons) std::printf("  provision failed %d x: %s\n", n, why.c_str());
  RecordProperty("double_assignments", double_assignments);
  RecordProperty("double_launches", double_launches);
  EXPECT_EQ(double_assignments, 0);
  EXPECT_EQ(double_launches, 0);
}

}  // namespace
}  // namespace runpool::controller::e2e

namespace runpool::controller::e2e {
namespace {

// The crash point no timed kill hits reliably: EC2 launched the fleet of a provision of 2 and its
// answer never came back (the process died there: no record written). The pool gains an idle
// instance before the step is retried with the same run identity; the retry must take the two
// its first attempt launched, not claim the idle one and launch a second fleet for the rest.
TEST_F(Races, ARetryAfterACrashAtTheFleetLaunchesNoSecondFleet) {
  const std::map<std::string, std::string> env = {
      {"GITHUB_RUN_ID", "4242"}, {"GITHUB_RUN_ATTEMPT", "1"}, {"GITHUB_JOB", "build"}};
  const std::string label = pool_name_ + "-4242-1-build";
  const std::vector<std::string> args = {"--json",       "provision", "--count",   "2",
                                         "--usage-class", "on-demand", "--timeout", "90s"};
  Json::Value hold;
  hold["caller"] = "controller";
  hold["operations"].append("CreateFleet");
  hold["bodyMatch"] = label;
  hold["nth"] = 1;
  hold["when"] = "after";
  cloud_.control("POST", "/_control/hold", hold);
  auto first = start_ctl(args, env);
  const bool held = eventually([&] { return cloud_.control("GET", "/_control/hold")["held"]["ready"].asBool(); }, 60s);
  first->signal(SIGKILL);
  CtlResult died = first->wait(30s);
  cloud_.control("DELETE", "/_control/hold");
  ASSERT_TRUE(held) << describe(died);
  std::set<std::string> first_fleet;
  const Json::Value all = cloud_.control("GET", "/_control/ec2/instances");
  for (const auto& i : all["instances"]) {
    if (i["tags"][kTagLabel].asString() == label) first_fleet.insert(i["id"].asString());
  }
  ASSERT_EQ(first_fleet.size(), 2u) << "the first attempt's fleet";

  provision("other", 1);
  release("other");
  CtlResult again = ctl(args, env);
  ASSERT_EQ(again.exit_code, 0) << describe(again) << consoles();
  Json::Value j = parse_json(again.out, "retry");
  const std::vector<std::string> ids = ids_of(j);
  const std::set<std::string> got(ids.begin(), ids.end());
  std::set<std::string> launched;
  const Json::Value now = cloud_.control("GET", "/_control/ec2/instances");
  for (const auto& i : now["instances"]) {
    if (i["tags"][kTagLabel].asString() == label) launched.insert(i["id"].asString());
  }
  std::printf("retry after a crash at the fleet: %d warm, %d launched; instances launched for the run identity: %zu\n",
              j["warm"].asInt(), j["launched"].asInt(), launched.size());
  EXPECT_EQ(launched, first_fleet) << "a second fleet for the same run identity";
  EXPECT_EQ(got, first_fleet) << "the retry should run on what its first attempt launched";
  EXPECT_EQ(release(label)["returned"].size(), 2u);
}

}  // namespace
}  // namespace runpool::controller::e2e

namespace runpool::controller::e2e {
namespace {

// The reuse policy under concurrency: three of the repositories acme/app, acme/lib, acme/web and
// acme/api each provision, run a job and release at once, seeded and randomized like the trials
// above, while the sampler
// watches. Under reuse = same-scope an instance tagged for one repository must never be claimed by
// another's provision; under reuse = never every released instance is terminated and no instance
// ever serves a second assignment. Both: no double assignment, and every provision gets its runners
// or fails with a reason.
constexpr int kReusePoolSize = 3;
const std::vector<std::string> kRepos = {"app", "lib", "web", "api"};

// The scope of every claim the sampler sees. A claim leaves the idle record's reuse_scope_key as it
// was (only a return to the pool rewrites it, in the same write that makes the record idle), so an
// assigned record shows the tag its instance carried when it was claimed.
class ClaimWatch {
 public:
  explicit ClaimWatch(bool never) : never_(never) {}
  // A trial's label and the scope of the repository provisioning it.
  void expect(const std::string& label, const std::string& scope) {
    std::lock_guard<std::mutex> l(mu_);
    scope_of_label_[label] = scope;
  }
  void observe(const std::vector<InstanceRecord>& recs) {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& r : recs) {
      const bool assigned = r.state == State::kCreated || r.state == State::kClaimed ||
                            r.state == State::kRunning || r.state == State::kDraining;
      auto scope = scope_of_label_.find(r.label);
      if (assigned && scope != scope_of_label_.end() &&
          claims_.emplace(std::make_pair(r.instance_id, r.generation), r.reuse_scope_key).second) {
        const std::string& tag = r.reuse_scope_key;
        if (!tag.empty() && tag != scope->second) {
          ++cross_scope_;
          violations_.push_back("scope: " + r.instance_id + " kept for " + tag + " claimed (generation " +
                                std::to_string(r.generation) + ") by " + r.label + " of " + scope->second);
        }
        own_scope_ += !tag.empty() && tag == scope->second;
        if (ended_.count(r.instance_id)) {
          violations_.push_back("never: " + r.instance_id + " claimed by " + r.label + " after it was retired");
        }
        auto [first, fresh] = first_generation_.emplace(r.instance_id, r.generation);
        if (never_ && !fresh && first->second != r.generation) {
          ++claimed_again_;
          violations_.push_back("never: " + r.instance_id + " served generation " + std::to_string(first->second) +
                                " and is claimed again (generation " + std::to_string(r.generation) + ") by " +
                                r.label);
        }
      }
      if (never_ && r.state == State::kIdle && first_generation_.count(r.instance_id) &&
          returned_.insert(r.instance_id).second) {
        violations_.push_back("never: " + r.instance_id + " returned to the pool after an assignment");
      }
      if (r.state == State::kTerminating || r.state == State::kTerminated) ended_.insert(r.instance_id);
    }
  }
  // The tag an assignment's record carried when the sampler first saw it claimed; nullopt if unseen.
  std::optional<std::string> tag_at_claim(const std::string& id, int64_t generation) const {
    std::lock_guard<std::mutex> l(mu_);
    auto it = claims_.find({id, generation});
    return it == claims_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  std::vector<std::string> violations() const {
    std::lock_guard<std::mutex> l(mu_);
    return violations_;
  }
  int claims() const {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<int>(claims_.size());
  }
  int own_scope() const { return own_scope_; }
  int cross_scope() const { return cross_scope_; }
  int claimed_again() const { return claimed_again_; }

 private:
  const bool never_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> scope_of_label_;
  std::map<std::pair<std::string, int64_t>, std::string> claims_;  // (instance, generation) → tag at claim
  std::map<std::string, int64_t> first_generation_;  // instance → its first generation claimed in a trial
  std::set<std::string> ended_, returned_;
  std::atomic<int> own_scope_{0}, cross_scope_{0}, claimed_again_{0};
  std::vector<std::string> violations_;
};

// One repository's run in a trial: provision, one job, release.
struct Life {
  std::string repo, label;
  int count = 1;
  int64_t offset_ms = 0, hold_ms = 0;
  CtlResult provision, release;
  int64_t job = -1;
};

struct ReuseTotals {
  int trials = 0, provisions_ok = 0, provisions_failed = 0, warm = 0, launched = 0, jobs = 0, releases = 0;
  int refreshes = 0, max_concurrency = 0, retired_never = 0, unseen_claims = 0;
  std::map<std::string, int> failure_reasons;
};

class ReuseRaces : public E2eTest {
 protected:
  std::string scope_of(const std::string& repo) const { return "repository:acme/" + repo; }
  std::vector<std::string> for_repo(const std::string& repo, std::vector<std::string> args) const {
    args.insert(args.begin(), {"--set", "github_owner=acme/" + repo});
    return args;
  }
  CtlResult timed(const std::vector<std::string>& args) {
    const int now = ++running_;
    for (int m = max_running_; now > m && !max_running_.compare_exchange_weak(m, now);) {
    }
    CtlResult r = start_ctl(args)->wait(240s);
    --running_;
    return r;
  }

  void live(Life& l) {
    std::this_thread::sleep_for(std::chrono::milliseconds(l.offset_ms));
    l.provision = timed(for_repo(l.repo, provision_args(l.label, l.count, {"--timeout", "90s"})));
    if (l.provision.exit_code == 0) {
      Json::Value body;
      body["label"] = l.label;
      body["name"] = l.label + "-job";
      body["durationMs"] = 200;
      body["owner"] = "acme";
      body["repo"] = l.repo;
      body["run"] = "true";
      l.job = cloud_.control("POST", "/_control/github/jobs", body)["id"].asInt64();
      finished_job(l.job, 90s);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(l.hold_ms));
    l.release = timed(for_repo(l.repo, {"--json", "release", "--wait", "--label", l.label}));
  }

  // Three repositories of four once, then one or two more runs of any, started later so some find
  // the instances the first runs returned. A repository the last trial left out finds the pool
  // holding other scopes' instances only: where a scope check that let it in would show.
  std::vector<Life> plan(std::mt19937_64& rng, int trial) const {
    std::vector<std::string> repos = kRepos;
    std::shuffle(repos.begin(), repos.end(), rng);
    repos.pop_back();
    std::vector<Life> lives;
    const int extra = static_cast<int>(uniform(rng, 1, 2));
    for (int k = 0; k < static_cast<int>(repos.size()) + extra; ++k) {
      Life l;
      const bool first = k < static_cast<int>(repos.size());
      l.repo = first ? repos[k] : kRepos[uniform(rng, 0, kRepos.size() - 1)];
      l.label = "s" + std::to_string(trial) + "-" + l.repo + "-" + std::to_string(k);
      l.count = chance(rng, 0.25) ? 2 : 1;
      l.offset_ms = first ? uniform(rng, 0, 1500) : uniform(rng, 3000, 9000);
      l.hold_ms = uniform(rng, 0, 1000);
      lives.push_back(l);
    }
    return lives;
  }

  // Idle instances the next trial can claim: untagged ones launched and returned under reuse =
  // always, up to kReusePoolSize.
  void top_up() {
    int idle = 0;
    for (const auto& r : records()) idle += r.state == State::kIdle;
    if (idle >= kReusePoolSize) return;
    static int n = 0;
    const std::string label = "seed-" + std::to_string(++n);
    Json::Value p = provision(label, kReusePoolSize - idle, {"--set", "reuse=always"});
    ASSERT_EQ(ids_of(p).size(), static_cast<size_t>(kReusePoolSize - idle)) << write_json(p);
    CtlResult r = ctl({"--set", "reuse=always", "--json", "release", "--wait", "--label", label});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
  }

  void run_trials(bool never) {
    const uint64_t base = base_seed(kSeedVar);
    const int trials = trial_count(kTrialsVar, 2, 20);
    const char* mode = never ? "never" : "same-scope";
    std::printf("reuse races (%s): %d trial(s), base seed %llu (replay all: %s=%llu %s=%d)\n", mode, trials,
                static_cast<unsigned long long>(base), kSeedVar, static_cast<unsigned long long>(base), kTrialsVar,
                trials);
    RecordProperty("seed", std::to_string(base));
    top_up();
    if (HasFatalFailure()) return;

    ClaimWatch watch(never);
    AssignmentSampler sampler(cloud_, pool_->table(), pool_name_,
                              [&](const std::vector<InstanceRecord>& recs) { watch.observe(recs); });
    ReuseTotals t;
    int double_assignments = 0;
    size_t seen = 0, seen_watch = 0;
    for (int trial = 0; trial < trials; ++trial) {
      const uint64_t ts = base + static_cast<uint64_t>(trial);
      const std::string hint = replay_hint(kSeedVar, kTrialsVar, ts, "e2e.races_test");
      SCOPED_TRACE(hint);
      std::mt19937_64 rng(ts);
      std::vector<Life> lives = plan(rng, trial);
      for (const auto& l : lives) watch.expect(l.label, scope_of(l.repo));
      const int64_t refresh_at = uniform(rng, 0, 8000);
      CtlResult refreshed;
      max_running_ = 0;
      std::vector<std::thread> threads;
      for (auto& l : lives) threads.emplace_back([this, &l] { live(l); });
      threads.emplace_back([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(refresh_at));
        refreshed = timed({"--json", "refresh"});
      });
      for (auto& th : threads) th.join();
      ++t.trials;
      ++t.refreshes;
      t.max_concurrency = std::max(t.max_concurrency, max_running_.load());
      EXPECT_LE(refreshed.exit_code, 1) << describe(refreshed);

      std::map<std::pair<std::string, int64_t>, std::string> owner;
      int warm = 0, won = 0;
      for (auto& l : lives) {
        std::optional<Json::Value> j = try_parse_json(l.provision.out);
        if (!j || !j->isObject()) {
          ADD_FAILURE() << "provision " << l.label << " printed no report: " << describe(l.provision);
          continue;
        }
        ++t.releases;
        EXPECT_EQ(l.release.exit_code, 0) << describe(l.release);
        if (l.provision.exit_code != 0) {
          EXPECT_EQ(l.provision.exit_code, 1) << describe(l.provision);
          EXPECT_FALSE((*j)["error"].asString().empty()) << "a failed provision must say why: " << describe(l.provision);
          ++t.provisions_failed;
          ++t.failure_reasons[reason_kind((*j)["error"].asString())];
          continue;
        }
        ++t.provisions_ok;
        warm += (*j)["warm"].asInt();
        t.warm += (*j)["warm"].asInt();
        t.launched += (*j)["launched"].asInt();
        EXPECT_EQ((*j)["instances"].size(), static_cast<size_t>(l.count)) << l.provision.out;
        std::set<std::string> mine;
        for (const auto& i : (*j)["instances"]) {
          const std::string id = i["instance_id"].asString();
          const int64_t gen = i["generation"].asInt64();
          mine.insert(id);
          ++won;
          auto [it, fresh] = owner.emplace(std::make_pair(id, gen), l.label);
          if (!fresh && it->second != l.label) {
            ++double_assignments;
            ADD_FAILURE() << id << " generation " << gen << " won by both " << it->second << " and " << l.label;
          }
          // The report's own claim, checked against the tag the sampler saw it claimed with.
          const std::optional<std::string> tag = watch.tag_at_claim(id, gen);
          t.unseen_claims += !tag;
          if (tag) {
            EXPECT_TRUE(tag->empty() || *tag == scope_of(l.repo)) << l.label << " claimed " << id << " kept for " << *tag;
          }
        }
        const Json::Value job = this->job(l.job);
        ++t.jobs;
        EXPECT_EQ(job["result"].asString(), "Succeeded") << l.label << ": " << write_json(job);
        EXPECT_EQ(mine.count(instance_of_runner(job["runnerName"].asString())), 1u)
            << l.label << "'s job ran on " << job["runnerName"].asString();
        if (never) {
          // Each instance it won is retired by its release (or by the concurrent refresh, when
          // the release left it draining) and terminated in EC2.
          std::optional<Json::Value> rel = try_parse_json(l.release.out);
          for (const auto& id : mine) {
            t.retired_never += rel && (*rel)["retired_reasons"][id].asString() == "reuse-never";
            EXPECT_TRUE(eventually([&] { return record(id).state == State::kTerminated && ec2_state(id) == "terminated"; },
                                   30s))
                << id << " of " << l.label << " not terminated after its release: "
                << pool::state_name(record(id).state) << ", EC2 " << ec2_state(id) << "; release " << l.release.out;
          }
        }
      }
      for (const std::vector<std::string> v = sampler.violations(); seen < v.size(); ++seen) {
        ++double_assignments;
        ADD_FAILURE() << "sampler: " << v[seen];
      }
      for (const std::vector<std::string> v = watch.violations(); seen_watch < v.size(); ++seen_watch) {
        ADD_FAILURE() << "sampler: " << v[seen_watch];
      }
      std::printf("trial %d (seed %llu): %zu runs, max %d at once; %d instances won (%d warm)\n", trial,
                  static_cast<unsigned long long>(ts), lives.size(), max_running_.load(), won, warm);

      Json::Value rf = refresh();
      EXPECT_EQ(rf["exit_code"].asInt(), 0) << write_json(rf);
      if (never) {
        top_up();
      } else {
        CtlResult sd = ctl({"--json", "scale-down", "--idle", std::to_string(kReusePoolSize)});
        EXPECT_EQ(sd.exit_code, 0) << describe(sd);
      }
      if (HasFailure()) {
        std::printf("FAILED %s\n", hint.c_str());
        break;
      }
    }
    sampler.stop();

    std::printf("REUSE RACES SUMMARY (%s): %d trials (base seed %llu), %d provisions ok and %d failed clearly (%d "
                "warm + %d launched), %d jobs, %d releases, %d refreshes, max %d at once; %d claims seen (%d of "
                "them not seen by the sampler), %d warm by their own scope; cross-scope claims %d, claimed again "
                "under never %d, retired reuse-never by their release %d; double assignments %d; %d sampler looks\n",
                mode, t.trials, static_cast<unsigned long long>(base), t.provisions_ok, t.provisions_failed, t.warm,
                t.launched, t.jobs, t.releases, t.refreshes, t.max_concurrency, watch.claims(), t.unseen_claims,
                watch.own_scope(), watch.cross_scope(), watch.claimed_again(), t.retired_never, double_assignments,
                sampler.samples());
    for (const auto& [why, n] : t.failure_reasons) std::printf("  provision failed %d x: %s\n", n, why.c_str());
    RecordProperty("cross_scope_claims", watch.cross_scope());
    RecordProperty("double_assignments", double_assignments);
    EXPECT_EQ(watch.cross_scope(), 0);
    EXPECT_EQ(watch.claimed_again(), 0);
    EXPECT_EQ(double_assignments, 0);
  }

  std::atomic<int> running_{0}, max_running_{0};
};

class SameScopeRaces : public ReuseRaces {
  std::string more_config() const override {
    return "reuse = same-scope\nreuse_scope = repository\nmin_running_time_linux = 0s\n";
  }
};

class NeverReuseRaces : public ReuseRaces {
  std::string more_config() const override { return "reuse = never\nmin_running_time_linux = 0s\n"; }
};

TEST_F(SameScopeRaces, ConcurrentRepositoriesNeverClaimAnotherScopesInstance) { run_trials(false); }

TEST_F(NeverReuseRaces, ConcurrentReleasesTerminateAndNothingIsClaimedTwice) { run_trials(true); }

}  // namespace
}  // namespace runpool::controller::e2e
