#include "common/retry.h"

#include <gtest/gtest.h>

namespace runpool {
namespace {

TEST(ClassifyAws, ConditionalCheckFailedIsAnAnswer) {
  EXPECT_FALSE(classify_aws(400, "ConditionalCheckFailedException").retry);
}

TEST(ClassifyAws, ThrottlingCodesRetry) {
  for (const char* code : {"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
                           "Throttling", "RequestThrottled"}) {
    EXPECT_TRUE(classify_aws(400, code).retry) << code;
  }
}

TEST(ClassifyAws, ServerErrorsRetryClientErrorsDoNot) {
  EXPECT_TRUE(classify_aws(500, "").retry);
  EXPECT_TRUE(classify_aws(503, "ServiceUnavailable").retry);
  EXPECT_TRUE(classify_aws(500, "InternalServerError").retry);
  EXPECT_TRUE(classify_aws(429, "").retry);
  EXPECT_FALSE(classify_aws(400, "ValidationException").retry);
  EXPECT_FALSE(classify_aws(400, "ResourceNotFoundException").retry);
  EXPECT_FALSE(classify_aws(403, "InvalidSignatureException").retry);
  EXPECT_FALSE(classify_aws(400, "InvalidInstanceID.NotFound").retry);
}

TEST(ClassifyAws, RetryAfterOnARetryableAnswerIsTheWait) {
  RetryVerdict v = classify_aws(503, "ServiceUnavailable", "2");
  EXPECT_TRUE(v.retry);
  ASSERT_TRUE(v.wait);
  EXPECT_EQ(*v.wait, std::chrono::seconds(2));
  EXPECT_EQ(classify_aws(400, "ThrottlingException", "1").wait, Duration{std::chrono::seconds(1)});
  EXPECT_EQ(classify_aws(503, "ServiceUnavailable", "0").wait, Duration{0});
  // Without it, or unreadable (the HTTP-date form, garbage, negative): backoff as before.
  for (const char* bad : {"", "Wed, 21 Oct 2015 07:28:00 GMT", "soon", "-3", "1.5"}) {
    RetryVerdict b = classify_aws(503, "ServiceUnavailable", bad);
    EXPECT_TRUE(b.retry) << bad;
    EXPECT_FALSE(b.wait) << bad;
  }
  // An answer that is not retried stays an answer whatever it says.
  EXPECT_FALSE(classify_aws(400, "ConditionalCheckFailedException", "1").retry);
  EXPECT_FALSE(classify_aws(500, "InsufficientInstanceCapacity", "1").retry);
  EXPECT_FALSE(classify_aws(400, "ValidationException", "1").wait);
}

TEST(ClassifyAws, CapacityErrorsAreNotRetriedDespiteTheir500) {
  EXPECT_FALSE(classify_aws(500, "InsufficientInstanceCapacity").retry);
  EXPECT_FALSE(classify_aws(400, "MaxSpotInstanceCountExceeded").retry);
  EXPECT_TRUE(classify_aws(500, "InternalError").retry);
  EXPECT_FALSE(classify_aws(500, "InsufficientAddressCapacity").retry) << "every Insufficient*Capacity";
  EXPECT_TRUE(is_aws_capacity_code("InsufficientVolumeCapacity"));
  EXPECT_FALSE(is_aws_capacity_code("InsufficientCapacityX"));
  EXPECT_FALSE(is_aws_capacity_code("Capacity"));
}

HttpResponse response(long status, std::map<std::string, std::string> headers, std::string body = "") {
  HttpResponse r;
  r.status = status;
  r.headers = std::move(headers);
  r.body = std::move(body);
  return r;
}

const WallTime kNow{std::chrono::seconds(1'800'000'000)};

TEST(ClassifyGithub, RetryAfterIsHonoured) {
  auto v = classify_github(response(429, {{"retry-after", "7"}}), kNow, 0);
  ASSERT_TRUE(v.retry);
  EXPECT_EQ(*v.wait, std::chrono::seconds(7));
  v = classify_github(response(403, {{"retry-after", "3"}}), kNow, 0);
  ASSERT_TRUE(v.retry);
  EXPECT_EQ(*v.wait, std::chrono::seconds(3));
}

TEST(ClassifyGithub, PrimaryLimitWaitsUntilReset) {
  auto v = classify_github(
      response(403, {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", std::to_string(1'800'000'030)}}), kNow, 0);
  ASSERT_TRUE(v.retry);
  EXPECT_EQ(*v.wait, std::chrono::seconds(31));
  // A reset already in the past still waits a second rather than hammering.
  v = classify_github(
      response(429, {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", std::to_string(1'700'000'000)}}), kNow, 0);
  EXPECT_EQ(*v.wait, std::chrono::seconds(1));
}

TEST(ClassifyGithub, SecondaryLimitWithoutRetryAfterWaitsAMinuteAndGrows) {
  auto body = R"({"message":"You have exceeded a secondary rate limit."})";
  auto v0 = classify_github(response(403, {}, body), kNow, 0);
  auto v2 = classify_github(response(403, {}, body), kNow, 2);
  ASSERT_TRUE(v0.retry);
  EXPECT_EQ(*v0.wait, std::chrono::seconds(60));
  EXPECT_EQ(*v2.wait, std::chrono::seconds(240));
}

TEST(ClassifyGithub, PermissionErrorsAndClientErrorsDoNotRetry) {
  EXPECT_FALSE(classify_github(response(403, {{"x-ratelimit-remaining", "4999"}}, R"({"message":"Forbidden"})"),
                               kNow, 0).retry);
  EXPECT_FALSE(classify_github(response(404, {}), kNow, 0).retry);
  EXPECT_FALSE(classify_github(response(422, {}), kNow, 0).retry);
  EXPECT_TRUE(classify_github(response(502, {}), kNow, 0).retry);
}

TEST(Backoff, FullJitterStaysUnderTheCappedCeiling) {
  RetryPolicy p;
  p.base = Duration{100};
  p.cap = Duration{1000};
  std::mt19937_64 rng(42);
  for (int attempt = 0; attempt < 12; ++attempt) {
    long long ceiling = std::min<long long>(1000, 100LL << std::min(attempt, 20));
    Duration max_seen{0};
    for (int i = 0; i < 500; ++i) {
      Duration d = backoff_delay(p, attempt, rng);
      ASSERT_GE(d.count(), 0);
      ASSERT_LE(d.count(), ceiling);
      max_seen = std::max(max_seen, d);
    }
    EXPECT_GT(max_seen.count(), ceiling / 2) << "jitter should use the whole range";
  }
}

TEST(WithRetries, RetriesUntilSuccessAndSleepsOnTheClock) {
  FakeClock clock;
  RetryPolicy p{5, Duration{100}, Duration{1000}, Duration{std::chrono::seconds(10)}};
  int calls = 0;
  with_retries(p, clock, [&](int, bool) -> std::optional<RetryVerdict> {
    if (++calls < 3) return RetryVerdict{true, std::nullopt, "HTTP 500"};
    return std::nullopt;
  });
  EXPECT_EQ(calls, 3);
  EXPECT_LE(clock.total_slept().count(), 100 + 200);
}

TEST(WithRetries, ServerWaitIsCappedByPolicy) {
  FakeClock clock;
  RetryPolicy p{2, Duration{100}, Duration{1000}, Duration{std::chrono::seconds(10)}};
  int calls = 0;
  with_retries(p, clock, [&](int, bool) -> std::optional<RetryVerdict> {
    if (++calls == 1) return RetryVerdict{true, Duration{std::chrono::hours(1)}, "rate limit"};
    return std::nullopt;
  });
  EXPECT_EQ(clock.total_slept(), Duration{std::chrono::seconds(10)});
}

TEST(WithRetries, LastAttemptIsToldSoItCanThrow) {
  FakeClock clock;
  RetryPolicy p{3, Duration{1}, Duration{1}, Duration{1}};
  int calls = 0;
  EXPECT_THROW(with_retries(p, clock,
                            [&](int, bool last) -> std::optional<RetryVerdict> {
                              ++calls;
                              if (last) throw std::runtime_error("gave up");
                              return RetryVerdict{true, std::nullopt, "x"};
                            }),
               std::runtime_error);
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace runpool
