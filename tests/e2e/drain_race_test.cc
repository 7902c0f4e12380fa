// The drain race, end to end: randomized trials in which a job for an assignment's label is queued
// at a random moment around `runpoolctl release` — before the drain write, between the drain write
// and the Listener's exit, around the agent's deregistration — while a timeline sampler records
// when each of those happened. The broker dispatches the job at once to an open poll of a runner
// with its label (the drained one while it still polls), else it waits for a runner: after the
// release the label is provisioned again, as a retried workflow would, and the job's fate read
// from the broker. Per trial: ran on the drained runner / waited for the next runner (never handed
// to the drained one) / redispatched after its lock expired (late) / lost. The broker's acknowledge
// latency is drawn per trial (0, 100 or 300 ms: GitHub's round trip), as it widens the stock window.
// Drain-capable runner: zero lost, zero late. Stock runner: zero lost; the late redispatches (the
// documented acknowledge→acquire window, docs/agent.md "Known limits") are counted and reported.
//
// Seeded: RUNPOOL_DRAIN_SEED=<seed> RUNPOOL_DRAIN_TRIALS=1 replays a trial's schedule (phase and
// position in it); RUNPOOL_RELIABILITY_FULL=1 runs 30 trials per runner kind.
#include <atomic>
#include <mutex>

#include "tests/e2e/e2e_fixture.h"
#include "tests/e2e/race_trials.h"

namespace runpool::controller::e2e {
namespace {

constexpr const char* kSeedVar = "RUNPOOL_DRAIN_SEED";
constexpr const char* kTrialsVar = "RUNPOOL_DRAIN_TRIALS";

// When (epoch ms, 50 ms resolution) the test first saw each step of one drain; 0: not seen.
struct DrainTimes {
  int64_t draining = 0;        // the drain write (record draining)
  int64_t listener_gone = 0;   // no Runner.Listener process on the instance
  int64_t deregistered = 0;    // the runner gone from GitHub
  int64_t idle = 0;            // back in the pool
};

// Samples one instance's record, Listener and runner every 50 ms on its own thread.
class DrainTimeline {
 public:
  using Look = std::function<DrainTimes(const DrainTimes&, pool::DynamoStateTable&)>;
  DrainTimeline(runpool::testing::LocalCloud& cloud, const std::string& table, Look look)
      : clients_(cloud), table_(clients_.db, table), look_(std::move(look)) {
    thread_ = std::thread([this] {
      for (int i = 0; i < 4000 && !stop_; ++i) {  // bounded: ~4 min
        DrainTimes now;
        {
          std::lock_guard<std::mutex> l(mu_);
          now = times_;
        }
        DrainTimes next = look_(now, table_);
        {
          std::lock_guard<std::mutex> l(mu_);
          times_ = next;
        }
        std::this_thread::sleep_for(50ms);
      }
    });
  }
  ~DrainTimeline() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  DrainTimes times() const {
    std::lock_guard<std::mutex> l(mu_);
    return times_;
  }

 private:
  testing::CloudClients clients_;  // its own: the test's clients are not shared across threads
  pool::DynamoStateTable table_;
  Look look_;
  mutable std::mutex mu_;
  DrainTimes times_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The steps after the drain write, in the order a runner kind takes them: a drain-capable
// Listener exits by itself, then the agent deregisters; a stock runner is deregistered (the
// DELETE), then its Listener notices and exits.
struct Steps {
  const char* first;
  const char* second;
  int64_t DrainTimes::*first_at;
  int64_t DrainTimes::*second_at;
};
constexpr Steps kSentinelSteps{"Listener exit", "deregistration", &DrainTimes::listener_gone, &DrainTimes::deregistered};
constexpr Steps kStockSteps{"deregistration", "Listener exit", &DrainTimes::deregistered, &DrainTimes::listener_gone};

// The phase a moment falls in: before the drain write, drain write .. first step, first .. second
// step, after the second.
std::string phase_of(int64_t at, const DrainTimes& t, const Steps& s) {
  if (!t.draining || at < t.draining) return "0 before the drain write";
  if (!(t.*s.first_at) || at < t.*s.first_at) return std::string("1 drain write .. ") + s.first;
  if (!(t.*s.second_at) || at < t.*s.second_at) return std::string("2 ") + s.first + " .. " + s.second;
  return std::string("3 after ") + s.second;
}

struct Figures {
  int trials = 0, on_drained = 0, waited = 0, late = 0, lost = 0;
  std::map<std::string, int> queued_in, late_in;  // by phase
  std::map<int, int> at_ack, late_at_ack;         // by the broker's acknowledge latency
  std::vector<int64_t> lateness_ms;
  std::vector<std::string> late_lines;
};

class DrainRace : public E2eTest {
 protected:
  virtual bool stock() const { return false; }
  const char* kind() const { return stock() ? "stock" : "drain-capable"; }

  const Steps& steps() const { return stock() ? kStockSteps : kSentinelSteps; }

  // Milliseconds after the release started at which the drain write and the kind's two next steps
  // were seen: every trial's, after defaults measured on an idle machine. Their medians place the
  // phases for choosing a moment in one.
  std::vector<int64_t> at_draining_{150}, at_first_{600}, at_second_{1500};
  static int64_t median(std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

  // The moment (ms after the release starts; negative: before) at which a trial's job is queued: a
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
    const int trials = trial_count(kTrialsVar, 2, 30);
    std::printf("drain race (%s runner): %d trial(s), base seed %llu (replay all: %s=%llu %s=%d)\n", kind(), trials,
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
    std::printf("DRAIN RACE SUMMARY (%s runner, release): %d trials (base seed %llu): %d ran on the drained runner, "
                "%d waited for the next runner (never handed to the drained one), %d late redispatches, %d lost\n",
                kind(), f.trials, static_cast<unsigned long long>(base), f.on_drained, f.waited, f.late, f.lost);
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
    std::printf("  drain steps after the release started (medians): drain write %lld ms, %s %lld ms, %s %lld ms\n",
                static_cast<long long>(median(at_draining_)), steps().first, static_cast<long long>(median(at_first_)),
                steps().second, static_cast<long long>(median(at_second_)));
    Json::Value gh;
    gh["ackLatencyMs"] = 0;
    cloud_.control("POST", "/_control/github/settings", gh);
    RecordProperty("late_redispatches", f.late);
    RecordProperty("lost", f.lost);
    EXPECT_EQ(f.lost, 0) << "jobs lost around a drain";
    if (!stock()) {
      EXPECT_EQ(f.late, 0) << "jobs delayed by a lock expiry on a drain-capable runner";
    }
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
    const std::string label = "dr" + std::to_string(trial);

    Json::Value p = provision(label, 1);
    ASSERT_EQ(ids_of(p).size(), 1u) << write_json(p) << consoles();
    const std::string id = ids_of(p)[0];
    const std::string runner = record(id).runner_name;
    ASSERT_FALSE(runner.empty());

    int64_t start = 0;
    DrainTimeline timeline(cloud_, pool_->table(), [&](const DrainTimes& seen, pool::DynamoStateTable& table) {
      DrainTimes t = seen;
      try {
        const int64_t now = now_ms();
        auto r = table.get(id);
        if (r && !t.draining && (r->state == State::kDraining || r->state == State::kIdle)) t.draining = now;
        if (r && !t.idle && r->state == State::kIdle) t.idle = now;
        // Only once draining: a missed look (no answer) must not pass for a step.
        if (t.draining && !t.listener_gone && pids_matching(id, "Runner.Listener run").empty()) t.listener_gone = now;
        if (t.draining && !t.deregistered && registered(runner) == 0) t.deregistered = now;
      } catch (const std::exception&) {
      }
      return t;
    });
    int64_t job = 0;
    std::unique_ptr<CtlProcess> rel;
    if (at < 0) {
      job = queue_job(label, "drain-race-" + std::to_string(trial), "true", duration);
      std::this_thread::sleep_for(std::chrono::milliseconds(-at));
      start = now_ms();
      rel = start_ctl({"--json", "release", "--label", label});
    } else {
      start = now_ms();
      rel = start_ctl({"--json", "release", "--label", label});
      std::this_thread::sleep_for(std::chrono::milliseconds(at));
      job = queue_job(label, "drain-race-" + std::to_string(trial), "true", duration);
    }
    CtlResult r = rel->wait(180s);
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
    Json::Value rj = parse_json(r.out.empty() ? "{}" : r.out, "release");
    EXPECT_EQ(rj["returned"].size(), 1u) << r.out << consoles();
    eventually([&] { return timeline.times().deregistered != 0 && timeline.times().listener_gone != 0; }, 10s);
    timeline.stop();
    const DrainTimes t = timeline.times();
    EXPECT_NE(t.draining, 0) << "the drain write was never seen";
    EXPECT_NE(t.deregistered, 0) << runner << " still registered after the release";
    if (t.draining) at_draining_.push_back(t.draining - start);
    if (t.*steps().first_at) at_first_.push_back(t.*steps().first_at - start);
    if (t.*steps().second_at) at_second_.push_back(t.*steps().second_at - start);

    // Not done on the drained runner: the label's next runner (a retried provision) takes it.
    Json::Value fate = finished_job(job, 3s);
    bool reprovisioned = false;
    if (fate["state"].asString() != "completed" && fate["state"].asString() != "lost") {
      provision(label, 1);
      reprovisioned = true;
      fate = finished_job(job, 90s);
    }
    if (reprovisioned) release(label);

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
    std::printf("trial %d (seed %llu): ack %d ms, job queued %+lld ms from the release (aimed at phase %d, was %s); "
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
  void SetUp() override {
    DrainRace::SetUp();
    if (HasFatalFailure()) return;
    std::ofstream(fs::path(base_) / "runner-template" / ".standin.json", std::ios::trunc) << "{\"mode\": \"stock\"}\n";
  }
  // Before init: it renders the agent's configuration into the launch template.
  std::string more_config() const override {
    return "agent_drain_capable = false\n"
           "agent_extra = notice_poll_interval=500ms; boot_grace=60s; drain_timeout=60s; registration_timeout=60s; "
           "cleanup_timeout=2s; terminate_wait=5s; listener_restart_backoff=200ms; stock_idle_wait=3s\n";
  }
};

TEST_F(DrainRace, AJobAroundAReleaseIsNeverLostNorLateOnADrainCapableRunner) { run_trials(); }

TEST_F(DrainRaceStock, AJobAroundAReleaseIsNeverLostOnAStockRunnerAndLateRedispatchesAreCounted) { run_trials(); }

}  // namespace
}  // namespace runpool::controller::e2e
