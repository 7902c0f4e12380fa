// Demand-driven pools end to end on the local cloud: `runpoolctl serve` holds a runner scale set
// of the GitHub stand-in, and jobs queued with only `runs-on: <scale set>` — no provision, no
// release — run on just-in-time runners of the real runpool-agent, on instances launched cold
// for the first job and claimed warm from the pool for the next. Two controllers share the
// scale set: one serves, the other stands by and takes over when the first dies.
#include "tests/e2e/serve_fixture.h"

#include <cstdio>
#include <ctime>

namespace runpool::controller::e2e {
namespace {

using Serve = ServeTestOf<E2eTest>;

// The suite runs in github.com's flow (the service assigns the set's jobs); these tests also in
// GitHub Enterprise Server's (serve acquires each job offered).
class ServeFlows : public Serve, public ::testing::WithParamInterface<std::string> {
 protected:
  std::string assignment() const override { return GetParam(); }
};
INSTANTIATE_TEST_SUITE_P(Assignment, ServeFlows, ::testing::Values("service", "acquire"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST_P(ServeFlows, JobsOfTheScaleSetRunColdThenWarmWithNoProvisionOrRelease) {
  auto serve = start_ctl({"serve"});

  // The first job: the pool is empty, so serve launches an instance whose agent starts a JIT runner.
  Json::Value first = run_job("build", "echo left-by-job-1 > \"$GITHUB_WORKSPACE/left\"");
  const std::string runner1 = first["runnerName"].asString();
  const std::string instance = instance_of_runner(runner1);
  ASSERT_FALSE(instance.empty()) << runner1;
  EXPECT_EQ(runner1, pool::runner_name(pool_name_, instance, 1));
  // Its runner took one job and is gone; the instance is cleaned back into the pool.
  ASSERT_TRUE(eventually([&] { return back_in_pool(instance); }, 60s)) << state_of(instance) << consoles();
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());

  // The second job runs warm, on the same instance, and finds nothing of the first.
  Json::Value second = run_job("test", "test ! -e \"$GITHUB_WORKSPACE/left\"");
  EXPECT_EQ(second["runnerName"].asString(), pool::runner_name(pool_name_, instance, 2))
      << "claimed warm from the pool: the assignment after the first's clean-up";
  EXPECT_EQ(records().size(), 1u) << "nothing launched for the second job";
  ASSERT_TRUE(eventually([&] { return back_in_pool(instance); }, 60s)) << state_of(instance) << consoles();

  CtlResult status = ctl({"status"});
  EXPECT_NE(status.out.find("SCALE SET " + set_name() + "\n  0 busy, 0 armed, 0 starting, 0 cleaning; served by "),
            std::string::npos)
      << status.out;
  stop(*serve);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
  status = ctl({"--json", "status"});
  EXPECT_FALSE(parse_json(status.out, "status")["scale_sets"][0]["served"].asBool()) << "the lease was given up";
}

// Two controllers for one scale set: the first serves, the second stands by. The first is killed
// (SIGKILL: no lease given up, no session closed) while a job runs; the second takes the lease
// once it expires, waits out the dead session, hears of the job's completion the first never
// acknowledged, cleans the instance back into the pool and serves the next job warm.
TEST_F(Serve, AStandbyTakesOverFromAKilledControllerAndLosesNothing) {
  auto first = start_ctl({"serve"});
  const std::string instance = warm_pool_of_one();
  ASSERT_FALSE(instance.empty());

  auto second = start_ctl({"serve"});
  const int64_t long_job = queue_job(set_name(), "long", "sleep 3");
  ASSERT_TRUE(eventually([&] { return job(long_job)["state"].asString() == "running"; }, 60s))
      << write_json(job(long_job)) << consoles();
  first->signal(SIGKILL);
  first->wait(10s);

  Json::Value done = finished_job(long_job, 60s);
  EXPECT_EQ(done["result"].asString(), "Succeeded") << write_json(done);
  EXPECT_EQ(done["dispatches"].size(), 1u) << "never lost, never run twice: " << write_json(done);
  ASSERT_TRUE(eventually([&] { return back_in_pool(instance); }, 60s))
      << "the standby drained what the dead controller left: " << state_of(instance) << consoles();

  Json::Value next = run_job("after-takeover");
  EXPECT_EQ(instance_of_runner(next["runnerName"].asString()), instance) << "served warm by the new holder";
  ASSERT_TRUE(eventually([&] { return back_in_pool(instance); }, 60s)) << state_of(instance) << consoles();
  EXPECT_EQ(records().size(), 1u) << "nothing launched beside it";

  EXPECT_EQ(lease_generation(), 2) << "taken over once";
  stop(*second);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

// More jobs at once than the scale set may have runners: serve keeps at most
// scale_set_max_runners, and each job runs exactly once as runners come back cleaned.
TEST_F(Serve, ABurstLargerThanTheScaleSetRunsEveryJobOnce) {
  auto serve = start_ctl({"serve"});
  std::vector<int64_t> jobs;
  for (int i = 0; i < 7; ++i) jobs.push_back(queue_job(set_name(), "burst-" + std::to_string(i), "sleep 1"));
  for (int64_t id : jobs) {
    Json::Value j = finished_job(id, 180s);
    EXPECT_EQ(j["state"].asString(), "completed") << write_json(j) << consoles();
    EXPECT_EQ(j["result"].asString(), "Succeeded") << write_json(j);
    EXPECT_EQ(j["dispatches"].size(), 1u) << "run once: " << write_json(j);
  }
  EXPECT_LE(records().size(), 3u) << "never more instances than scale_set_max_runners";
  ASSERT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s))
      << consoles();
  stop(*serve);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

// The service's unpleasant paths: polls failing with 503, the queue and admin tokens expiring,
// the scale set deleted behind serve's back (GitHub deletes sets unused for a week). serve retries,
// refreshes its tokens, creates the set again and opens a new session; no job is lost.
TEST_F(Serve, OutagesExpiredTokensAndADeletedScaleSetLoseNoJob) {
  auto serve = start_ctl({"serve"});
  run_job("before");
  const int64_t set_id = scale_set_id();
  ASSERT_GT(set_id, 0) << write_json(cloud_.control("GET", "/_control/github/scalesets"));

  Json::Value fault;
  fault["operation"] = "getMessage";
  fault["status"] = 503;
  fault["count"] = 3;
  fault["retryAfterSeconds"] = 0;
  cloud_.control("POST", "/_control/github/scalesets/faults", fault);
  cloud_.control("POST", "/_control/github/scalesets/" + std::to_string(set_id) + "/expire-queue-token");
  cloud_.control("POST", "/_control/github/scalesets/expire-admin-tokens");
  run_job("through-faults");

  cloud_.control("DELETE", "/_control/github/scalesets/" + std::to_string(set_id));
  run_job("after-the-set-was-deleted");
  EXPECT_GT(scale_set_id(), set_id) << "created again";
  stop(*serve);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

// The scale set deleted just as a job of it ends, on a machine too loaded for serve or the agent
// to keep up (both paused here): the JobCompleted goes with the deleted set's queue, or is heard
// only as the set is found gone, and when serve opens the new set's session the agent still
// reports its runner busy. Once the agent reports the runner idle, serve finds that GitHub removed
// it after its job (or acts on the completion it heard), cleans the instance back into the pool
// and serves the job waiting in the new set from it, rather than counting a runner that can never
// take that job. In both assignment flows.
TEST_P(ServeFlows, AJobEndingAsTheScaleSetIsDeletedLeavesNoPhantomRunner) {
  auto serve = start_ctl({"serve"});
  const std::string instance = warm_pool_of_one();
  ASSERT_FALSE(instance.empty());
  const int64_t set_id = scale_set_id();

  const int64_t ending = queue_job(set_name(), "ends-as-the-set-goes", "sleep 2");
  ASSERT_TRUE(eventually(
      [&] {
        auto r = table_->get(instance);
        return job(ending)["state"].asString() == "running" && r && r->busy;
      },
      60s))
      << write_json(job(ending)) << consoles();
  const std::vector<pid_t> agents = pids_matching(instance, "runpool-agent --config");
  ASSERT_FALSE(agents.empty());
  for (pid_t p : agents) kill(p, SIGSTOP);
  serve->signal(SIGSTOP);
  EXPECT_EQ(finished_job(ending, 60s)["result"].asString(), "Succeeded");
  cloud_.control("DELETE", control_path_of_set(set_id));
  serve->signal(SIGCONT);

  ASSERT_TRUE(eventually(
      [&] {
        const int64_t now = scale_set_id();
        return now > set_id && cloud_.control("GET", control_path_of_set(now))["session"].isObject();
      },
      30s))
      << "the set created again and listened to" << consoles();
  const int64_t next = queue_job(set_name(), "after-the-set-was-recreated");
  ASSERT_TRUE(eventually([&] { return job(next)["scaleSet"]["state"].asString() == "assigned"; }, 30s))
      << write_json(job(next));
  EXPECT_TRUE(table_->get(instance)->busy) << "its paused agent still reports the runner busy";
  for (pid_t p : agents) kill(p, SIGCONT);

  Json::Value j = finished_job(next, 120s);
  EXPECT_EQ(j["result"].asString(), "Succeeded") << write_json(j) << states() << consoles();
  EXPECT_EQ(j["dispatches"].size(), 1u) << write_json(j);
  EXPECT_EQ(instance_of_runner(j["runnerName"].asString()), instance) << "served warm, once cleaned";
  ASSERT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s)) << states() << consoles();
  stop(*serve);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

// GitHub forgets serve's session (its broker was reported to evict sessions): the open poll and the
// queue token answer 401, the refresh 404 — named RunnerAdminException, as reported from GitHub, or
// RunnerScaleSetSessionNotFoundException. Either way serve ends the session, looks the set up
// again and opens a new one, without a restart and without handing the lease over; no job is lost.
TEST_P(ServeFlows, ASessionGitHubForgetsIsReplacedWhateverIts404IsCalled) {
  auto serve = start_ctl({"serve"});
  run_job("before");
  const int64_t set_id = scale_set_id();
  ASSERT_GT(set_id, 0) << write_json(cloud_.control("GET", "/_control/github/scalesets"));
  for (const std::string shape : {"RunnerAdminException", "RunnerScaleSetSessionNotFoundException"}) {
    Json::Value settings;
    settings["scaleSetLostSession"] = shape;
    cloud_.control("POST", "/_control/github/settings", settings);
    const std::string dropped = cloud_.control("POST", control_path_of_set(set_id) + "/drop-session")["sessionId"].asString();
    ASSERT_FALSE(dropped.empty());
    ASSERT_TRUE(eventually(
        [&] {
          const Json::Value session = cloud_.control("GET", control_path_of_set(set_id))["session"];
          return session.isObject() && session["sessionId"].asString() != dropped;
        },
        30s))
        << shape << ": a new session" << consoles();
    Json::Value j = run_job("after-" + shape);
    EXPECT_EQ(j["dispatches"].size(), 1u) << write_json(j);
  }
  EXPECT_EQ(scale_set_id(), set_id) << "the same set, looked up again";
  EXPECT_EQ(lease_generation(), 1) << "held throughout: never handed over";
  const CtlResult r = stop(*serve);
  EXPECT_NE(r.err.find("RunnerAdminException"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("looking the set up again"), std::string::npos) << r.err;
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

// The time of the first line of a runpoolctl log containing `needle` (ms since the epoch; -1: none).
int64_t log_time_ms(const std::string& log, const std::string& needle) {
  const size_t at = log.find(needle);
  if (at == std::string::npos) return -1;
  const size_t line = log.rfind('\n', at) == std::string::npos ? 0 : log.rfind('\n', at) + 1;
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(log.c_str() + line, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7) {
    return -1;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + ms;
}

// The session's polls keep failing (503 through every retry): past the bound, the holder gives
// the session and the lease up, and the standby beside it takes the lease within the lease's time,
// opens its own session and serves the next job; the first keeps away, standing by.
TEST_F(Serve, RepeatedSessionFailuresHandTheLeaseToTheStandby) {
  auto first = start_ctl({"serve"});
  run_job("before");
  const std::optional<pool::Lease> held = lease();
  ASSERT_TRUE(held && held->generation == 1);
  auto second = start_ctl({"serve"});

  // Three failed polls of three attempts each: the bound (session_fault.h), with some to spare.
  Json::Value fault;
  fault["operation"] = "getMessage";
  fault["status"] = 503;
  fault["count"] = 12;
  fault["retryAfterSeconds"] = 0;
  cloud_.control("POST", "/_control/github/scalesets/faults", fault);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually(
      [&] {
        auto l = lease();
        return l && l->holder != held->holder && l->generation == 2;
      },
      60s))
      << "the standby holds the lease" << consoles();
  std::printf("the standby held the lease %.1f s after the polls began to fail\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  Json::Value j = run_job("after-the-handover");
  EXPECT_EQ(j["dispatches"].size(), 1u) << write_json(j);
  EXPECT_EQ(lease_generation(), 2) << "the first did not take it back";
  const CtlResult a = stop(*first);
  const CtlResult b = stop(*second);
  const int64_t gave_up = log_time_ms(a.err, "giving the lease up");
  const int64_t taken = log_time_ms(b.err, "(generation 2)");
  ASSERT_GT(gave_up, 0) << a.err;
  ASSERT_GT(taken, 0) << b.err;
  EXPECT_LT(taken - gave_up, 6000) << "taken over within the lease's time (serve_lease_ttl 6s)";
  std::printf("given up → taken over: %lld ms\n", static_cast<long long>(taken - gave_up));
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

// scale_set_min_armed keeps runners started and listening with no job: a job is picked up by one
// at once, and another is armed after it. Served again with none, the armed runner beyond the
// demand is deleted from the scale set (no job is on its way to it) and its instance cleaned
// back into the pool.
TEST_F(Serve, ArmedRunnersPickJobsUpAndAreRemovedWhenNoLongerWanted) {
  auto armed_records = [&] {
    std::vector<std::string> ids;
    for (const auto& r : records()) {
      if (r.state == State::kRunning && !r.busy && r.label == set_name()) ids.push_back(r.instance_id);
    }
    return ids;
  };
  auto serve = start_ctl({"--set", "scale_set_min_armed=1", "serve"});
  ASSERT_TRUE(eventually([&] { return armed_records().size() == 1; }, 60s)) << consoles();
  const std::string armed = armed_records()[0];
  Json::Value j = run_job("picked-up");
  EXPECT_EQ(instance_of_runner(j["runnerName"].asString()), armed) << "the armed runner took it";
  ASSERT_TRUE(eventually([&] { return armed_records().size() == 1; }, 60s)) << "armed again: " << consoles();
  stop(*serve);

  auto unarmed = start_ctl({"--set", "scale_set_min_armed=0", "serve"});
  ASSERT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s))
      << consoles();
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
  stop(*unarmed);
}

// A run cancelled while the runner for its job starts: the job completes `Canceled` with no
// runner; the runner that came up for it is no longer wanted, so serve deletes it from the scale
// set and its instance is cleaned back into the pool, where the next job finds it warm.
TEST_F(Serve, AJobCancelledWhileItsRunnerStartsLeavesNothingBehind) {
  auto serve = start_ctl({"serve"});
  const int64_t id = queue_job(set_name(), "cancelled", "sleep 30");
  std::string starting;
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& r : records()) {
          if (r.label == set_name() && (r.state == State::kCreated || r.state == State::kClaimed)) starting = r.instance_id;
        }
        return !starting.empty();
      },
      60s))
      << "an instance launched for the job: " << states();
  Json::Value cancelled = cloud_.control("POST", "/_control/github/jobs/" + std::to_string(id) + "/cancel");
  EXPECT_EQ(cancelled["result"].asString(), "Canceled") << write_json(cancelled);

  ASSERT_TRUE(eventually([&] { return back_in_pool(starting); }, 60s))
      << "the unwanted runner's instance cleaned back into the pool: " << state_of(starting) << consoles();
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
  EXPECT_EQ(job(id)["dispatches"].size(), 0u) << "never run: " << write_json(job(id));

  Json::Value next = run_job("after-the-cancel");
  EXPECT_EQ(instance_of_runner(next["runnerName"].asString()), starting) << "served warm on the same instance";
  ASSERT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s)) << states() << consoles();
  EXPECT_EQ(records().size(), 1u) << "nothing launched beside it";
  stop(*serve);
}

// An instance terminated from outside while its job runs (SkipOsShutdown: no agent, no runner
// left to report): GitHub loses the job when its lock is no longer renewed; the scheduled refresh
// finds the instance gone, retires its record and deletes the runner it left; serve launches a
// new instance for the next job.
TEST_F(Serve, AnInstanceKilledMidJobIsRetiredAndTheNextJobRunsElsewhere) {
  auto serve = start_ctl({"serve"});
  const std::string instance = warm_pool_of_one();
  ASSERT_FALSE(instance.empty());

  const int64_t doomed = queue_job(set_name(), "doomed", "sleep 60");
  ASSERT_TRUE(eventually([&] { return job(doomed)["state"].asString() == "running"; }, 60s))
      << write_json(job(doomed)) << consoles();
  kill_instance(instance);
  Json::Value lost = finished_job(doomed, 60s);
  EXPECT_EQ(lost["state"].asString(), "lost") << write_json(lost);
  EXPECT_EQ(lost["dispatches"].size(), 1u) << "not run again elsewhere: " << write_json(lost);

  // Passes of the scheduled refresh: the first retires the record, the next deletes the runner
  // its terminated instance left registered.
  int passes = 0;
  ASSERT_TRUE(eventually(
      [&] {
        const Json::Value r = refresh();
        ++passes;
        const auto rec = table_->get(instance);
        return r["exit_code"].asInt() == 0 && rec && rec->state == State::kTerminated && registered_runners().empty();
      },
      60s))
      << "the scheduled refresh retires the dead instance's record and its runner: " << state_of(instance) << " "
      << ::testing::PrintToString(registered_runners());
  std::printf("the dead instance's record and runner retired in %d refresh passes\n", passes);

  Json::Value next = run_job("after-the-loss");
  EXPECT_NE(instance_of_runner(next["runnerName"].asString()), instance) << "served on a new instance";
  ASSERT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s)) << states() << consoles();
  stop(*serve);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

// Two scale sets of one pool, each served by a runpoolctl serve of its own, as the template unit
// runs them (the name by --set, the rest from the set's environment file): each set's jobs run
// once on its own runners, both sets draw on the one warm pool, each holds its own lease, and
// neither serve touches the other's instances.
TEST_F(Serve, TwoScaleSetsShareOnePoolEachServedByItsOwnProcess) {
  const std::string other = set_name() + "-b";
  auto a = start_ctl({"serve"});
  auto b = start_ctl({"--set", "scale_set_name=" + other, "serve"}, {{"RUNPOOL_SCALE_SET_MAX_RUNNERS", "2"}});
  std::vector<int64_t> jobs;
  for (int i = 0; i < 2; ++i) {
    jobs.push_back(queue_job(set_name(), "a-" + std::to_string(i), "sleep 1"));
    jobs.push_back(queue_job(other, "b-" + std::to_string(i), "sleep 1"));
  }
  for (int64_t id : jobs) {
    Json::Value j = finished_job(id, 120s);
    EXPECT_EQ(j["result"].asString(), "Succeeded") << write_json(j) << consoles();
    EXPECT_EQ(j["dispatches"].size(), 1u) << "run once: " << write_json(j);
  }
  ASSERT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s)) << states() << consoles();
  const size_t instances = records().size();
  EXPECT_LE(instances, 4u);

  // The pool is one: the other set's next job runs warm on an instance either set used.
  Json::Value warm = finished_job(queue_job(other, "b-warm", "true"), 120s);
  EXPECT_EQ(warm["result"].asString(), "Succeeded") << write_json(warm);
  EXPECT_EQ(records().size(), instances) << "nothing launched: served from the shared pool";
  ASSERT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s)) << states() << consoles();

  // One status shows both sets, served, whichever set it is configured with.
  CtlResult status = ctl({"--json", "status"});
  const Json::Value sets = parse_json(status.out, "status")["scale_sets"];
  ASSERT_EQ(sets.size(), 2u) << status.out;
  for (const Json::Value& set : sets) EXPECT_TRUE(set["served"].asBool()) << status.out;
  EXPECT_EQ(sets[0]["name"].asString(), set_name());
  EXPECT_EQ(sets[1]["name"].asString(), other);
  EXPECT_EQ(lease_generation(), 1) << "each set has a lease of its own, taken once";
  stop(*a);
  stop(*b);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

// The agent down while its JIT runner ends its job (stopped, then killed and started again, as an
// upgrade restarts it): the next agent finds the one-job runner gone and its assignment over, not
// new — the instance is cleaned back into the pool, not retired, and serves the next job warm.
TEST_F(Serve, AnAgentDownWhileItsJitRunnerEndsReturnsTheInstanceToThePool) {
  auto serve = start_ctl({"serve"});
  const std::string instance = warm_pool_of_one();
  ASSERT_FALSE(instance.empty());

  const int64_t id = queue_job(set_name(), "outlives-its-agent", "sleep 2");
  ASSERT_TRUE(eventually([&] { return job(id)["state"].asString() == "running"; }, 60s)) << consoles();
  const std::vector<pid_t> agents = pids_matching(instance, "runpool-agent --config");
  ASSERT_FALSE(agents.empty());
  for (pid_t p : agents) kill(p, SIGSTOP);
  Json::Value done = finished_job(id, 60s);
  EXPECT_EQ(done["result"].asString(), "Succeeded") << write_json(done);
  EXPECT_TRUE(eventually([&] { return pids_matching(instance, "Runner.Listener").empty(); }, 30s))
      << "the one-job runner exits after its job";
  for (pid_t p : agents) kill(p, SIGKILL);  // the boot script starts the agent again

  ASSERT_TRUE(eventually([&] { return back_in_pool(instance); }, 60s))
      << "cleaned back into the pool, not retired: " << state_of(instance) << consoles();
  Json::Value next = run_job("after-the-restart");
  EXPECT_EQ(instance_of_runner(next["runnerName"].asString()), instance) << "served warm on the same instance";
  ASSERT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s)) << states() << consoles();
  EXPECT_EQ(records().size(), 1u) << "nothing launched beside it";
  stop(*serve);
}

// A runner short while another instance is being cleaned: the warm pool is looked at first, and
// an instance idle in it is claimed at once rather than the job kept waiting for the cleaning one
// to come back (scale_set_return_wait, 5 min here).
TEST_F(Serve, AnIdleInstanceIsClaimedAtOnceWhileAnotherIsBeingCleaned) {
  auto serve = start_ctl({"--set", "scale_set_return_wait=300s", "serve"});
  // A warm pool of two: two jobs at once on two launched instances, both cleaned back.
  const int64_t a = queue_job(set_name(), "warm-a", "sleep 2");
  const int64_t b = queue_job(set_name(), "warm-b", "sleep 2");
  for (int64_t id : {a, b}) EXPECT_EQ(finished_job(id, 120s)["result"].asString(), "Succeeded") << consoles();
  ASSERT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s)) << states() << consoles();
  ASSERT_EQ(records().size(), 2u);

  // A job whose instance's agent is stopped while it runs: afterwards the instance stays in its
  // cleaning (draining, its agent not reporting).
  const int64_t first = queue_job(set_name(), "keeps-its-instance", "sleep 2");
  ASSERT_TRUE(eventually([&] { return job(first)["state"].asString() == "running"; }, 60s)) << consoles();
  const std::string cleaning = instance_of_runner(job(first)["runnerName"].asString());
  const std::vector<pid_t> agents = pids_matching(cleaning, "runpool-agent --config");
  ASSERT_FALSE(agents.empty());
  for (pid_t p : agents) kill(p, SIGSTOP);
  EXPECT_EQ(finished_job(first, 60s)["result"].asString(), "Succeeded");
  ASSERT_TRUE(eventually(
      [&] {
        auto r = table_->get(cleaning);
        return r && r->state == State::kDraining;
      },
      30s))
      << state_of(cleaning);

  Json::Value next = run_job("while-one-is-cleaned");
  EXPECT_NE(instance_of_runner(next["runnerName"].asString()), cleaning) << "served by the idle one";
  EXPECT_LT(next["startedAt"].asDouble() - next["queuedAt"].asDouble(), 30'000) << write_json(next);
  for (pid_t p : agents) kill(p, SIGCONT);
  ASSERT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s)) << states() << consoles();
  EXPECT_EQ(records().size(), 2u) << "nothing launched";
  stop(*serve);
}

}  // namespace
}  // namespace runpool::controller::e2e
