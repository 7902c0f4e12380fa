#include "common/aws_clock.h"

#include <gtest/gtest.h>

namespace runpool {
namespace {

TEST(ParseHttpDate, Imffixdate) {
  auto t = parse_http_date("Sat, 21 Nov 2026 02:52:24 GMT");
  ASSERT_TRUE(t);
  EXPECT_EQ(format_iso8601(*t), "2026-11-21T02:52:24Z");
}

TEST(ParseHttpDate, RejectsOtherForms) {
  for (const char* bad : {"", "2026-11-21T02:52:24Z", "Sat, 21 Nov 2026 02:52:24", "Sat, 21 Nov 2026 02:52:24 GMT x",
                          "Saturday, 21-Nov-26 02:52:24 GMT", "Sat, 32 Nov 2026 02:52:24 GMT"}) {
    EXPECT_FALSE(parse_http_date(bad)) << bad;
  }
}

TEST(AwsClock, NoSamplesMeansNoOffset) {
  FakeClock local;
  AwsClock aws(local);
  EXPECT_EQ(aws.offset(), Duration{0});
  EXPECT_EQ(aws.now(), local.now());
}

TEST(AwsClock, LearnsAnOffsetWithinASecond) {
  // The local clock runs 5 minutes behind AWS.
  FakeClock local(from_epoch_ms(1'800'000'000'000));
  AwsClock aws(local);
  for (int i = 0; i < 5; ++i) {
    WallTime sent = local.now();
    local.advance(Duration{40});
    WallTime aws_time = local.now() - Duration{20} + std::chrono::minutes(5);
    std::time_t secs = std::chrono::system_clock::to_time_t(aws_time);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    aws.observe(buf, sent, local.now());
    local.advance(Duration{137});
  }
  auto error = aws.offset() - std::chrono::minutes(5);
  EXPECT_LE(std::abs(error.count()), 1000) << aws.offset().count();
  EXPECT_EQ(aws.samples(), 5u);
}

TEST(AwsClock, MedianIgnoresAnOutlier) {
  FakeClock local(from_epoch_ms(1'800'000'000'000));
  AwsClock aws(local, 5);
  auto header_for = [](WallTime t) {
    std::time_t secs = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return std::string(buf);
  };
  for (int i = 0; i < 4; ++i) aws.observe(header_for(local.now()), local.now(), local.now());
  aws.observe(header_for(local.now() + std::chrono::hours(1)), local.now(), local.now());  // a bad proxy's Date
  EXPECT_LT(aws.offset(), Duration{std::chrono::seconds(1)});
  aws.observe("garbage", local.now(), local.now());
  EXPECT_EQ(aws.samples(), 5u);
}

}  // namespace
}  // namespace runpool
