// systemd integration: the notify protocol (READY=1, STATUS=, WATCHDOG=1, STOPPING=1 through
// sd_notify, which does nothing without NOTIFY_SOCKET) and a watchdog that pets systemd only
// while the main loop shows signs of life — a stuck loop stops the petting, and systemd's
// WatchdogSec then restarts the agent.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "agent/runner_host.h"
#include "common/clock.h"

namespace runpool::agent {

class SystemdNotifier final : public Notifier {
 public:
  void ready() override;
  void status(const std::string& text) override;
  void watchdog() override;
  void stopping() override;
  // WATCHDOG_USEC when systemd set a watchdog for this process; nullopt otherwise.
  static std::optional<Duration> watchdog_interval();
};

class Watchdog {
 public:
  // Pets every interval/2 while alive() was called within the last interval. Without an
  // interval (no watchdog configured) it does nothing.
  Watchdog(Notifier& notifier, std::optional<Duration> interval);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void alive();  // thread-safe; called by the main loop on every tick and while it waits
  // Pure: should the watchdog be petted, given how long ago the loop was last alive?
  static bool should_pet(Duration since_alive, Duration interval) { return since_alive < interval; }

 private:
  void run();

  Notifier& notifier_;
  std::optional<Duration> interval_;
  std::atomic<int64_t> last_alive_ns_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace runpool::agent
