// The drain race, end to end: randomized trials in which a job for an assignment's label is queued
// at a random moment around `runpoolctl release` — before the drain write, between the drain write
// and the Listener's exit, around the agent's deregistration — while a timeline sampler records
// when each of those happened. The broker dispatches the job at once to an open poll of a runner
// with its label (the drained one while it still polls), else it waits for a runner: after the
// release the label is provisioned again, as a retried workflow would, and the job's fate read
// from the broker. Per trial: ran on the drained runner / waited for the next runner (never handed
// to the drained one) / redispatched after its lock expired (late) / lost. The broker's acknowledge
// latency is drawn per trial (0, 100 or 300 ms: GitHub's round trip), as it widens the stock window.
// Each trial's runner is a stock build or a drain-file build (actions/runner pull request #4708):
// the agent detects the latter's drain inputs, which refuse its persistent runners, so both drain
// the stock way — runpoolctl removes the runner's labels at the drain write, the agent waits out
// one long poll, then until idle, then deregisters. Zero lost; late redispatches (the
// acknowledge→acquire window, docs/agent.md "Known limits") are counted and reported.
//
// The same trials around `runpoolctl scale-down`'s drain of an idle shared runner (DrainRaceShared*).
//
// Seeded: RUNPOOL_DRAIN_SEED=<seed> RUNPOOL_DRAIN_TRIALS=1 replays a trial's schedule (phase and
// position in it); RUNPOOL_RELIABILITY_FULL=1 runs 30 trials per runner kind and drain.
#include "tests/e2e/drain_timeline.h"
#include "tests/e2e/race_trials.h"

namespace runpool::controller::e2e {
namespace {

constexpr const char* kSeedVar = "RUNPOOL_DRAIN_SEED";
constexpr const char* kTrialsVar = "RUNPOOL_DRAIN_TRIALS";

struct Figures {
  int trials = 0, on_drained = 0, waited = 0, late = 0, lost = 0, kept_busy = 0;
  std::map<std::string, int> queued_in, late_in;  // by phase
  std::map<int, int> at_ack, late_at_ack;         // by the broker's acknowledge latency
  std::vector<int64_t> lateness_ms;
  std::vector<std::string> late_lines;
};

// The agent of a stock runner (later lines of the pool's configuration win).
// `sweep`: the fixture's job-user settings (clean_sweep_roots()).
std::string stock_agent(const std::string& sweep) {
  return "agent_extra = notice_poll_interval=500ms; boot_grace=60s; drain_signal_timeout=60s; config_sh_timeout=60s; "
         "cleanup_timeout=2s; terminate_wait=5s; listener_restart_backoff=200ms; stock_idle_wait=3s; drain_poll_wait=" +
         drain_poll_wait() + "; " + sweep + "\n";
}

class DrainRace : public E2eTest {
 protected:
  virtual bool stock() const { return false; }
  const char* kind() const { return stock() ? "stock" : "drain-file"; }
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure()) return;
    use_runner_build(kind());
  }
  // Before init: it renders the agent's configuration into the launch template.
  std::string more_config() const override { return stock_agent(clean_sweep_roots()); }

  // Both builds drain the stock way (above).
  const Steps& steps() const { return kStockSteps; }

  // ---- the drain of this pool mode: release of a run-scoped assignment

  virtual const char* drain_name() const { return "release"; }
  virtual int ci_trials() const { return 2; }
  static std::string label_of(int trial) { return "dr" + std::to_string(trial); }
  // The serving instance of the trial (provisioned; warm from the pool after the first trial).
  virtual std::string assign(int trial) {
    const std::vector<std::string> ids = ids_of(provision(label_of(trial), 1));
    return ids.size() == 1 ? ids[0] : "";
  }
  virtual int64_t queue(int trial, int duration_ms) {
    return queue_job(label_of(trial), "drain-race-" + std::to_string(trial), "true", duration_ms);
  }
  virtual std::unique_ptr<CtlProcess> start_drain(int trial) {
    return start_ctl({"--json", "release", "--wait", "--label", label_of(trial)});
  }
  // Checks the drain command's result; false when it left the instance serving (a busy runner).
  virtual bool drained(const CtlResult& r, const std::string&) {
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
    Json::Value j = parse_json(r.out.empty() ? "{}" : r.out, "release");
    EXPECT_EQ(j["returned"].size(), 1u) << r.out << consoles();
    return true;
  }
  // A runner for a job the drained one did not take: the step retried (provisioned again).
  virtual void next_runner(int trial) { provision(label_of(trial), 1); }
  virtual void after_next_runner(int trial) { release(label_of(trial)); }

  // Milliseconds after the drain command started at which the drain write and the kind's two next steps
  // were seen: every trial's, after defaults measured on an idle machine. Their medians place the
  // phases for choosing a moment in one.
  std::vector<int64_t> at_draining_{150}, at_first_{600}, at_second_{1500};
  static int64_t median(std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

  // The moment (ms after the drain command starts; negative: before) at which a trial's job is queued: a
  // phase drawn from the seed, and a position in it.
  int64_t moment(std::mt19937_64& rng, int* aimed) {
    const int64_t d = median(at_draining_), a = std::max(median(at_first_), d + 100),
                  b = std::max(median(at_second_), a + 100);
    *aimed = static_cast<int>(uniform(rng, 0, 3));
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    const int64_t lo[] = {-1500, d, a, b}, hi[] = {d, a, b, b + 1500};
    return lo[*aimed] + static_cast<int64_t>(u * static_cast<double>(hi[*aimed] - lo[*aimed]));
  }

  void run_trials() {
    const uint64_t base = base_seed(kSeedVar);
    const int trials = trial_count(kTrialsVar, ci_trials(), 30);
    std::printf("drain race (%s runner, %s): %d trial(s), base seed %llu (replay all: %s=%llu %s=%d)\n", kind(),
                drain_name(), trials,
                static_cast<unsigned long long>(base), kSeedVar, static_cast<unsigned long long>(base), kTrialsVar,
                trials);
    RecordProperty("seed", std::to_string(base));
    Figures f;
    for (int trial = 0; trial < trials; ++trial) {
      const uint64_t ts = base + static_cast<uint64_t>(trial);
      const std::string hint = replay_hint(kSeedVar, kTrialsVar, ts, "e2e.drain_race_test");
      SCOPED_TRACE(hint);
      one_trial(ts, trial, f);
      if (HasFailure()) {
        std::printf("FAILED %s\n", hint.c_str());
        break;
      }
    }
    std::printf("DRAIN RACE SUMMARY (%s runner, %s): %d drains (base seed %llu): %d ran on the drained runner, "
                "%d waited for the next runner (never handed to the drained one), %d late redispatches, %d lost; "
                "%d more trials found the runner busy (kept, no drain)\n",
                kind(), drain_name(), f.trials, static_cast<unsigned long long>(base), f.on_drained, f.waited, f.late,
                f.lost, f.kept_busy);
    for (const auto& [phase, n] : f.queued_in) {
      std::printf("  queued %-36s %2d trial(s), %d late\n", phase.c_str(), n, f.late_in[phase]);
    }
    for (const auto& [ack, n] : f.at_ack) {
      std::printf("  acknowledge latency %4d ms: %2d trial(s), %d late\n", ack, n, f.late_at_ack[ack]);
    }
    if (!f.lateness_ms.empty()) {
      std::sort(f.lateness_ms.begin(), f.lateness_ms.end());
      std::printf("  held by the drained runner's lock: min %lld ms, median %lld ms, max %lld ms\n",
                  static_cast<long long>(f.lateness_ms.front()), static_cast<long long>(median(f.lateness_ms)),
                  static_cast<long long>(f.lateness_ms.back()));
    }
    for (const auto& line : f.late_lines) std::printf("  %s\n", line.c_str());
    std::printf("  drain steps after the drain command started (medians): drain write %lld ms, %s %lld ms, %s %lld ms\n",
                static_cast<long long>(median(at_draining_)), steps().first, static_cast<long long>(median(at_first_)),
                steps().second, static_cast<long long>(median(at_second_)));
    Json::Value gh;
    gh["ackLatencyMs"] = 0;
    cloud_.control("POST", "/_control/github/settings", gh);
    RecordProperty("late_redispatches", f.late);
    RecordProperty("lost", f.lost);
    EXPECT_EQ(f.lost, 0) << "jobs lost around a drain";
  }

  void one_trial(uint64_t ts, int trial, Figures& f) {
    std::mt19937_64 rng(ts);
    int aimed = 0;
    const int64_t at = moment(rng, &aimed);
    const int duration = static_cast<int>(uniform(rng, 200, 1500));
    // The acknowledge round trip GitHub's answer takes (0 on the local cloud): it widens the
    // window between a job's dispatch and its acquire, in which a stock runner's DELETE loses it.
    static const int kAckMs[] = {0, 100, 300};
    const int ack_ms = kAckMs[uniform(rng, 0, 2)];
    Json::Value gh;
    gh["ackLatencyMs"] = ack_ms;
    cloud_.control("POST", "/_control/github/settings", gh);
    const std::string id = assign(trial);
    ASSERT_FALSE(id.empty()) << consoles();
    const std::string runner = record(id).runner_name;
    ASSERT_FALSE(runner.empty());

    int64_t start = 0;
    const int64_t generation = record(id).generation;
    DrainTimeline timeline(cloud_, pool_->table(), [&](const DrainTimes& seen, pool::DynamoStateTable& table) {
      DrainTimes t = seen;
      try {
        const int64_t now = now_ms();
        auto r = table.get(id);
        if (r && !t.draining && (r->generation != generation || r->state != State::kRunning)) t.draining = now;
        // Only once draining: a missed look (no answer) must not pass for a step.
        if (t.draining && !t.listener_gone && pids_matching(id, "Runner.Listener run").empty()) t.listener_gone = now;
        if (t.draining && !t.deregistered && registered(runner) == 0) t.deregistered = now;
      } catch (const std::exception&) {
      }
      return t;
    });
    int64_t job = 0;
    std::unique_ptr<CtlProcess> drain;
    if (at < 0) {
      job = queue(trial, duration);
      std::this_thread::sleep_for(std::chrono::milliseconds(-at));
      start = now_ms();
      drain = start_drain(trial);
    } else {
      start = now_ms();
      drain = start_drain(trial);
      std::this_thread::sleep_for(std::chrono::milliseconds(at));
      job = queue(trial, duration);
    }
    if (!drained(drain->wait(180s), id)) {
      // The job was in hand when the pass looked (busy): no drain to race. It runs; the runner
      // serves the next trial.
      timeline.stop();
      Json::Value fate = finished_job(job, 60s);
      EXPECT_EQ(fate["result"].asString(), "Succeeded") << write_json(fate);
      ++f.kept_busy;
      std::printf("trial %d (seed %llu): job queued %+lld ms from the drain command (aimed at phase %d): busy when "
                  "the pass looked, kept (no drain): %s on %s\n",
                  trial, static_cast<unsigned long long>(ts), static_cast<long long>(fate["queuedAt"].asInt64() - start),
                  aimed, fate["result"].asString().c_str(), fate["runnerName"].asString().c_str());
      return;
    }
    eventually([&] { return timeline.times().deregistered != 0 && timeline.times().listener_gone != 0; }, 10s);
    timeline.stop();
    const DrainTimes t = timeline.times();
    EXPECT_NE(t.draining, 0) << "the drain write was never seen";
    EXPECT_NE(t.deregistered, 0) << runner << " still registered after the drain";
    if (t.draining) at_draining_.push_back(t.draining - start);
    if (t.*steps().first_at) at_first_.push_back(t.*steps().first_at - start);
    if (t.*steps().second_at) at_second_.push_back(t.*steps().second_at - start);

    // Not done on the drained runner: the next runner for its labels takes it.
    Json::Value fate = finished_job(job, 3s);
    if (fate["state"].asString() != "completed" && fate["state"].asString() != "lost") {
      next_runner(trial);
      fate = finished_job(job, 90s);
      after_next_runner(trial);
    }

    bool handed = false, expired = false;
    int64_t handed_at = 0, held_ms = 0;  // the drained runner's dispatch; how long its lock held the job
    for (const auto& d : fate["dispatches"]) {
      if (d["runnerName"].asString() != runner) continue;
      if (!handed) handed_at = d["at"].asInt64();
      handed = true;
      if (!d["expiredAt"].isNull()) {
        expired = true;
        held_ms = d["expiredAt"].asInt64() - d["at"].asInt64();
      }
    }
    const int64_t queued_at = fate["queuedAt"].asInt64();
    const std::string phase = phase_of(handed ? handed_at : queued_at, t, steps());
    const std::string queued_phase = phase_of(queued_at, t, steps());
    ++f.trials;
    ++f.queued_in[queued_phase];
    ++f.at_ack[ack_ms];
    std::string outcome;
    const std::string state = fate["state"].asString();
    if (state != "completed") {
      ++f.lost;
      outcome = "LOST (" + state + ")";
      ADD_FAILURE() << "job " << job << " " << state << ": " << write_json(fate) << consoles();
    } else {
      EXPECT_EQ(fate["result"].asString(), "Succeeded") << write_json(fate);
      if (expired) {
        ++f.late;
        ++f.late_in[queued_phase];
        ++f.late_at_ack[ack_ms];
        f.lateness_ms.push_back(held_ms);
        outcome = "LATE: handed to the drained runner " + phase + " and never acquired; its lock expired " +
                  std::to_string(held_ms) + " ms later (GitHub: 10-15 min), started " +
                  std::to_string(fate["startLatencyMs"].asInt64()) + " ms after queueing";
        f.late_lines.push_back("trial " + std::to_string(trial) + " (seed " + std::to_string(ts) + "): " + outcome);
      } else if (fate["runnerName"].asString() == runner) {
        ++f.on_drained;
        outcome = "ran on the drained runner";
      } else {
        ++f.waited;
        outcome = "waited for the next runner";
        EXPECT_FALSE(handed) << "handed to the drained runner and redispatched without a lock expiry? "
                             << write_json(fate);
      }
    }
    std::printf("trial %d (seed %llu): ack %d ms, job queued %+lld ms from the drain command (aimed at phase %d, was %s); "
                "drain write +%lld, Listener exit +%lld, deregistered +%lld: %s\n",
                trial, static_cast<unsigned long long>(ts), ack_ms, static_cast<long long>(queued_at - start), aimed,
                queued_phase.c_str(), static_cast<long long>(t.draining - start),
                static_cast<long long>(t.listener_gone - start), static_cast<long long>(t.deregistered - start),
                outcome.c_str());
    EXPECT_EQ(registered(runner), 0) << runner << " left registered";
  }

  // How many runners named `name` GitHub has (0 or 1).
  int registered(const std::string& name) {
    const Json::Value all = cloud_.control("GET", "/_control/github/runners");
    int n = 0;
    for (const auto& r : all["runners"]) n += r["name"].asString() == name;
    return n;
  }
};

class DrainRaceStock : public DrainRace {
 protected:
  bool stock() const override { return true; }
};

// The same race around scale-down's drain of an idle shared runner (pool_mode = shared): the
// drained instance is terminated; the job's next runner comes from scale-up, and serves the next
// trial. A runner already busy when the pass looks is kept (no drain: counted apart).
class DrainRaceShared : public DrainRace {
 protected:
  std::string more_config() const override {
    return DrainRace::more_config() + "pool_mode = shared\nscale_down_drain_wait = 60s\nmin_running_time_linux = 0s\n";
  }
  const char* drain_name() const override { return "scale-down"; }
  int ci_trials() const override { return 1; }  // each drain terminates its instance: a cold launch per trial
  std::string assign(int) override {
    // A runner that has just finished a job may still report busy: scale-up would count it out
    // of the idle ones and launch another.
    eventually(
        [&] {
          for (const auto& r : records()) {
            if (r.state == State::kRunning && r.busy) return false;
          }
          return true;
        },
        30s);
    scale_up();
    std::string id;
    int serving = 0;
    for (const auto& r : records()) {
      if (r.state == State::kRunning) {
        id = r.instance_id;
        ++serving;
      }
    }
    EXPECT_EQ(serving, 1) << consoles();
    if (serving != 1) return "";
    // scale-down reads a runtime on its own AWS-clock estimate (1 s resolution): a record under a
    // second old can read as too young even with no minimum running time.
    const int64_t wait = std::min<int64_t>(record(id).created_ms + 2000 - now_ms(), 2000);
    if (wait > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    return id;
  }
  int64_t queue(int trial, int duration_ms) override {
    Json::Value body;
    for (const char* l : {"self-hosted", "linux", "x64", "small"}) body["labels"].append(l);
    body["name"] = "drain-race-" + std::to_string(trial);
    body["durationMs"] = duration_ms;
    body["owner"] = "acme";
    body["repo"] = "app";
    body["run"] = "true";
    return cloud_.control("POST", "/_control/github/jobs", body)["id"].asInt64();
  }
  std::unique_ptr<CtlProcess> start_drain(int) override { return start_ctl({"--json", "scale-down", "--idle", "0"}); }
  bool drained(const CtlResult& r, const std::string& id) override {
    const State s = record(id).state;
    if (s == State::kRunning) {  // kept: busy at the plan, the GET, or the drain's conditional write
      EXPECT_LE(r.exit_code, 1) << describe(r);
      const Json::Value j = parse_json(r.out.empty() ? "{}" : r.out, "scale-down");
      for (const auto& d : j["decisions"]) {
        if (d["instance_id"].asString() == id) std::printf("  scale-down kept it: %s\n", write_json(d).c_str());
      }
      return false;
    }
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
    EXPECT_TRUE(eventually([&] { return ec2_state(id) == "terminated"; }, 60s)) << ec2_state(id);
    return true;
  }
  void next_runner(int) override { scale_up(); }
  void after_next_runner(int) override {}

 private:
  void scale_up() {
    CtlResult r = ctl({"--json", "scale-up", "--to", "1", "--resource-class", "small"});
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
  }
};

class DrainRaceSharedStock : public DrainRaceShared {
 protected:
  bool stock() const override { return true; }
};

TEST_F(DrainRace, AJobAroundAReleaseIsNeverLostOnADrainFileRunnerAndLateRedispatchesAreCounted) { run_trials(); }

TEST_F(DrainRaceStock, AJobAroundAReleaseIsNeverLostOnAStockRunnerAndLateRedispatchesAreCounted) { run_trials(); }

TEST_F(DrainRaceShared, AJobAroundAScaleDownIsNeverLostOnADrainFileRunnerAndLateRedispatchesAreCounted) {
  run_trials();
}

TEST_F(DrainRaceSharedStock, AJobAroundAScaleDownIsNeverLostOnAStockRunnerAndLateRedispatchesAreCounted) {
  run_trials();
}

}  // namespace
}  // namespace runpool::controller::e2e
