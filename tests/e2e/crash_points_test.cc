// kill -9 at every step: runpoolctl during provision, release, scale-down and refresh, and the
// agent during a claim → job → release cycle. Each step is one request the process makes to AWS or
// GitHub, held by the local cloud before it is served or after it was served but not answered
// (crash_points_fixture.h). After each crash the interrupted command is simply run again, then the
// next refresh and the agent's bound: no instance without a live assignment, no runner without a
// live instance, no pool entry lost.
//
// CI crashes each command and the agent at one point of its run, chosen anew each day
// (crash_points_fixture.h's plan; RUNPOOL_CRASH_SEED=N repeats a run's choice);
// RUNPOOL_RELIABILITY_FULL=1 crashes every step of all four and of the agent in both modes.
#include "tests/e2e/crash_points_fixture.h"

namespace runpool::controller::e2e {
namespace {

// Figures of one command's trials, printed at the end of each test.
struct Tally {
  int steps = 0;
  int trials = 0;
  int crashed = 0;
  int survived = 0;  // crashed, run again successfully, no invariant violated
  int not_reached = 0;
  int violations = 0;
  int duplicates = 0;
};

void print_tallies(const std::map<std::string, Tally>& tallies) {
  for (const auto& [name, t] : tallies) {
    std::printf("CRASH-POINTS %-11s steps %d, trials %d, crashed %d, survived %d, not reached %d, invariant violations "
                "%d, duplicate pool messages %d\n",
                name.c_str(), t.steps, t.trials, t.crashed, t.survived, t.not_reached, t.violations, t.duplicates);
  }
  std::fflush(stdout);
}

class CrashPoints : public CrashPointTest {
 protected:
  using Check = std::function<void(const std::string& label)>;

  // One command of the cycle: run it crashed at `at` (or uninterrupted when `at` is null), run it
  // again when it was crashed, and check what it must have achieved and the invariants.
  void trial(const std::string& name, const std::vector<std::string>& args, const CrashPoint* at,
             const std::set<std::string>& assigned, const std::string& label, const Check& achieved) {
    Tally& t = tallies_[name];
    if (!at) {
      CtlResult r = ctl(args);
      ASSERT_EQ(r.exit_code, 0) << name << ": " << describe(r) << consoles();
      achieved(label);
      return;
    }
    ++t.trials;
    const int failures_before = failures();
    CrashOutcome c = crash_ctl(args, *at);
    const auto crashed_at = std::chrono::steady_clock::now();
    std::printf("%s %s: %s\n", name.c_str(), label.c_str(), c.what.c_str());
    std::fflush(stdout);
    if (!c.crashed) {
      ++t.not_reached;
      ASSERT_EQ(c.result.exit_code, 0) << name << " (nothing held): " << describe(c.result) << consoles();
      achieved(label);
      return;
    }
    ++t.crashed;
    CtlResult again = ctl(args);
    EXPECT_EQ(again.exit_code, 0) << name << " run again after " << c.what << ": " << describe(again) << consoles();
    achieved(label);
    int dup = 0;
    std::vector<std::string> v = settle_and_check(assigned, crashed_at, &dup);
    t.duplicates += dup;
    t.violations += static_cast<int>(v.size());
    t.survived += again.exit_code == 0 && v.empty() && failures() == failures_before;
    EXPECT_TRUE(v.empty()) << name << " " << c.what << ":\n" << ::testing::PrintToString(v) << consoles();
  }

  // A provision of two takes the one idle instance warm and launches one; all running.
  void provisioned(const std::string& label) {
    int running = 0;
    for (const auto& r : records()) running += r.label == label && r.state == State::kRunning;
    EXPECT_EQ(running, 2) << label << ": " << ::testing::PrintToString(state_counts());
  }
  // A release returns every instance of the label to the pool: none lost, none left assigned.
  void released(const std::string& label, const std::set<std::string>& ids) {
    for (const auto& id : ids) {
      InstanceRecord r = record(id);
      EXPECT_EQ(r.state, State::kIdle) << label << ": " << id << " is " << state_str(r.state);
      EXPECT_TRUE(r.label.empty()) << id << " still labelled " << r.label;
    }
  }
  std::set<std::string> ids_labelled(const std::string& label) {
    std::set<std::string> out;
    for (const auto& r : records()) {
      if (r.label == label && r.state == State::kRunning) out.insert(r.instance_id);
    }
    return out;
  }
  // A runner registered for an instance that never existed: refresh's ghost to delete.
  void add_ghost_runner(int n) {
    char id[32];
    std::snprintf(id, sizeof id, "i-0c0ffee%010d", n);
    Json::Value body;
    body["owner"] = "acme";
    body["repo"] = "app";
    Json::Value runner;
    runner["name"] = pool_name_ + "-" + id + "-g1";
    body["runners"].append(runner);
    cloud_.control("POST", "/_control/github/runners/bulk", body);
  }

  // Work for a refresh, the same in every cycle: what the cycle left is settled first (a pass
  // unheld), then a ghost runner to delete and a stale pool message, which makes the queue's depth
  // differ from the idle records: a sweep.
  void prepare_refresh(int n) {
    Json::Value settle = refresh();
    ASSERT_EQ(settle["exit_code"].asInt(), 0) << write_json(settle);
    add_ghost_runner(n);
    std::vector<std::string> idle = idle_ids();
    ASSERT_EQ(idle.size(), 1u) << ::testing::PrintToString(state_counts());
    send_message(message_for(idle[0], record(idle[0]).generation + 7));
  }

  // Counts one command's steps in an uninterrupted run.
  int count_steps(const std::string& name, const std::vector<std::string>& args) {
    arm(controller_steps(), 0, "before");
    CtlResult r = ctl(args);
    EXPECT_EQ(r.exit_code, 0) << name << ": " << describe(r);
    std::vector<std::string> steps = counted_steps();
    disarm();
    std::printf("%s: %zu steps:", name.c_str(), steps.size());
    for (size_t i = 0; i < steps.size(); ++i) std::printf(" %zu=%s", i + 1, steps[i].c_str());
    std::printf("\n");
    tallies_[name].steps = static_cast<int>(steps.size());
    return static_cast<int>(steps.size());
  }

  std::map<std::string, Tally> tallies_;
};

// The controller's four commands in a cycle that leaves the pool as it found it (one idle
// instance): provision 2 (one warm, one launched) → release → scale-down to an idle quota of one →
// refresh (a ghost runner to delete and a stale pool message to sweep).
TEST_F(CrashPoints, TheControllerKilledAtEveryStep) {
  // The pool of one.
  Json::Value seed = provision("cp-seed", 1);
  ASSERT_EQ(ids_of(seed).size(), 1u);
  release("cp-seed");
  int label_n = 0;
  auto scale_down_args = std::vector<std::string>{"--json", "scale-down", "--idle", "1"};
  auto refresh_args = std::vector<std::string>{"--json", "refresh"};
  int ghost_n = 0;
  const Check nothing = [](const std::string&) {};
  const Check one_idle = [&](const std::string&) {
    EXPECT_EQ(idle_ids().size(), 1u) << ::testing::PrintToString(state_counts());
  };

  // Counting cycle: each command's steps, uninterrupted.
  std::string label = "cp-" + std::to_string(++label_n);
  const int np = count_steps("provision", provision_args(label, 2));
  provisioned(label);
  const std::set<std::string> counted = ids_labelled(label);
  const int nr = count_steps("release", {"--json", "release", "--wait", "--label", label});
  released(label, counted);
  const int ns = count_steps("scale-down", scale_down_args);
  prepare_refresh(++ghost_n);
  const int nf = count_steps("refresh", refresh_args);
  ASSERT_GT(np, 0);
  ASSERT_GT(nr, 0);
  {
    std::vector<std::string> v = violations({});
    ASSERT_TRUE(v.empty()) << "after the uninterrupted cycle: " << ::testing::PrintToString(v);
  }

  // The trials, one crash point of each command per cycle; a command out of points runs whole.
  std::printf("crash points seed %lu (RUNPOOL_CRASH_SEED=%lu repeats this choice)\n", crash_seed(), crash_seed());
  const auto pp = plan(np, 1), pr = plan(nr, 1), ps = plan(ns, 1), pf = plan(nf, 1);
  const size_t cycles = std::max({pp.size(), pr.size(), ps.size(), pf.size()});
  auto at = [](const std::vector<CrashPoint>& p, size_t i) { return i < p.size() ? &p[i] : nullptr; };
  for (size_t i = 0; i < cycles && !HasFatalFailure(); ++i) {
    label = "cp-" + std::to_string(++label_n);
    ASSERT_EQ(idle_ids().size(), 1u) << "cycle " << i << " starts from a pool of one: "
                                     << ::testing::PrintToString(state_counts());
    trial("provision", provision_args(label, 2), at(pp, i), {label}, label,
          [&](const std::string& l) { provisioned(l); });
    const std::set<std::string> ids = ids_labelled(label);
    trial("release", {"--json", "release", "--wait", "--label", label}, at(pr, i), {}, label,
          [&](const std::string& l) { released(l, ids); });
    // Claims of this cycle may have hidden a message for claim_visibility: scale-down does not
    // care, but the invariants read the queue.
    trial("scale-down", scale_down_args, at(ps, i), {}, label, one_idle);
    prepare_refresh(++ghost_n);
    trial("refresh", refresh_args, at(pf, i), {}, label, nothing);
  }
  std::this_thread::sleep_for(kSettle);
  refresh();
  std::vector<std::string> v = violations({});
  EXPECT_TRUE(v.empty()) << "at the end: " << ::testing::PrintToString(v);
  print_tallies(tallies_);
}

// The agent killed at each of its steps of a claim → job → release cycle (register, take the
// token, drain, deregister, report drained), then restarted as systemd would (the boot script's
// loop). The job runs to success, the provision and the release succeed (run again where they
// failed), and the invariants hold; the instance is either back in the pool or replaced.
TEST_F(CrashPoints, TheAgentKilledAtEveryStep) {
  Json::Value seed = provision("ca-seed", 1);
  ASSERT_EQ(ids_of(seed).size(), 1u);
  release("ca-seed");
  int label_n = 0;
  Tally& t = tallies_["agent"];

  // One cycle on the pool's one instance; with a hold armed at `at`, the agent is killed when its
  // step is held and the request dropped. The step held ("" when none was reached).
  auto cycle = [&](const std::string& label, const CrashPoint* at, std::string& fate) -> std::string {
    std::vector<std::string> idle = idle_ids();
    EXPECT_EQ(idle.size(), 1u) << ::testing::PrintToString(state_counts());
    if (idle.empty()) return "";
    const std::string x = idle[0];
    arm(agent_steps(x), at ? at->k : 0, at ? at->when : "before");
    std::string held;
    // Polls `done` and the hold: kills the agent once its step is held.
    auto drive = [&](const std::function<bool()>& done, std::chrono::milliseconds timeout) {
      return eventually(
          [&] {
            if (at && held.empty()) {
              Json::Value st = hold_status();
              if (st["held"]["ready"].asBool()) {
                held = held_step(st);
                for (pid_t p : pids_matching(x, "runpool-agent --config")) kill(p, SIGKILL);
                disarm();
              }
            }
            return done();
          },
          timeout);
    };
    auto run = [&](const std::vector<std::string>& args) {
      auto [proc, pid] = start_tracked(args);
      drive([&, pid = pid] { return !running(pid); }, 180s);
      CtlResult r = proc->wait(10s);
      if (r.exit_code != 0) {
        std::printf("  %s failed after the agent's crash; run again: %s\n", args[1].c_str(),
                    r.err.substr(r.err.size() > 300 ? r.err.size() - 300 : 0).c_str());
        r = ctl(args);
      }
      EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
    };
    // Queued first: the job is dispatched as soon as the Listener listens, so a crash after the
    // Listener started meets the job in hand.
    const int64_t job_id = queue_job(label, "through-the-crash", "true", 1500);
    run(provision_args(label, 1));
    drive(
        [&] {
          std::string s = job(job_id)["state"].asString();
          return s == "completed" || s == "lost";
        },
        90s);
    Json::Value j = job(job_id);
    EXPECT_EQ(j["result"].asString(), "Succeeded") << write_json(j) << console(x);
    run({"--json", "release", "--wait", "--label", label});
    const InstanceRecord r = record(x);
    fate = "job " + j["state"].asString() + " (" + j["result"].asString() + "), instance " +
           (r.state == State::kIdle ? std::string("back in the pool") : "replaced (" + state_str(r.state) + ")");
    return held;
  };

  // Counting: the agent's steps in an uninterrupted cycle.
  std::string fate;
  cycle("ca-" + std::to_string(++label_n), nullptr, fate);
  std::vector<std::string> steps = counted_steps();
  disarm();
  std::printf("agent: %zu steps:", steps.size());
  for (size_t i = 0; i < steps.size(); ++i) std::printf(" %zu=%s", i + 1, steps[i].c_str());
  std::printf("\n");
  t.steps = static_cast<int>(steps.size());
  ASSERT_GT(t.steps, 0);

  std::printf("crash points seed %lu (RUNPOOL_CRASH_SEED=%lu repeats this choice)\n", crash_seed(), crash_seed());
  for (const CrashPoint& at : plan(t.steps, 1)) {
    if (HasFatalFailure()) break;
    const int failures_before = failures();
    const std::string label = "ca-" + std::to_string(++label_n);
    ++t.trials;
    const auto started = std::chrono::steady_clock::now();
    std::string held = cycle(label, &at, fate);
    disarm();
    std::printf("agent %s: step %d %s: %s; %s\n", label.c_str(), at.k, at.when.c_str(),
                held.empty() ? "not reached" : ("killed at " + held).c_str(), fate.c_str());
    std::fflush(stdout);
    if (held.empty()) {
      ++t.not_reached;
      continue;
    }
    ++t.crashed;
    int dup = 0;
    std::vector<std::string> v = settle_and_check({}, started, &dup);
    t.duplicates += dup;
    t.violations += static_cast<int>(v.size());
    t.survived += v.empty() && failures() == failures_before;
    EXPECT_TRUE(v.empty()) << "agent killed at " << held << ":\n" << ::testing::PrintToString(v) << consoles();
  }
  print_tallies(tallies_);
}

}  // namespace
}  // namespace runpool::controller::e2e
