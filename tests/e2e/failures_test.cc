// Things dying mid-assignment, end to end: an instance terminated from outside while it runs a
// job, the agent killed (kill -9) while its runner runs a job, the Listener killed likewise. The
// broker says what became of each job; the run still releases; nothing is left registered; and a
// crashed-but-recovered instance is clean and claimed warm by the next provision. And a runner GitHub
// will not let its agent deregister, deleted by release instead.
#include "tests/e2e/e2e_fixture.h"

namespace runpool::controller::e2e {
namespace {

class Failures : public E2eTest {
 protected:
  // Waits until the job runs (acquired); the instance whose runner runs it.
  std::string running_on(int64_t id) {
    EXPECT_TRUE(eventually([&] { return job(id)["state"].asString() == "running"; }, 30s))
        << write_json(job(id)) << consoles();
    return instance_of_runner(job(id)["runnerName"].asString());
  }
  // The job's fate as the broker records it, for the test's output.
  static std::string fate(const Json::Value& j) {
    std::string s = j["state"].asString();
    if (!j["result"].asString().empty()) s += " (" + j["result"].asString() + ")";
    return s + ", " + std::to_string(j["dispatches"].size()) + " dispatch(es), on " + j["runnerName"].asString();
  }
  // After a crash: release returns the instance clean, the next provision claims it warm, and a
  // job there finds nothing of the crashed run's.
  void released_clean_and_reused(const std::string& id, const std::string& label, const std::string& next_label) {
    Json::Value rel = release(label);
    ASSERT_EQ(rel["returned"].size(), 1u) << write_json(rel) << console(id);
    EXPECT_EQ(rel["returned"][0].asString(), id);
    EXPECT_EQ(record(id).state, State::kIdle);
    EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());

    Json::Value again = provision(next_label, 1);
    ASSERT_EQ(ids_of(again), std::vector<std::string>{id}) << write_json(again);
    EXPECT_EQ(again["warm"].asInt(), 1);
    int64_t j = queue_job(next_label, "after-the-crash",
                          "test ! -e \"$GITHUB_WORKSPACE/left-by-crashed-run\" && ! pgrep -f left-by-crashed-run");
    Json::Value done = finished_job(j);
    EXPECT_EQ(done["result"].asString(), "Succeeded") << "found the crashed run's leftovers: " << write_json(done);
    EXPECT_EQ(instance_of_runner(done["runnerName"].asString()), id);
    Json::Value rel2 = release(next_label);
    EXPECT_EQ(rel2["returned"].size(), 1u) << write_json(rel2);
    EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
  }
  // The job every crash test runs: leaves a file and an escaped process, then works a while.
  static std::string leaving_traces() {
    return "echo x > \"$GITHUB_WORKSPACE/left-by-crashed-run\"; "
           "RUNNER_TRACKING_ID= nohup bash -c 'exec -a left-by-crashed-run sleep 600' >/dev/null 2>&1 &";
  }
};

// TerminateInstances from outside (SkipOsShutdown: no SIGTERM reaches the runner) while a job
// runs there. The broker loses the job when its lock runs out; the other runner of the label keeps
// serving; release ends promptly — the dead instance's record closed, the live one pooled — and
// refresh leaves no ghost runner.
TEST_F(Failures, AnInstanceKilledWhileRunningAJob) {
  Json::Value p = provision("killed-1", 2);
  ASSERT_EQ(ids_of(p).size(), 2u);
  int64_t long_job = queue_job("killed-1", "long", "true", 60'000);
  const std::string victim = running_on(long_job);
  ASSERT_FALSE(victim.empty());
  const std::vector<std::string> ids = ids_of(p);
  const std::string survivor = ids[0] == victim ? ids[1] : ids[0];
  const std::string victim_runner = job(long_job)["runnerName"].asString();

  const int64_t killed_at = now_ms();
  kill_instance(victim);
  ASSERT_TRUE(eventually([&] { return ec2_state(victim) == "terminated"; }, 10s)) << ec2_state(victim);
  Json::Value lost = finished_job(long_job, 30s);
  EXPECT_EQ(lost["state"].asString(), "lost") << write_json(lost);
  std::printf("job on the killed instance: %s, %.1fs after the kill\n", fate(lost).c_str(),
              static_cast<double>(now_ms() - killed_at) / 1000);

  // The label's other runner still takes its jobs.
  int64_t next = queue_job("killed-1", "after-the-kill");
  Json::Value after = finished_job(next);
  EXPECT_EQ(after["result"].asString(), "Succeeded") << write_json(after);
  EXPECT_EQ(instance_of_runner(after["runnerName"].asString()), survivor);

  // Release finishes without waiting out release_timeout (90 s) for an agent that is gone.
  const auto started = std::chrono::steady_clock::now();
  Json::Value rel = release("killed-1");
  const double release_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("release with one instance dead: %.1fs — %s\n", release_s, write_json(rel).c_str());
  EXPECT_LT(release_s, 20.0);
  EXPECT_EQ(write_json(rel["returned"]), "[\"" + survivor + "\"]") << write_json(rel);
  EXPECT_EQ(write_json(rel["gone"]), "[\"" + victim + "\"]") << write_json(rel);
  EXPECT_EQ(record(victim).state, State::kTerminated);
  EXPECT_EQ(record(survivor).state, State::kIdle);

  // The dead runner is still registered (it never deregistered): refresh removes it.
  auto before = registered_runners();
  EXPECT_EQ(before, std::vector<std::string>{victim_runner});
  Json::Value r = refresh();
  EXPECT_EQ(r["exit_code"].asInt(), 0) << write_json(r);
  EXPECT_EQ(action(r, "delete-runner", victim_runner)["outcome"].asString(), "done") << write_json(r);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
  EXPECT_EQ(record(victim).state, State::kTerminated);
  EXPECT_EQ(record(survivor).state, State::kIdle);
  EXPECT_EQ(queue_bodies(), std::vector<std::string>{message_for(survivor, record(survivor).generation)});
}

// kill -9 of the agent while its runner runs a job: the Listener and the job carry on, the
// restarted agent follows that same Listener (same registration, same process: interrupting it
// could cancel a job reaching it right then), the job completes, the next one runs on it, and the
// instance releases and is reused clean.
TEST_F(Failures, AnAgentKilledWhileAJobRuns) {
  Json::Value p = provision("agent-crash-1", 1);
  ASSERT_EQ(ids_of(p).size(), 1u);
  const std::string id = ids_of(p)[0];
  const int64_t runner_id = record(id).runner_id;
  int64_t j = queue_job("agent-crash-1", "long", leaving_traces(), 4000);
  ASSERT_EQ(running_on(j), id);
  ASSERT_TRUE(eventually([&] { return record(id).busy; }, 10s)) << "the agent reports the job";
  auto agents = pids_matching(id, "runpool-agent --config");
  ASSERT_EQ(agents.size(), 1u) << console(id);
  const auto listener = pids_matching(id, "Runner.Listener run");
  ASSERT_EQ(listener.size(), 1u) << console(id);
  ASSERT_EQ(kill(agents[0], SIGKILL), 0);
  ASSERT_TRUE(eventually(
      [&] {
        auto now = pids_matching(id, "runpool-agent --config");
        return now.size() == 1 && now[0] != agents[0];
      },
      15s))
      << console(id);

  Json::Value done = finished_job(j, 30s);
  std::printf("job in hand when the agent was killed: %s\n", fate(done).c_str());
  EXPECT_EQ(done["state"].asString(), "completed") << write_json(done) << console(id);
  EXPECT_EQ(done["result"].asString(), "Succeeded") << write_json(done);
  EXPECT_EQ(done["dispatches"].size(), 1u) << write_json(done);
  // The new agent serves the same registration (no second runner) and sees jobs come and go.
  EXPECT_EQ(pids_matching(id, "Runner.Listener run"), listener) << console(id);
  EXPECT_EQ(record(id).runner_id, runner_id);
  EXPECT_EQ(registered_runners().size(), 1u);
  int64_t j2 = queue_job("agent-crash-1", "after-the-crash", "true", 1500);
  ASSERT_TRUE(eventually([&] { return record(id).busy; }, 20s)) << "the new agent sees the job" << console(id);
  Json::Value done2 = finished_job(j2);
  EXPECT_EQ(done2["result"].asString(), "Succeeded") << write_json(done2);
  EXPECT_EQ(done2["dispatches"].size(), 1u) << write_json(done2);
  EXPECT_EQ(pids_matching(id, "Runner.Listener run"), listener) << console(id);

  released_clean_and_reused(id, "agent-crash-1", "agent-crash-2");
}

// kill -9 of Runner.Listener while it runs a job: the agent restarts it (same registration), ends
// what the dead one left (the Worker of the job), the broker loses the job when its lock runs out,
// and the runner keeps serving the label; the run releases and the instance is reused clean.
TEST_F(Failures, AListenerKilledWhileAJobRuns) {
  Json::Value p = provision("listener-crash-1", 1);
  ASSERT_EQ(ids_of(p).size(), 1u);
  const std::string id = ids_of(p)[0];
  const int64_t runner_id = record(id).runner_id;
  int64_t j = queue_job("listener-crash-1", "long", leaving_traces(), 60'000);
  ASSERT_EQ(running_on(j), id);
  auto listeners = pids_matching(id, "Runner.Listener run");
  ASSERT_EQ(listeners.size(), 1u) << console(id);
  const int64_t killed_at = now_ms();
  ASSERT_EQ(kill(listeners[0], SIGKILL), 0);
  ASSERT_TRUE(eventually(
      [&] {
        auto now = pids_matching(id, "Runner.Listener run");
        return now.size() == 1 && now[0] != listeners[0];
      },
      15s))
      << console(id);
  const int64_t restarted_at = now_ms();
  EXPECT_TRUE(eventually([&] { return pids_matching(id, "Runner.Worker").empty(); }, 10s))
      << "the dead Listener's Worker is ended";

  Json::Value done = finished_job(j, 30s);
  std::printf("job in hand when the Listener was killed: %s; Listener back %.1fs after the kill\n",
              fate(done).c_str(), static_cast<double>(restarted_at - killed_at) / 1000);
  EXPECT_EQ(done["state"].asString(), "lost") << write_json(done);
  EXPECT_EQ(record(id).runner_id, runner_id) << "restarted, not re-registered";
  EXPECT_FALSE(record(id).busy) << "the agent no longer reports the lost job";
  int64_t j2 = queue_job("listener-crash-1", "after-the-crash");
  Json::Value next = finished_job(j2);
  EXPECT_EQ(next["result"].asString(), "Succeeded") << write_json(next);
  EXPECT_EQ(instance_of_runner(next["runnerName"].asString()), id);

  released_clean_and_reused(id, "listener-crash-1", "listener-crash-2");
}

// GitHub refuses every deregistration by the runner itself (500 on config.sh remove): the agent
// gives up after its attempts and says so in `drained`; release deletes the runner with its own
// token before the instance goes back to the pool, and its report says who removed it. The next
// assignment registers afresh.
TEST_F(Failures, ARunnerItsAgentCannotDeregisterIsDeletedByReleaseAndTheReportSaysSo) {
  Json::Value p = provision("refused-removal-1", 1);
  ASSERT_EQ(ids_of(p).size(), 1u) << write_json(p);
  const std::string id = ids_of(p)[0];
  const int64_t runner_id = record(id).runner_id;
  ASSERT_GT(runner_id, 0);
  Json::Value errors;
  errors["count"] = 100;
  errors["status"] = 500;
  errors["via"] = "runner";
  cloud_.control("POST", "/_control/github/runners/" + std::to_string(runner_id) + "/removal-errors", errors);

  Json::Value rel = release("refused-removal-1");
  ASSERT_EQ(rel["returned"].size(), 1u) << write_json(rel) << console(id);
  EXPECT_EQ(rel["runners"][id]["fate"].asString(), "deleted-by-runpoolctl") << write_json(rel);
  EXPECT_NE(rel["runners"][id]["detail"].asString().find("runner left registered"), std::string::npos)
      << "the agent's evidence is in the report: " << write_json(rel);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
  EXPECT_EQ(record(id).state, State::kIdle);

  Json::Value again = provision("refused-removal-2", 1);
  ASSERT_EQ(ids_of(again), std::vector<std::string>{id}) << write_json(again);
  EXPECT_NE(record(id).runner_id, runner_id) << "registered afresh";
  Json::Value rel2 = release("refused-removal-2");
  EXPECT_EQ(rel2["runners"][id]["fate"].asString(), "deregistered-by-agent") << write_json(rel2);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

}  // namespace
}  // namespace runpool::controller::e2e
