#include "agent/stop_flag.h"

#include <gtest/gtest.h>

#include <thread>

namespace runpool::agent {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

TEST(StopFlag, ANudgeEndsOneWaitEarly) {
  StopFlag f;
  f.nudge();  // before the wait: the wait returns at once, and uses it up
  auto t0 = Steady::now();
  bool nudged = false;
  EXPECT_FALSE(f.wait_or_nudge(10s, &nudged));
  EXPECT_LT(Steady::now() - t0, 5s);
  EXPECT_TRUE(nudged);
  t0 = Steady::now();
  EXPECT_FALSE(f.wait_or_nudge(50ms, &nudged));  // used up: this one runs its course
  EXPECT_GE(Steady::now() - t0, 50ms);
  EXPECT_FALSE(nudged);
}

TEST(StopFlag, ANudgeFromAnotherThreadWakesTheWaiter) {
  StopFlag f;
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    f.nudge();
  });
  auto t0 = Steady::now();
  EXPECT_FALSE(f.wait_or_nudge(30s));
  EXPECT_LT(Steady::now() - t0, 20s);
  t.join();
}

TEST(StopFlag, NudgesDoNotEndPlainWaitsButStopsEndBoth) {
  StopFlag f;
  f.nudge();
  auto t0 = Steady::now();
  EXPECT_FALSE(f.wait_for(50ms));
  EXPECT_GE(Steady::now() - t0, 50ms);
  f.request();
  EXPECT_TRUE(f.wait_for(30s));
  EXPECT_TRUE(f.wait_or_nudge(30s));
  EXPECT_TRUE(f.requested());
}

}  // namespace
}  // namespace runpool::agent
