#include "common/clock.h"

#include <ctime>
#include <string>
#include <thread>

namespace runpool {

void SystemClock::sleep_for(Duration d) { std::this_thread::sleep_for(d); }

bool Clock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable&, SteadyTime deadline,
                       const std::function<bool()>& done) {
  if (done()) return true;
  const SteadyTime now = steady_now();
  if (now < deadline) {
    lock.unlock();
    sleep_for(std::chrono::ceil<Duration>(deadline - now));
    lock.lock();
  }
  return done();
}

Clock& system_clock() {
  static SystemClock clock;
  return clock;
}

int64_t to_epoch_ms(WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

WallTime from_epoch_ms(int64_t ms) { return WallTime{std::chrono::milliseconds(ms)}; }

std::string format_iso8601(WallTime t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool parse_iso8601(const std::string& text, WallTime* out) {
  // Accepts YYYY-MM-DDTHH:MM:SS with an optional fraction, then Z or +00:00.
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return false;
  }
  std::string rest = text.substr(consumed);
  if (!rest.empty() && rest[0] == '.') {
    size_t i = 1;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) ++i;
    if (i == 1) return false;
    rest = rest.substr(i);
  }
  if (rest != "Z" && rest != "+00:00") return false;
  // Years past what WallTime (int64 nanoseconds: 1678–2262) holds, or signs sscanf lets through
  // ("-1"), are not times any service sends: refused, rather than overflowing into nonsense.
  if (tm.tm_year < 1900 || tm.tm_year > 2200 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
      tm.tm_mday > 31 || tm.tm_hour < 0 || tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 || tm.tm_sec < 0 ||
      tm.tm_sec > 60) {
    return false;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  *out = std::chrono::system_clock::from_time_t(timegm(&tm));
  return true;
}

}  // namespace runpool
