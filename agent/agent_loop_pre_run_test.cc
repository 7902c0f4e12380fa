// The loop with the pre-run script's result (the script itself: pre_run_test.cc): reported to the
// record, and a failure keeps every assignment of the boot from being served — each generation is
// answered `failed` once, then the agent idles until the controller ends the instance.
#include <gtest/gtest.h>

#include "agent/agent_loop.h"
#include "agent/testing/loop_fixture.h"
#include "common/pool/transitions.h"

namespace runpool::agent {
namespace {

using pool::AgentSignal;
using pool::PreRun;
using pool::State;

using namespace testing;

int failed_reports(const std::vector<pool::AgentReport>& reports) {
  int n = 0;
  for (const auto& r : reports) n += r.signal == AgentSignal::kFailed;
  return n;
}

TEST_F(AgentLoopTest, APassingPreRunIsReportedAndTheAgentServes) {
  loop().set_pre_run(PreRun::kOk, "exit 0 after 2s");
  launch();
  ticks(1);
  EXPECT_EQ(record().pre_run, PreRun::kOk);
  EXPECT_EQ(record().pre_run_detail, "exit 0 after 2s");
  EXPECT_EQ(host_.configures.size(), 1u);
  EXPECT_EQ(loop().state().phase, Phase::kServing);
}

TEST_F(AgentLoopTest, AFailedPreRunRefusesTheAssignmentOnceAndNeverRegisters) {
  loop().set_pre_run(PreRun::kFailed, "exit 3: no disk at /dev/nvme1n1");
  launch();
  ticks(5);
  const pool::InstanceRecord r = record();
  EXPECT_EQ(r.pre_run, PreRun::kFailed);
  EXPECT_EQ(r.pre_run_detail, "exit 3: no disk at /dev/nvme1n1");
  EXPECT_TRUE(pool::agent_reported(r, AgentSignal::kFailed)) << "failed for the record's current generation";
  EXPECT_EQ(r.signal_generation, 1);
  EXPECT_EQ(r.signal_detail, "pre-run script failed: exit 3: no disk at /dev/nvme1n1");
  EXPECT_EQ(failed_reports(table_.reports), 1);
  EXPECT_TRUE(host_.configures.empty()) << "no runner is ever registered";
  EXPECT_EQ(host_.prepares, 0);
  EXPECT_EQ(host_.starts, 0);
  EXPECT_FALSE(r.reg_token.empty()) << "the token is left alone";
  EXPECT_EQ(loop().state().phase, Phase::kIdle);
  EXPECT_EQ(loop().status(), "idle, serving nothing on this boot: pre-run script failed: exit 3: no disk at /dev/nvme1n1");
  EXPECT_EQ(compute_.terminates, 0) << "ending the instance is the controller's (refresh: agent.failed)";

  // The controller terminates it: the agent ends the instance at once, as for any terminating record.
  step(pool::begin_terminate(record(), now(), timeouts_));
  ticks(1);
  EXPECT_EQ(compute_.terminates, 1);
}

TEST_F(AgentLoopTest, AFailedPreRunAnswersEveryLaterGenerationAndADrainWithFailed) {
  loop().set_pre_run(PreRun::kTimeout, "timed out after 10m: warming");
  launch();
  ticks(2);
  EXPECT_EQ(failed_reports(table_.reports), 1);
  // A drain of the unserved assignment: answered `failed` again? No — once per generation.
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ticks(3);
  EXPECT_EQ(failed_reports(table_.reports), 1);
  EXPECT_FALSE(pool::agent_reported(record(), AgentSignal::kDrained)) << "never handed back to the pool";
  // Rewritten for a new generation (as a claim would): refused once more.
  ASSERT_TRUE(memory_.transition(kId, {}, {.state = State::kClaimed, .generation = 2, .label = "run-2",
                                           .reg_token = Secret("reg-2")}));
  ticks(3);
  EXPECT_EQ(failed_reports(table_.reports), 2);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kFailed));
  EXPECT_EQ(record().signal_detail, "pre-run script failed: timed out after 10m: warming");
  EXPECT_TRUE(host_.configures.empty());
}

TEST_F(AgentLoopTest, ThePreRunResultWaitsForTheRecordAndTheTable) {
  loop().set_pre_run(PreRun::kOk, "exit 0 after 1s");
  ticks(2);  // no record yet
  table_.down = true;
  launch();
  ticks(2);  // the table does not answer
  EXPECT_EQ(record().pre_run, PreRun::kNone);
  table_.down = false;
  ticks(1);
  EXPECT_EQ(record().pre_run, PreRun::kOk);
  int pre_run_writes = 0;
  ticks(3);
  for (const auto& r : table_.reports) pre_run_writes += r.pre_run.has_value();
  EXPECT_EQ(pre_run_writes, 1) << "written once";
}

TEST_F(AgentLoopTest, WithoutAScriptNothingIsWritten) {
  launch();
  ticks(2);
  EXPECT_EQ(record().pre_run, PreRun::kNone);
  for (const auto& r : table_.reports) EXPECT_FALSE(r.pre_run.has_value());
}

TEST_F(AgentLoopTest, AfterARebootWithAFailedPreRunARunnerLeftConfiguredIsNotServed) {
  launch();
  step(pool::mark_running([&] {
         memory_.report(kId, {.signal = AgentSignal::kRegistered, .generation = 1});
         return record();
       }(),
                          now(), timeouts_));
  host_.identity = RunnerIdentity{77, std::string("ci-") + kId + "-g1", ""};
  loop().set_pre_run(PreRun::kFailed, "exit 1");
  ASSERT_TRUE(tick_until([&] { return pool::agent_reported(record(), AgentSignal::kFailed); }));
  EXPECT_EQ(host_.starts, 0) << "its Listener is not started again";
  EXPECT_GE(host_.cleans, 1) << "the runner's files are cleaned";
  EXPECT_EQ(record().signal_detail, "pre-run script failed: exit 1");
  EXPECT_EQ(loop().state().phase, Phase::kIdle);
}

}  // namespace
}  // namespace runpool::agent
