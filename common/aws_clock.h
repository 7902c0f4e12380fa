// The AWS clock: this host's clock corrected by the offset AWS's own `Date` headers reveal.
// Controller and agents write and compare deadlines and heartbeats on it, so liveness does not
// depend on their clocks agreeing with each other — only on each agreeing with AWS to within the
// header's one-second resolution plus a request's latency.
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"

namespace runpool {

// Parses an HTTP date (IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT"); nullopt on anything else.
std::optional<WallTime> parse_http_date(const std::string& text);

class AwsClock final : public Clock {
 public:
  explicit AwsClock(Clock& local, size_t window = 9) : local_(local), window_(window) {}

  // Records one answer: its Date header, and when the request left and the answer came back on
  // the local clock. Bad or missing headers are ignored.
  void observe(const std::string& date_header, WallTime sent, WallTime received);

  WallTime now() const override { return local_.now() + offset(); }
  std::chrono::steady_clock::time_point steady_now() const override { return local_.steady_now(); }
  void sleep_for(Duration d) override { local_.sleep_for(d); }
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyTime deadline,
                  const std::function<bool()>& done) override {
    return local_.wait_until(lock, cv, deadline, done);
  }

  // AWS time minus local time: the median of the recent samples, 0 before any.
  Duration offset() const;
  size_t samples() const;

 private:
  Clock& local_;
  size_t window_;
  mutable std::mutex mu_;
  std::deque<Duration> samples_;
};

}  // namespace runpool
