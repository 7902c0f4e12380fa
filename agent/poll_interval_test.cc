#include "agent/poll_interval.h"

#include <gtest/gtest.h>

namespace runpool::agent {
namespace {

using namespace std::chrono_literals;

const PollIntervals kI{1s, 15s, 100ms, 30s};

TEST(PollInterval, EveryCombination) {
  struct Case {
    bool idle, settling;
    Duration settling_for;
    bool wake;
    Duration want;
  };
  const Case cases[] = {
      // idle: the long interval only with a working wake queue
      {true, false, 0s, true, 15s},
      {true, false, 0s, false, 1s},
      // serving: the assignment interval either way
      {false, false, 0s, true, 1s},
      {false, false, 0s, false, 1s},
      // settling: fast within the window, whatever else holds
      {false, true, 0s, true, 100ms},
      {false, true, 29s, false, 100ms},
      {true, true, 1s, true, 100ms},
      // …and the assignment interval past it (never the idle one while something is in flight)
      {false, true, 30s, true, 1s},
      {true, true, 31s, true, 1s},
      {false, true, 2min, false, 1s},
  };
  for (const auto& c : cases) {
    PollFacts f{c.idle, c.settling, c.settling_for, c.wake};
    EXPECT_EQ(next_poll_interval(f, kI), c.want)
        << "idle=" << c.idle << " settling=" << c.settling << " for " << c.settling_for.count() << "ms wake=" << c.wake;
  }
}

TEST(PollInterval, AZeroWindowNeverPollsFast) {
  PollIntervals i = kI;
  i.settle_window = 0s;
  EXPECT_EQ(next_poll_interval(PollFacts{false, true, 0s, true}, i), 1s);
}

}  // namespace
}  // namespace runpool::agent
