// The main loop with a scale-set assignment (a JIT configuration instead of a registration token),
// with the in-memory state table, a fake clock and the runner host's fakes.
#include <gtest/gtest.h>

#include "agent/agent_loop.h"
#include "agent/testing/loop_fixture.h"
#include "common/pool/memory_state_table.h"
#include "common/pool/runner_fate.h"
#include "common/pool/transitions.h"

namespace runpool::agent {
namespace {

using namespace std::chrono_literals;
using pool::AgentSignal;
using pool::InstanceRecord;
using pool::State;

using namespace testing;

// A scale-set assignment: the record holds a JIT configuration instead of a registration token.
class JitAssignmentTest : public AgentLoopTest {
 protected:
  void launch_jit(const std::string& jit = "JIT-1") {
    auto r = pool::launched_record(kId, "ci", "linux-ss", "small", pool::UsageClass::kSpot, "c7i.large", Secret(),
                                   "https://github.com/o", now(), timeouts_);
    r.jit_config = Secret(jit);
    ASSERT_TRUE(memory_.create(r));
  }
  // What the runner writes from the JIT configuration when it starts.
  void runner_writes_its_files() {
    host_.identity = RunnerIdentity{77, std::string("ci-") + kId + "-g1", "", /*ephemeral=*/true};
  }
  // Launched for a JIT assignment, its runner started and listening.
  void launch_listening() {
    launch_jit();
    ticks(1);
    runner_writes_its_files();
    host_.say(RunnerEvent::kListening);
    ticks(1);
  }
};

TEST_F(JitAssignmentTest, NoConfigShTheConfigurationLeavesTheRecordAndReachesTheRunnerOnly) {
  launch_jit();
  ticks(1);
  EXPECT_TRUE(host_.configures.empty()) << "a JIT runner configures itself";
  EXPECT_EQ(loop().state().phase, Phase::kServing);
  EXPECT_TRUE(record().jit_config.empty()) << "taken from the record";
  ASSERT_EQ(host_.jit_configs, std::vector<std::string>{"JIT-1"});
  // Taken before the Listener started: the take is among the reports made by the time of the start.
  bool taken = false;
  for (const auto& r : table_.reports) taken = taken || (r.take_jit_config && r.generation == 1 && !r.take_reg_token);
  EXPECT_TRUE(taken);
  runner_writes_its_files();
  host_.say(RunnerEvent::kListening);
  ticks(1);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kRegistered));
  EXPECT_EQ(record().runner_id, 77);
}

TEST_F(JitAssignmentTest, TheRunnerNeverStartsWhileTheConfigurationIsStillInTheRecord) {
  launch_jit();
  table_.down = true;
  ticks(3);
  EXPECT_EQ(host_.starts, 0);
  table_.down = false;
  ASSERT_TRUE(tick_until([&] { return host_.starts == 1; }));
  EXPECT_TRUE(record().jit_config.empty());
}

TEST_F(JitAssignmentTest, TheEphemeralEndIsNoFailureAndTheDrainCleansWithoutDeregistering) {
  launch_listening();
  step(pool::mark_running(record(), now(), timeouts_));
  host_.say(RunnerEvent::kJobRequested);
  host_.say(RunnerEvent::kJobStarted, "build");
  ticks(1);
  EXPECT_TRUE(record().busy);
  host_.say(RunnerEvent::kJobCompleted);
  host_.identity.reset();  // the ephemeral runner deletes its configuration and exits 0
  host_.listener->exit = ExitStatus{false, 0};
  ticks(3);
  EXPECT_EQ(loop().state().phase, Phase::kStopped);
  EXPECT_EQ(host_.starts, 1) << "never restarted";
  EXPECT_FALSE(pool::agent_reported(record(), AgentSignal::kFailed)) << record().signal_detail;
  EXPECT_FALSE(record().busy);
  // The controller drains the assignment (a JIT runner gets no remove token).
  step(pool::start_drain(record(), Secret(), now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return pool::agent_reported(record(), AgentSignal::kDrained); }));
  EXPECT_TRUE(host_.removes.empty()) << "nothing left to deregister";
  EXPECT_GE(host_.cleans, 1);
  EXPECT_EQ(loop().state().phase, Phase::kIdle);
}

// The agent is down (a restart, an upgrade) while its JIT runner finishes its one job and deletes
// its configuration. The next agent finds no configuration, but the mark left before the start
// names this generation: the assignment is over, not new — no refusal, no failure; the controller's
// drain cleans the instance back into the pool.
TEST_F(JitAssignmentTest, AnEphemeralRunnerThatEndedWhileNoAgentRanIsNoFailure) {
  launch_listening();
  ASSERT_EQ(host_.marked_ephemeral, std::optional<int64_t>(1)) << "marked before the start";
  step(pool::mark_running(record(), now(), timeouts_));
  host_.say(RunnerEvent::kJobStarted, "build");
  ticks(1);
  loop_.reset();  // the agent stops; its runner finishes the job, deletes its files and exits
  host_.identity.reset();
  host_.listener.reset();
  ticks(3);
  EXPECT_EQ(loop().state().phase, Phase::kStopped);
  EXPECT_EQ(loop().state().generation, 1);
  EXPECT_EQ(host_.starts, 1) << "never started again: its configuration was for one job";
  EXPECT_FALSE(pool::agent_reported(record(), AgentSignal::kFailed)) << record().signal_detail;
  step(pool::start_drain(record(), Secret(), now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return pool::agent_reported(record(), AgentSignal::kDrained); }));
  EXPECT_TRUE(host_.removes.empty()) << "nothing left to deregister";
  EXPECT_GE(host_.cleans, 1);
}

// A runner build that lists --drain-on-sigusr1: a JIT runner is started with it, and an armed,
// idle one is drained by SIGUSR1 (its Worker never gets it) instead of SIGINT.
TEST_F(JitAssignmentTest, AnIdleJitRunnerIsDrainedWithItsOwnDrainInputWhereTheRunnerHasIt) {
  host_.support = RunnerDrainSupport{false, true};
  launch_listening();
  ASSERT_EQ(host_.drain_flags, std::vector<bool>{true});
  step(pool::mark_running(record(), now(), timeouts_));
  step(pool::start_drain(record(), Secret(), now(), timeouts_));
  ticks(1);
  EXPECT_EQ(host_.listener->drain_signals, 1);
  ticks(3);
  EXPECT_FALSE(host_.listener->interrupted) << "no SIGINT while the runner drains itself";
  host_.listener->exit = ExitStatus{false, 0};  // the runner's drain: no job taken, exit 0
  ASSERT_TRUE(tick_until([&] { return pool::agent_reported(record(), AgentSignal::kDrained); }));
  // It ran no job, so GitHub still lists it: `drained` names it for the controller to delete.
  EXPECT_NE(record().signal_detail.find("77"), std::string::npos) << record().signal_detail;
  EXPECT_TRUE(host_.removes.empty());
}

TEST_F(JitAssignmentTest, WithoutTheRunnersDrainInputAnIdleJitRunnerIsDrainedTheStockWay) {
  host_.support = RunnerDrainSupport{};  // a released runner
  launch_listening();
  ASSERT_EQ(host_.drain_flags, std::vector<bool>{false});
  step(pool::start_drain(record(), Secret(), now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return host_.listener->interrupted; }));
  EXPECT_EQ(host_.listener->drain_signals, 0);
  ASSERT_TRUE(tick_until([&] { return pool::agent_reported(record(), AgentSignal::kDrained); }));
}

TEST_F(JitAssignmentTest, TheNextAssignmentOfAReusedInstanceMayBeEitherKind) {
  launch_listening();
  host_.identity.reset();
  host_.listener->exit = ExitStatus{false, 0};
  ticks(1);
  step(pool::start_drain(record(), Secret(), now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return pool::agent_reported(record(), AgentSignal::kDrained); }));
  step(pool::return_to_pool(record(), now(), timeouts_, ""));
  step(pool::claim(record(), "run-2", Secret("reg-2"), "https://github.com/o/r", now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return host_.configures.size() == 1; }));
  EXPECT_EQ(host_.configures[0].token.reveal(), "reg-2");
  ASSERT_TRUE(tick_until([&] { return host_.starts == 2; }));
  EXPECT_EQ(host_.jit_configs.back(), "") << "a persistent runner starts without the earlier JIT configuration";
}

// refresh drains any record it finds past its deadline with a remove token, a JIT runner's too.
// A JIT runner's `.runner` has no gitHubUrl, so `config.sh remove --token` would take the runner's
// legacy path and fail (actions/runner ConfigurationManager.cs): the idle runner is stopped, its
// local files removed, and `drained` leaves it to runpoolctl, which removes it by id.
TEST_F(JitAssignmentTest, AnIdleJitRunnerDrainedWithARemoveTokenIsStoppedNotRemovedWithConfigSh) {
  launch_listening();
  step(pool::mark_running(record(), now(), timeouts_));
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return pool::agent_reported(record(), AgentSignal::kDrained); }));
  EXPECT_TRUE(host_.listener->interrupted) << "stopped once idle past the poll";
  EXPECT_TRUE(host_.removes.empty()) << "config.sh remove was run for a JIT runner";
  EXPECT_GE(host_.remove_locals, 1) << "its local files are removed";
  EXPECT_GE(host_.cleans, 1);
  EXPECT_TRUE(pool::runner_left_registered(record())) << record().signal_detail;
  EXPECT_NE(record().signal_detail.find("runpoolctl removes it by id"), std::string::npos) << record().signal_detail;
  EXPECT_FALSE(pool::agent_reported(record(), AgentSignal::kFailed));
}

}  // namespace
}  // namespace runpool::agent
