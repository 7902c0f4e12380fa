#include "common/clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace runpool {
namespace {

TEST(Iso8601, RoundTrips) {
  WallTime t = from_epoch_ms(1'763'693'544'000);
  std::string s = format_iso8601(t);
  EXPECT_EQ(s, "2025-11-21T02:52:24Z");
  WallTime back;
  ASSERT_TRUE(parse_iso8601(s, &back));
  EXPECT_EQ(back, t);
}

TEST(Iso8601, AcceptsFractionsAndOffsetZero) {
  WallTime t;
  ASSERT_TRUE(parse_iso8601("2025-11-21T02:52:24.123Z", &t));
  EXPECT_EQ(format_iso8601(t), "2025-11-21T02:52:24Z");
  ASSERT_TRUE(parse_iso8601("2025-11-21T02:52:24+00:00", &t));
}

// Found by the fuzzers (tests/fuzz/github, ec2_xml): a year like 4052 overflowed WallTime's
// nanoseconds (undefined behaviour) instead of being refused.
TEST(Iso8601, RejectsYearsWallTimeCannotHoldAndNegativeFields) {
  WallTime t;
  for (const char* bad : {"4052-11-21T09:00:00.000+00:00", "9999-12-31T23:59:59Z", "2263-01-01T00:00:00Z",
                          "-999-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "1677-01-01T00:00:00Z",
                          "2025-11-21T-1:00:00Z", "2025-11-21T00:-1:00Z", "2025-11-21T00:00:-1Z"}) {
    EXPECT_FALSE(parse_iso8601(bad, &t)) << bad;
  }
  EXPECT_TRUE(parse_iso8601("2200-12-31T23:59:59Z", &t));
  EXPECT_EQ(format_iso8601(t), "2200-12-31T23:59:59Z");
  EXPECT_TRUE(parse_iso8601("1970-01-01T00:00:00Z", &t));
}

TEST(Iso8601, RejectsGarbage) {
  WallTime t;
  for (const char* bad : {"", "2025", "2025-13-01T00:00:00Z", "2025-11-21T02:52:24", "2025-11-21T02:52:24Zjunk",
                          "2025-11-21T25:00:00Z", "2025-11-21T02:52:24.Z", "not a date"}) {
    EXPECT_FALSE(parse_iso8601(bad, &t)) << bad;
  }
}

TEST(FakeClock, SleepAdvances) {
  FakeClock c;
  WallTime start = c.now();
  c.sleep_for(Duration{250});
  EXPECT_EQ(c.now() - start, Duration{250});
  EXPECT_EQ(c.total_slept(), Duration{250});
}

TEST(FakeClock, AWaitRunsToItsDeadlineUnlessDoneAlready) {
  FakeClock c;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  const SteadyTime start = c.steady_now();
  EXPECT_FALSE(c.wait_until(lock, cv, start + Duration{1500}, [] { return false; }));
  EXPECT_EQ(c.steady_now() - start, Duration{1500});
  EXPECT_TRUE(lock.owns_lock());
  EXPECT_TRUE(c.wait_until(lock, cv, start + Duration{9000}, [] { return true; }));
  EXPECT_EQ(c.steady_now() - start, Duration{1500}) << "done at once: no time passes";
  EXPECT_FALSE(c.wait_until(lock, cv, start, [] { return false; }));
  EXPECT_EQ(c.steady_now() - start, Duration{1500}) << "a deadline passed already: no time passes";
}

TEST(SystemClock, AWaitEndsWhenNotifiedNotAtItsDeadline) {
  SystemClock c;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread notifier([&] {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  const SteadyTime start = c.steady_now();
  EXPECT_TRUE(c.wait_until(lock, cv, start + std::chrono::minutes(10), [&] { return done; }));
  lock.unlock();
  notifier.join();
  EXPECT_LT(c.steady_now() - start, std::chrono::minutes(5));
}

TEST(SystemClock, AWaitNobodyEndsLastsToItsDeadline) {
  SystemClock c;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  const SteadyTime start = c.steady_now();
  EXPECT_FALSE(c.wait_until(lock, cv, start + Duration{30}, [] { return false; }));
  EXPECT_GE(c.steady_now() - start, Duration{30});
}

}  // namespace
}  // namespace runpool
