// Time behind an interface, so decisions and retry loops can be tested without sleeping.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace runpool {

using WallTime = std::chrono::system_clock::time_point;
using Duration = std::chrono::milliseconds;
using SteadyTime = std::chrono::steady_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time (for deadlines written to the table and compared by other hosts).
  virtual WallTime now() const = 0;
  // Monotonic time (for local timeouts that must not jump with NTP).
  virtual std::chrono::steady_clock::time_point steady_now() const = 0;
  virtual void sleep_for(Duration d) = 0;
  // Waits until `deadline` (on steady_now()) or until `done()` holds, whichever comes first, and
  // returns done(). `lock` holds the mutex that guards what `done` reads; whoever makes it true
  // notifies `cv` after taking that mutex. The default suits clocks whose time moves only when
  // slept on (fakes): the rest of the wait is slept at once, the lock released meanwhile, so a
  // test's clock reaches the deadline without anyone notifying. Real clocks wait on `cv`.
  virtual bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyTime deadline,
                          const std::function<bool()>& done);
};

class SystemClock final : public Clock {
 public:
  WallTime now() const override { return std::chrono::system_clock::now(); }
  std::chrono::steady_clock::time_point steady_now() const override {
    return std::chrono::steady_clock::now();
  }
  void sleep_for(Duration d) override;
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyTime deadline,
                  const std::function<bool()>& done) override {
    return cv.wait_until(lock, deadline, done);
  }
};

// A clock tests move by hand; sleep_for (and so wait_until) advances it instead of blocking. Not
// for threads: one test thread drives it.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(WallTime start = WallTime{std::chrono::seconds(1'700'000'000)}) : now_(start) {}
  WallTime now() const override { return now_; }
  std::chrono::steady_clock::time_point steady_now() const override {
    return std::chrono::steady_clock::time_point{now_.time_since_epoch()};
  }
  void sleep_for(Duration d) override { now_ += d; slept_ += d; }
  void advance(Duration d) { now_ += d; }
  Duration total_slept() const { return slept_; }

 private:
  WallTime now_;
  Duration slept_{0};
};

// The process-wide real clock.
Clock& system_clock();

int64_t to_epoch_ms(WallTime t);
WallTime from_epoch_ms(int64_t ms);
// ISO 8601 UTC with seconds ("2026-11-21T02:52:24Z"), and back. parse returns false on bad input.
std::string format_iso8601(WallTime t);
bool parse_iso8601(const std::string& text, WallTime* out);

}  // namespace runpool
