// The drain race's timeline: when a test first saw each step of one drain (the drain write, the
// Listener's exit, the runner's deregistration), sampled on a thread of its own, and the phases
// those steps cut the time around a drain into.
#pragma once

#include <atomic>
#include <mutex>

#include "tests/e2e/e2e_fixture.h"

namespace runpool::controller::e2e {

// When (epoch ms, 50 ms resolution) the test first saw each step of one drain; 0: not seen.
struct DrainTimes {
  int64_t draining = 0;        // the drain write (record draining)
  int64_t listener_gone = 0;   // no Runner.Listener process on the instance
  int64_t deregistered = 0;    // the runner gone from GitHub
};

// Samples one instance's record, Listener and runner every 50 ms on its own thread.
class DrainTimeline {
 public:
  using Look = std::function<DrainTimes(const DrainTimes&, pool::DynamoStateTable&)>;
  DrainTimeline(runpool::testing::LocalCloud& cloud, const std::string& table, Look look)
      : clients_(cloud), table_(clients_.db, table, cloud.instance_role_id()), look_(std::move(look)) {
    thread_ = std::thread([this] {
      for (int i = 0; i < 4000 && !stop_; ++i) {  // bounded: ~4 min
        DrainTimes now;
        {
          std::lock_guard<std::mutex> l(mu_);
          now = times_;
        }
        DrainTimes next = look_(now, table_);
        {
          std::lock_guard<std::mutex> l(mu_);
          times_ = next;
        }
        std::this_thread::sleep_for(50ms);
      }
    });
  }
  ~DrainTimeline() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  DrainTimes times() const {
    std::lock_guard<std::mutex> l(mu_);
    return times_;
  }

 private:
  testing::CloudClients clients_;  // its own: the test's clients are not shared across threads
  pool::DynamoStateTable table_;
  Look look_;
  mutable std::mutex mu_;
  DrainTimes times_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The steps after the drain write, in the order the stock drain takes them (every runner build is
// drained that way): the runner is deregistered (the DELETE), then its Listener notices and exits.
struct Steps {
  const char* first;
  const char* second;
  int64_t DrainTimes::*first_at;
  int64_t DrainTimes::*second_at;
};
constexpr Steps kStockSteps{"deregistration", "Listener exit", &DrainTimes::deregistered, &DrainTimes::listener_gone};

// The phase a moment falls in: before the drain write, drain write .. first step, first .. second
// step, after the second.
inline std::string phase_of(int64_t at, const DrainTimes& t, const Steps& s) {
  if (!t.draining || at < t.draining) return "0 before the drain write";
  if (!(t.*s.first_at) || at < t.*s.first_at) return std::string("1 drain write .. ") + s.first;
  if (!(t.*s.second_at) || at < t.*s.second_at) return std::string("2 ") + s.first + " .. " + s.second;
  return std::string("3 after ") + s.second;
}

}  // namespace runpool::controller::e2e
