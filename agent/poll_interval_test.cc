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

TEST(RecordReadDue, AWakeUpAlwaysReads) {
  for (bool idle : {false, true}) {
    for (bool settling : {false, true}) {
      EXPECT_TRUE(record_read_due(PollFacts{idle, settling, 0s, true}, kI, 0ms, true));
    }
  }
}

TEST(RecordReadDue, SettlingTicksReadOnlyAtTheIntervalTheyWouldHaveWithoutSettling) {
  struct Case {
    bool idle, settling, wake;
    Duration since;
    bool want;
  };
  const Case cases[] = {
      // settling, serving: fast ticks, a read once a second (the assignment interval)
      {false, true, true, 100ms, false},
      {false, true, true, 999ms, false},
      {false, true, true, 1s, true},
      {false, true, false, 500ms, false},
      {false, true, false, 1200ms, true},
      // settling at the end of an assignment while idle with a wake queue: still the 15 s backstop
      {true, true, true, 1s, false},
      {true, true, true, 15s, true},
      // not settling: every tick is at the interval, so every tick reads
      {false, false, true, 1s, true},
      {true, false, true, 15s, true},
      {true, false, false, 1s, true},
  };
  for (const auto& c : cases) {
    PollFacts f{c.idle, c.settling, 0s, c.wake};
    EXPECT_EQ(record_read_due(f, kI, c.since, false), c.want)
        << "idle=" << c.idle << " settling=" << c.settling << " wake=" << c.wake << " since " << c.since.count() << "ms";
  }
}

}  // namespace
}  // namespace runpool::agent
