// kill -9 at every step of `runpoolctl serve`: a warm pool of one instance serves one job of the
// scale set, and serve is killed at one of its steps — each AWS request that changes something,
// each GitHub call that does (the scale set, its session, acquiring a job, a JIT runner, removing a
// runner, acknowledging a message) — held by the local cloud before it is served or after it was
// served but not answered (crash_points_fixture.h). Another serve is then started and takes the
// lease over once it lapses. The job runs exactly once and succeeds, the instance is cleaned back
// into the pool, and after the next scheduled refresh the invariants hold: no instance without a
// record, no record without its instance, no runner without a live assignment, no pool message
// lost.
//
// CI crashes serve at two of its points, chosen anew each day (crash_points_fixture.h's plan;
// RUNPOOL_CRASH_SEED=N repeats a run's choice); RUNPOOL_RELIABILITY_FULL=1 crashes every step,
// before and after.
#include "tests/e2e/crash_points_fixture.h"
#include "tests/e2e/serve_fixture.h"

namespace runpool::controller::e2e {
namespace {

class ServeCrashPoints : public ServeTestOf<CrashPointTest> {
 protected:
  // GitHub Enterprise Server's flow: serve acquires each job, one step more than github.com's.
  std::string assignment() const override { return "acquire"; }
  // serve's steps: runpoolctl's own (its AWS writes, SQS receives, GitHub REST calls that change
  // something) and its scale-set calls that change something. Lease renewals are left out: their
  // number depends on how long a run takes (taking the lease is a conditional write like them).
  static StepFilter serve_steps() {
    StepFilter f = controller_steps();
    f.callers.push_back("scaleset");
    for (const char* op : {"createScaleSet", "updateScaleSet", "deleteScaleSet", "createSession", "refreshSession",
                           "deleteSession", "acquireJobs", "generateJitConfig", "removeRunner", "deleteMessage"}) {
      f.operations.push_back(op);
    }
    f.body_match = "^(?![\\s\\S]*lease_holder)";
    return f;
  }
};

TEST_F(ServeCrashPoints, ServeKilledAtEveryStepLosesNoJobAndLeaksNothing) {
  // The warm pool of one: an instance launched for a first job, cleaned back into the pool.
  {
    auto serve = start_ctl({"serve"});
    ASSERT_FALSE(warm_pool_of_one().empty());
    stop(*serve);
  }

  // Counting: serve's steps from its start through one warm job, until the instance is back (its
  // steps when stopped are left out: a crash there is one with no job in hand).
  arm(serve_steps(), 0, "before");
  std::vector<std::string> steps;
  {
    auto serve = start_ctl({"serve"});
    run_job("counting");
    ASSERT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s)) << states() << consoles();
    steps = counted_steps();
    disarm();
    stop(*serve);
  }
  std::printf("serve: %zu steps:", steps.size());
  for (size_t i = 0; i < steps.size(); ++i) std::printf(" %zu=%s", i + 1, steps[i].c_str());
  std::printf("\ncrash points seed %lu (RUNPOOL_CRASH_SEED=%lu repeats this choice)\n", crash_seed(), crash_seed());
  ASSERT_GT(steps.size(), 0u);

  int trials = 0, crashed = 0, survived = 0, not_reached = 0, violations_seen = 0, duplicates = 0;
  int label_n = 0;
  for (const CrashPoint& at : plan(static_cast<int>(steps.size()), 2)) {
    if (HasFatalFailure()) break;
    const int failures_before = failures();
    ++trials;
    const std::string name = "sc-" + std::to_string(++label_n);
    ASSERT_TRUE(all_back_in_pool()) << "trial " << name << " starts from a warm pool: " << states();
    const int64_t generation = lease_generation();

    arm(serve_steps(), at.k, at.when);
    auto [first, pid] = start_tracked({"serve"});
    const int64_t job_id = queue_job(set_name(), name, "true");
    std::string held;
    eventually(
        [&] {
          const Json::Value st = hold_status();
          if (st["held"]["ready"].asBool()) {
            held = held_step(st);
            kill(pid, SIGKILL);
            return true;
          }
          return job(job_id)["state"].asString() == "completed" && all_back_in_pool();
        },
        120s);
    disarm();  // drops the held request: its caller is dead
    if (held.empty()) {
      ++not_reached;
      std::printf("serve %s: step %d %s not reached\n", name.c_str(), at.k, at.when.c_str());
      stop(*first);
      continue;
    }
    ++crashed;
    const auto crashed_at = std::chrono::steady_clock::now();
    first->wait(10s);

    // The successor: takes the lease once it lapses, and finishes what the first left.
    auto second = start_ctl({"serve"});
    Json::Value j = finished_job(job_id, 120s);
    EXPECT_EQ(j["result"].asString(), "Succeeded") << "killed at " << held << ": " << write_json(j) << consoles();
    EXPECT_EQ(j["dispatches"].size(), 1u) << "run exactly once: " << write_json(j);
    EXPECT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s))
        << "killed at " << held << ", the instance is cleaned back into the pool: " << states() << consoles();
    // Then the scheduled refresh, as in every deployment: it re-advertises an instance whose
    // return to the pool was cut between its record and its pool message.
    int dup = 0;
    std::vector<std::string> v = settle_and_check({}, crashed_at, &dup);
    duplicates += dup;
    violations_seen += static_cast<int>(v.size());
    EXPECT_TRUE(v.empty()) << "serve killed at " << held << ":\n" << ::testing::PrintToString(v) << states();
    EXPECT_EQ(lease_generation(), generation + 2) << "taken by the first, then taken over once";
    stop(*second);
    survived += v.empty() && failures() == failures_before;
    std::printf("serve %s: step %d %s: killed at %s; job %s (%s), %s\n", name.c_str(), at.k, at.when.c_str(),
                held.c_str(), j["state"].asString().c_str(), j["result"].asString().c_str(),
                failures() == failures_before ? "nothing lost" : "FAILED");
    std::fflush(stdout);
  }
  std::printf("CRASH-POINTS serve       steps %zu, trials %d, crashed %d, survived %d, not reached %d, invariant "
              "violations %d, duplicate pool messages %d\n",
              steps.size(), trials, crashed, survived, not_reached, violations_seen, duplicates);
}

}  // namespace
}  // namespace runpool::controller::e2e
