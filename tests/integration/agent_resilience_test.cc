// runpool-agent on real local-cloud instances when things go wrong: a deadline that passes, a
// record that never comes, a Listener that is killed, the agent itself killed mid-assignment,
// a spot interruption notice. The instance ends itself where it must, and otherwise the agent
// recovers without losing the assignment.
#include <gtest/gtest.h>

#include "common/json.h"
#include "tests/support/agent_cloud.h"

namespace runpool::agent::testing {
namespace {

using pool::AgentSignal;

class AgentResilience : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { env_ = new AgentCloud(); }
  static void TearDownTestSuite() {
    delete env_;
    env_ = nullptr;
  }
  void TearDown() override { env_->cloud().clear_faults(); }

  // Terminated by its own hand: TerminateInstances from the instance, or its poweroff.
  static bool terminated_itself(const std::string& id, Duration timeout) {
    return eventually(
        [&] {
          std::string s = env_->state_of(id);
          return s == "shutting-down" || s == "terminated";
        },
        timeout);
  }
  static inline AgentCloud* env_ = nullptr;
};

TEST_F(AgentResilience, ADeadlinePassedTerminatesTheInstance) {
  const std::string id = env_->launch();
  pool::Timeouts short_boot;
  short_boot.boot_ms = 4000;  // created → registered must happen within 4 s; nobody marks it running
  env_->write_launched_record(id, "run-deadline", short_boot);
  ASSERT_TRUE(eventually([&] { return pool::agent_reported(env_->record(id), AgentSignal::kRegistered); }, 20s))
      << env_->console(id);
  ASSERT_TRUE(terminated_itself(id, 15s)) << env_->console(id);
  pool::InstanceRecord r = env_->record(id);
  EXPECT_TRUE(pool::agent_reported(r, AgentSignal::kFailed));
  EXPECT_NE(r.signal_detail.find("deadline has passed"), std::string::npos) << r.signal_detail;
  EXPECT_NE(env_->console(id).find("TerminateInstances accepted"), std::string::npos) << env_->console(id);
  ASSERT_TRUE(eventually([&] { return env_->state_of(id) == "terminated"; }, 15s));
}

TEST_F(AgentResilience, NoRecordAfterTheBootGraceTerminatesTheInstance) {
  const auto start = std::chrono::steady_clock::now();
  const std::string id = env_->launch();
  ASSERT_TRUE(terminated_itself(id, 20s)) << env_->console(id);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 3s) << "not before the boot grace";
  EXPECT_NE(env_->console(id).find("no record for this instance after the boot grace"), std::string::npos);
}

TEST_F(AgentResilience, TerminateInstancesFailingFallsBackToTheOsShutdown) {
  const std::string id = env_->launch();
  Json::Value fault;
  fault["service"] = "ec2";
  fault["errorRate"] = 1.0;  // every EC2 call fails: TerminateInstances cannot work
  env_->cloud().control("POST", "/_control/faults", fault);
  ASSERT_TRUE(terminated_itself(id, 25s)) << env_->console(id);
  env_->cloud().clear_faults();
  EXPECT_NE(env_->console(id).find("TerminateInstances failed"), std::string::npos) << env_->console(id);
  ASSERT_TRUE(eventually([&] { return env_->state_of(id) == "terminated"; }, 15s));
  EXPECT_EQ(env_->instance(id)["stateReason"]["code"].asString(), "Client.InstanceInitiatedShutdown")
      << write_json(env_->instance(id)["stateReason"]);
}

TEST_F(AgentResilience, ATableUnreachableBeyondTheLimitTerminatesTheInstance) {
  const std::string id = env_->launch({.extra_config = "table_unreachable_limit = 3s\n"});
  env_->write_launched_record(id, "run-unreachable");
  env_->wait_registered_and_mark_running(id, 1);
  Json::Value fault;
  fault["service"] = "dynamodb";
  fault["errorRate"] = 1.0;
  env_->cloud().control("POST", "/_control/faults", fault);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(terminated_itself(id, 20s)) << env_->console(id);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 3s) << "not before the limit";
  env_->cloud().clear_faults();
  EXPECT_NE(env_->console(id).find("the table has been unreachable"), std::string::npos) << env_->console(id);
}

TEST_F(AgentResilience, AKilledListenerIsRestartedAndKeepsServing) {
  const std::string id = env_->launch();
  env_->write_launched_record(id, "run-listener-crash");
  env_->wait_registered_and_mark_running(id, 1);
  const int64_t runner_id = env_->record(id).runner_id;
  auto listeners = env_->pids_matching(id, "Runner.Listener run");
  ASSERT_EQ(listeners.size(), 1u);
  ASSERT_EQ(kill(listeners[0], SIGKILL), 0);
  ASSERT_TRUE(eventually(
      [&] {
        auto now = env_->pids_matching(id, "Runner.Listener run");
        return now.size() == 1 && now[0] != listeners[0];
      },
      15s))
      << env_->console(id);
  EXPECT_NE(env_->console(id).find("(killed by signal 9); restarting"), std::string::npos);
  // Same registration: restarted, not re-registered; and it takes jobs.
  EXPECT_EQ(env_->record(id).runner_id, runner_id);
  EXPECT_EQ(env_->runners_named(env_->runner_name(id, 1)).size(), 1u);
  int64_t job = env_->queue_job("run-listener-crash", 200);
  ASSERT_TRUE(eventually([&] { return env_->job(job)["state"].asString() == "completed"; }, 20s));
  EXPECT_EQ(env_->job(job)["result"].asString(), "Succeeded");
  ASSERT_TRUE(env_->drain(id)) << env_->console(id);
  EXPECT_TRUE(env_->runners_named(env_->runner_name(id, 1)).empty());
}

TEST_F(AgentResilience, AKilledAgentIsRestartedAndResumesItsAssignment) {
  const std::string id = env_->launch();
  env_->write_launched_record(id, "run-agent-crash");
  env_->wait_registered_and_mark_running(id, 1);
  const int64_t runner_id = env_->record(id).runner_id;
  auto agents = env_->pids_matching(id, "runpool-agent --config");
  ASSERT_EQ(agents.size(), 1u);
  const auto listener = env_->pids_matching(id, "Runner.Listener run");
  ASSERT_EQ(listener.size(), 1u);
  ASSERT_EQ(kill(agents[0], SIGKILL), 0);
  // user-data restarts it (as systemd's Restart= would); it follows the Listener the dead agent
  // left — the same registration and the same process, not a new one.
  ASSERT_TRUE(eventually(
      [&] {
        auto now = env_->pids_matching(id, "runpool-agent --config");
        return now.size() == 1 && now[0] != agents[0];
      },
      10s));
  ASSERT_TRUE(eventually([&] { return env_->console(id).find("following it") != std::string::npos; }, 15s))
      << env_->console(id);
  EXPECT_EQ(env_->pids_matching(id, "Runner.Listener run"), listener);
  EXPECT_EQ(env_->record(id).runner_id, runner_id);
  EXPECT_EQ(env_->runners_named(env_->runner_name(id, 1)).size(), 1u);
  int64_t job = env_->queue_job("run-agent-crash", 1500);
  ASSERT_TRUE(eventually([&] { return env_->record(id).busy; }, 20s)) << "the new agent sees the job";
  ASSERT_TRUE(eventually([&] { return env_->job(job)["state"].asString() == "completed"; }, 20s));
  ASSERT_TRUE(env_->drain(id)) << env_->console(id);
  EXPECT_TRUE(env_->runners_named(env_->runner_name(id, 1)).empty());
  if (getenv("DUMP_CONSOLE")) std::cerr << env_->console(id);
}

TEST_F(AgentResilience, ASpotInterruptionDrainsAtOnceAndIsReported) {
  const std::string id = env_->launch({.spot = true});
  env_->write_launched_record(id, "run-spot");
  env_->wait_registered_and_mark_running(id, 1);
  env_->cloud().control("POST", "/_control/ec2/instances/" + id + "/spot-interruption",
                        [] {
                          Json::Value b;
                          b["inSeconds"] = 60;
                          return b;
                        }());
  ASSERT_TRUE(eventually([&] { return pool::agent_reported(env_->record(id), AgentSignal::kInterrupted); }, 10s))
      << env_->console(id);
  EXPECT_NE(env_->record(id).signal_detail.find("instance-action"), std::string::npos);
  // The drain-capable Listener left at once (no job in hand); the runner is stopped.
  ASSERT_TRUE(eventually([&] { return env_->pids_matching(id, "Runner.Listener run").empty(); }, 10s));
  // The controller drains it: deregistered, cleaned, drained.
  ASSERT_TRUE(env_->drain(id)) << env_->console(id);
  EXPECT_TRUE(env_->runners_named(env_->runner_name(id, 1)).empty());
}

}  // namespace
}  // namespace runpool::agent::testing
