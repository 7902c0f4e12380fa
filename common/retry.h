// One retry policy for every remote call: capped exponential backoff with full jitter, plus the
// rules that say which answers are worth retrying. The rules are pure functions so they can be
// tested exhaustively; the loop that applies them lives in with_retries().
#pragma once

#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/http.h"

namespace runpool {

struct RetryPolicy {
  int max_attempts = 6;                               // first try included
  Duration base{std::chrono::milliseconds(100)};      // first backoff ceiling
  Duration cap{std::chrono::seconds(5)};              // no backoff ceiling grows past this
  Duration max_server_wait{std::chrono::seconds(120)};  // longest retry-after/reset we honour
};

// What to do with one failed attempt.
struct RetryVerdict {
  bool retry = false;
  std::optional<Duration> wait;  // set when the server said how long to wait
  std::string reason;            // for the log: "throttled", "HTTP 503", "connection error"…
};

// AWS: 5xx, throttling codes (ThrottlingException, RequestLimitExceeded, …), InternalServerError,
// ServiceUnavailable. Never ConditionalCheckFailedException or other 4xx answers, nor EC2's
// capacity errors (InsufficientInstanceCapacity comes as a 500, but the caller must fall back).
// A retryable answer carrying Retry-After (delta seconds, as a 503 may) waits that long, not a
// backoff that could ask again at once; with_retries caps it by max_server_wait.
RetryVerdict classify_aws(long status, std::string_view error_code, std::string_view retry_after = {});
bool is_aws_throttling_code(std::string_view code);
// EC2's capacity answers (Insufficient*Capacity, spot limits): the caller falls back to another
// type, subnet or usage class; retrying the same request is pointless.
bool is_aws_capacity_code(std::string_view code);

// GitHub: 5xx; primary rate limit (403/429 with x-ratelimit-remaining: 0 → wait until
// x-ratelimit-reset); secondary limit (403/429 with retry-after → that long; without it at least
// 60 s, growing with each attempt).
RetryVerdict classify_github(const HttpResponse& response, WallTime now, int attempt);

// Full jitter: a uniform draw in [0, min(cap, base * 2^attempt)]. attempt counts from 0.
Duration backoff_delay(const RetryPolicy& policy, int attempt, std::mt19937_64& rng);

// Runs `attempt_fn` until it succeeds. `attempt_fn` returns std::nullopt on success or the verdict
// for a retryable failure; it throws its own error for a failure that will not be retried — one
// whose verdict says no, or any failure when `last` is true (the attempts are used up).
void with_retries(const RetryPolicy& policy, Clock& clock,
                  const std::function<std::optional<RetryVerdict>(int attempt, bool last)>& attempt_fn);

}  // namespace runpool
