#include "agent/systemd.h"

#include <systemd/sd-daemon.h>

#include <spdlog/spdlog.h>

#include "common/config.h"

namespace runpool::agent {

namespace {
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void SystemdNotifier::ready() { sd_notify(0, "READY=1"); }

void SystemdNotifier::status(const std::string& text) {
  std::string clean = text;
  for (char& c : clean) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  sd_notify(0, ("STATUS=" + clean).c_str());
}

void SystemdNotifier::watchdog() { sd_notify(0, "WATCHDOG=1"); }
void SystemdNotifier::stopping() { sd_notify(0, "STOPPING=1"); }

std::optional<Duration> SystemdNotifier::watchdog_interval() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
  return std::chrono::duration_cast<Duration>(std::chrono::microseconds(usec));
}

Watchdog::Watchdog(Notifier& notifier, std::optional<Duration> interval) : notifier_(notifier), interval_(interval) {
  last_alive_ns_ = steady_ns();
  if (interval_) {
    spdlog::info("systemd watchdog every {}", format_duration(*interval_));
    thread_ = std::thread([this] { run(); });
  }
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::alive() { last_alive_ns_ = steady_ns(); }

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mu_);
  bool warned = false;
  while (!stop_) {
    auto since = std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(steady_ns() - last_alive_ns_.load()));
    if (should_pet(since, *interval_)) {
      notifier_.watchdog();
      warned = false;
    } else if (!warned) {
      spdlog::error("the main loop has shown no life for {}: no longer petting the watchdog", format_duration(since));
      warned = true;
    }
    cv_.wait_for(lock, *interval_ / 2, [this] { return stop_; });
  }
}

}  // namespace runpool::agent
