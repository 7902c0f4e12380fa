#include "common/aws_clock.h"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <vector>

namespace runpool {

std::optional<WallTime> parse_http_date(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end != '\0') return std::nullopt;
  time_t t = timegm(&tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return std::chrono::system_clock::from_time_t(t);
}

void AwsClock::observe(const std::string& date_header, WallTime sent, WallTime received) {
  auto server = parse_http_date(date_header);
  if (!server || received < sent) return;
  // The header truncates to the second: its midpoint is the best estimate, compared with the
  // midpoint of the round trip.
  WallTime server_mid = *server + std::chrono::milliseconds(500);
  WallTime local_mid = sent + (received - sent) / 2;
  auto sample = std::chrono::duration_cast<Duration>(server_mid - local_mid);
  std::lock_guard<std::mutex> lock(mu_);
  samples_.push_back(sample);
  while (samples_.size() > window_) samples_.pop_front();
}

Duration AwsClock::offset() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (samples_.empty()) return Duration{0};
  std::vector<Duration> sorted(samples_.begin(), samples_.end());
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  return sorted[sorted.size() / 2];
}

size_t AwsClock::samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_.size();
}

}  // namespace runpool
