#include "common/clock.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace runpool
