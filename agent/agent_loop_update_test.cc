// The main loop with a runner that GitHub tells to update itself (decide_runner_update): the
// agent's part of run-helper.sh, with the in-memory state table, a fake clock and the runner
// host's fakes.
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

using namespace testing;

class RunnerUpdateLoopTest : public AgentLoopTest {
 protected:
  void say(RunnerEvent::Kind k, const std::string& result) {
    RunnerEvent e;
    e.kind = k;
    e.result = result;
    host_.listener->events.push_back(e);
  }
  // Serving, its Listener at 2.336.0 asked to update to 2.340.0.
  void asked_to_update() {
    serve();
    say(RunnerEvent::kVersion, "2.336.0");
    say(RunnerEvent::kUpdateRequested, "2.340.0");
    ticks(1);
  }
  bool failed() { return pool::agent_reported(record(), AgentSignal::kFailed); }
};

TEST_F(RunnerUpdateLoopTest, RootsInstallationAFailedUpdateFailsTheAssignmentAtOnce) {
  asked_to_update();
  say(RunnerEvent::kUpdateFailed, "Access to the path '/r/config.sh' is denied.");
  ticks(1);
  ASSERT_TRUE(failed());
  const std::string detail = record().signal_detail;
  EXPECT_NE(detail.find("runner self-update: GitHub asks runner v2.336.0 to update to v2.340.0"), std::string::npos)
      << detail;
  EXPECT_NE(detail.find("bake runner v2.340.0 into the image"), std::string::npos) << detail;
  EXPECT_TRUE(host_.listener->interrupted) << "the Listener still running is stopped";
  EXPECT_EQ(host_.starts, 1);
}

TEST_F(RunnerUpdateLoopTest, RootsInstallationAnUpdateExitIsNotWaitedFor) {
  asked_to_update();
  const int ends = host_.ends;
  host_.listener->exit = ExitStatus{false, 4};
  ticks(1);
  ASSERT_TRUE(failed());
  EXPECT_NE(record().signal_detail.find("the update is stopped"), std::string::npos) << record().signal_detail;
  EXPECT_GT(host_.ends, ends) << "update.sh ends with the runner user's processes";
  EXPECT_EQ(host_.update_looks, 0);
  ticks(20);
  EXPECT_EQ(host_.starts, 1) << "never started again";
}

TEST_F(RunnerUpdateLoopTest, OwnInstallationTheUpdateIsWaitedForThenTheSameAssignmentGoesOn) {
  host_.owns_installation = true;
  asked_to_update();
  const int ends = host_.ends;
  host_.listener->exit = ExitStatus{false, 3};
  ticks(5);
  EXPECT_EQ(host_.starts, 1) << "not started into the swap";
  EXPECT_EQ(host_.ends, ends) << "update.sh is left running";
  EXPECT_GE(host_.update_looks, 4);
  host_.update_finished = true;
  ASSERT_TRUE(tick_until([&] { return host_.starts == 2; }, 5));
  EXPECT_FALSE(host_.update_finished) << "taken";
  EXPECT_FALSE(failed()) << record().signal_detail;
  EXPECT_EQ(record().generation, 1);

  // Asked again by the updated runner: one update per assignment.
  say(RunnerEvent::kVersion, "2.340.0");
  say(RunnerEvent::kUpdateRequested, "2.341.0");
  host_.listener->exit = ExitStatus{false, 3};
  ticks(1);
  ASSERT_TRUE(failed());
  EXPECT_NE(record().signal_detail.find("again after it updated"), std::string::npos) << record().signal_detail;
}

TEST_F(RunnerUpdateLoopTest, OwnInstallationAnUpdateThatNeverFinishesFailsAfterRunHelpersWait) {
  host_.owns_installation = true;
  asked_to_update();
  host_.listener->exit = ExitStatus{false, 3};
  ticks(1);
  // 31 checks a second apart: not yet failed just before, failed after.
  clock_.advance(30s);
  ticks(1);
  EXPECT_FALSE(failed());
  clock_.advance(2s);
  ticks(1);
  ASSERT_TRUE(failed());
  EXPECT_NE(record().signal_detail.find("update.finished did not appear within 31 s"), std::string::npos)
      << record().signal_detail;
  EXPECT_EQ(host_.starts, 1);
}

TEST_F(RunnerUpdateLoopTest, OwnInstallationAFailedUpdateGoesOnOnceThenFails) {
  host_.owns_installation = true;
  asked_to_update();
  say(RunnerEvent::kUpdateFailed, "download failed");
  ticks(2);
  EXPECT_FALSE(failed());
  EXPECT_FALSE(host_.listener->interrupted);
  say(RunnerEvent::kUpdateFailed, "download failed");
  ticks(1);
  EXPECT_TRUE(failed());
}

}  // namespace
}  // namespace runpool::agent
