// A spot interruption notice with a job in hand: the agent writes that job on its own record (for
// the controller to run it again, common/pool/spot_rerun.h), and its result if it still ends here.
#include <gtest/gtest.h>

#include "agent/agent_loop.h"
#include "agent/testing/loop_fixture.h"
#include "common/pool/memory_state_table.h"
#include "common/pool/runner_fate.h"
#include "common/pool/transitions.h"

namespace runpool::agent {
namespace {

using pool::AgentSignal;
using namespace testing;

constexpr const char* kSpot = "spot instance-action terminate at 2026-11-21T03:00:00Z";

class SpotJobTest : public AgentLoopTest {
 protected:
  void finish(const std::string& job, const std::string& result) {
    RunnerEvent e;
    e.kind = RunnerEvent::kJobCompleted;
    e.job = job;
    e.result = result;
    host_.listener->events.push_back(e);
  }
};

TEST_F(SpotJobTest, TheJobInHandIsWrittenWithItsGenerationAndItsResultIfItStillEnds) {
  serve();
  host_.say(RunnerEvent::kJobRequested);
  host_.say(RunnerEvent::kJobStarted, "build");
  ticks(1);
  ASSERT_TRUE(record().busy);
  loop().notice({Notice::kSpotInterruption, kSpot});
  ticks(1);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kInterrupted));
  EXPECT_EQ(record().spot_job, "build");
  EXPECT_EQ(record().spot_generation, record().generation);
  EXPECT_EQ(record().spot_job_result, "");
  finish("build", "Canceled");
  ticks(2);
  EXPECT_EQ(record().spot_job_result, "Canceled");
  EXPECT_EQ(record().spot_job, "build") << "written once";
}

TEST_F(SpotJobTest, AJobRequestedButNotNamedYetIsWrittenAsADashThenNamed) {
  serve();
  host_.say(RunnerEvent::kJobRequested);
  ticks(1);
  ASSERT_TRUE(record().busy);
  loop().notice({Notice::kSpotInterruption, kSpot});
  ticks(1);
  EXPECT_EQ(record().spot_job, "-");
  host_.say(RunnerEvent::kJobStarted, "test");
  ticks(2);
  EXPECT_EQ(record().spot_job, "test") << "named once the runner printed it";
  host_.say(RunnerEvent::kJobStarted, "another");
  ticks(2);
  EXPECT_EQ(record().spot_job, "test") << "only the job in hand at the notice";
}

TEST_F(SpotJobTest, NoJobInHandWritesNoJob) {
  serve();
  loop().notice({Notice::kSpotInterruption, kSpot});
  ticks(2);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kInterrupted));
  EXPECT_EQ(record().spot_job, "");
  host_.say(RunnerEvent::kJobStarted, "late");
  finish("late", "Succeeded");
  ticks(2);
  EXPECT_EQ(record().spot_job_result, "") << "no job was in hand at the notice";
}

// A rebalance recommendation often comes first: the drain it starts waits for the job, which the
// spot notice then dooms.
TEST_F(SpotJobTest, ASpotNoticeAfterARebalanceRecommendationStillWritesTheJobInHand) {
  serve();
  host_.say(RunnerEvent::kJobRequested);
  host_.say(RunnerEvent::kJobStarted, "build");
  ticks(1);
  loop().notice({Notice::kRebalance, "rebalance recommended at 2026-11-21T02:58:00Z"});
  ticks(2);
  ASSERT_EQ(loop().state().phase, Phase::kDraining);
  ASSERT_TRUE(record().busy);
  EXPECT_EQ(record().spot_job, "");
  loop().notice({Notice::kSpotInterruption, kSpot});
  ticks(2);
  EXPECT_EQ(record().spot_job, "build");
  EXPECT_EQ(record().spot_generation, record().generation);
}

TEST_F(SpotJobTest, ARebalanceRecommendationIsNoInterruption) {
  serve();
  host_.say(RunnerEvent::kJobRequested);
  host_.say(RunnerEvent::kJobStarted, "build");
  ticks(1);
  loop().notice({Notice::kRebalance, "rebalance recommended at 2026-11-21T03:00:00Z"});
  ticks(1);
  EXPECT_EQ(record().spot_job, "") << "a rebalance ends no job";
}

}  // namespace
}  // namespace runpool::agent
