// The main loop and what jobs left running beside the Listener: in a drain they are ended once no
// job is in hand, and the job requests told while they ran (they can write the runner's logs) hold
// the drain no longer. With the in-memory state table, a fake clock and the runner host's fakes.
#include <gtest/gtest.h>

#include "agent/agent_loop.h"
#include "agent/testing/loop_fixture.h"
#include "common/pool/transitions.h"

namespace runpool::agent {
namespace {

using namespace testing;

TEST_F(AgentLoopTest, ADrainEndsWhatJobsLeftBesideTheIdleListenerAndTheRequestsTheyForgedHoldItNoMore) {
  serve();
  host_.detached = 2;
  host_.say(RunnerEvent::kJobRequested);  // a line in the perf log, written by one of them
  ticks(2);
  EXPECT_TRUE(record().busy);
  EXPECT_EQ(host_.detached_ends, 0) << "while it serves, a job's own processes are left alone";
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  // The request would hold the drain for job_start_bound (5 min); the poll wait is 500 ms.
  ASSERT_TRUE(tick_until([&] { return !host_.removes.empty(); }, 20)) << "still busy: " << record().busy;
  EXPECT_GE(host_.detached_ends, 1);
  EXPECT_EQ(host_.detached, 0);
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  EXPECT_TRUE(pool::agent_reported(record(), pool::AgentSignal::kDrained));
}

TEST_F(AgentLoopTest, AJobInHandKeepsItsProcessesAndItsRequestUntilItEnds) {
  serve();
  host_.detached = 1;
  host_.say(RunnerEvent::kJobRequested, "7");
  host_.worker = true;
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ticks(20);
  EXPECT_TRUE(record().busy);
  EXPECT_TRUE(host_.removes.empty()) << "busy: no DELETE";
  EXPECT_EQ(host_.detached, 1) << "nothing ended while the Listener's tree holds a job";
  host_.worker = false;
  host_.say(RunnerEvent::kJobCompleted, "7");
  ASSERT_TRUE(tick_until([&] { return !host_.removes.empty(); }, 20));
  EXPECT_EQ(host_.detached, 0) << "ended once the job was over";
}

TEST_F(AgentLoopTest, WithNothingLeftBesideItARequestInAStockDrainHoldsItAsBefore) {
  serve();
  host_.say(RunnerEvent::kJobRequested);
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ticks(20);
  EXPECT_TRUE(record().busy) << "a job dispatched to the open poll may yet start its Worker";
  EXPECT_TRUE(host_.removes.empty());
  EXPECT_GE(host_.detached_ends, 1);
}

}  // namespace
}  // namespace runpool::agent
