#include "common/retry.h"
#include "common/text.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace runpool {
namespace {

constexpr std::string_view kThrottlingCodes[] = {
    "ThrottlingException", "Throttling", "ThrottledException", "RequestThrottledException",
    "ProvisionedThroughputExceededException", "RequestLimitExceeded", "RequestThrottled",
    "TooManyRequestsException", "SlowDown", "RequestLimitExceededException",
    "TransactionInProgressException", "LimitExceededException"};

// Capacity answers that are not Insufficient*Capacity.
constexpr std::string_view kOtherCapacityCodes[] = {"MaxSpotInstanceCountExceeded", "SpotMaxPriceTooLow",
                                                    "InsufficientFreeAddressesInSubnet", "Unsupported"};

constexpr std::string_view kServerCodes[] = {"InternalServerError", "InternalFailure",
                                             "InternalError", "ServiceUnavailable",
                                             "Unavailable", "ServiceUnavailableException"};

RetryVerdict classify_aws_answer(long status, std::string_view code);  // by status and code alone

}  // namespace

bool is_aws_throttling_code(std::string_view code) {
  return std::find(std::begin(kThrottlingCodes), std::end(kThrottlingCodes), code) !=
         std::end(kThrottlingCodes);
}

bool is_aws_capacity_code(std::string_view code) {
  // InsufficientInstanceCapacity, InsufficientHostCapacity, InsufficientAddressCapacity, …
  constexpr std::string_view prefix = "Insufficient", suffix = "Capacity";
  if (code.size() >= prefix.size() + suffix.size() && code.starts_with(prefix) && code.ends_with(suffix)) return true;
  return std::find(std::begin(kOtherCapacityCodes), std::end(kOtherCapacityCodes), code) !=
         std::end(kOtherCapacityCodes);
}

RetryVerdict classify_aws(long status, std::string_view code, std::string_view retry_after) {
  RetryVerdict v = classify_aws_answer(status, code);
  if (!v.retry) return v;
  if (auto seconds = text::parse_int(retry_after); seconds && *seconds >= 0) {
    v.wait = std::chrono::seconds(*seconds);
    v.reason += " (retry-after)";
  }
  return v;
}

namespace {

RetryVerdict classify_aws_answer(long status, std::string_view code) {
  if (code == "ConditionalCheckFailedException") return {false, std::nullopt, "condition failed"};
  if (is_aws_capacity_code(code)) {
    return {false, std::nullopt, "capacity (" + std::string(code) + ")"};
  }
  if (is_aws_throttling_code(code)) return {true, std::nullopt, "throttled (" + std::string(code) + ")"};
  if (std::find(std::begin(kServerCodes), std::end(kServerCodes), code) != std::end(kServerCodes)) {
    return {true, std::nullopt, std::string(code)};
  }
  if (status >= 500 || status == 429) return {true, std::nullopt, "HTTP " + std::to_string(status)};
  return {false, std::nullopt, code.empty() ? "HTTP " + std::to_string(status) : std::string(code)};
}

}  // namespace

RetryVerdict classify_github(const HttpResponse& response, WallTime now, int attempt) {
  long status = response.status;
  if (status >= 500) return {true, std::nullopt, "HTTP " + std::to_string(status)};
  if (status != 403 && status != 429) return {false, std::nullopt, "HTTP " + std::to_string(status)};

  if (auto retry_after = text::parse_int(response.header("retry-after")); retry_after && *retry_after >= 0) {
    return {true, std::chrono::seconds(*retry_after), "secondary rate limit (retry-after)"};
  }
  auto remaining = text::parse_int(response.header("x-ratelimit-remaining"));
  if (remaining && *remaining == 0) {
    auto reset = text::parse_int(response.header("x-ratelimit-reset"));
    Duration wait = std::chrono::seconds(60);
    if (reset) {
      auto until = WallTime{std::chrono::seconds(*reset)} - now;
      wait = std::max<Duration>(std::chrono::duration_cast<Duration>(until), Duration{0}) +
             std::chrono::seconds(1);
    }
    return {true, wait, "primary rate limit"};
  }
  // A 403 mentioning a secondary rate limit without retry-after: at least a minute, doubling.
  if (status == 429 || response.body.find("secondary rate limit") != std::string::npos) {
    return {true, std::chrono::seconds(60) * (1 << std::min(attempt, 4)), "secondary rate limit"};
  }
  return {false, std::nullopt, "HTTP " + std::to_string(status)};  // a real permission error
}

Duration backoff_delay(const RetryPolicy& policy, int attempt, std::mt19937_64& rng) {
  long long ceiling = policy.base.count();
  for (int i = 0; i < attempt && ceiling < policy.cap.count(); ++i) ceiling *= 2;
  ceiling = std::min<long long>(ceiling, policy.cap.count());
  std::uniform_int_distribution<long long> dist(0, ceiling);
  return Duration{dist(rng)};
}

void with_retries(const RetryPolicy& policy, Clock& clock,
                  const std::function<std::optional<RetryVerdict>(int, bool)>& attempt_fn) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  for (int attempt = 0;; ++attempt) {
    bool last = attempt + 1 >= policy.max_attempts;
    std::optional<RetryVerdict> failure = attempt_fn(attempt, last);
    if (!failure) return;
    if (!failure->retry || last) {
      throw std::logic_error("with_retries: the final attempt must throw its own error");
    }
    Duration wait = failure->wait ? std::min(*failure->wait, policy.max_server_wait)
                                  : backoff_delay(policy, attempt, rng);
    spdlog::debug("retrying in {} ms after {} (attempt {}/{})", wait.count(), failure->reason,
                  attempt + 1, policy.max_attempts);
    clock.sleep_for(wait);
  }
}

}  // namespace runpool
