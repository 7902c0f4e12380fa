#include "agent/heartbeat.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace runpool::agent {

Duration next_beat_wait(bool written, Duration interval, Duration& retry) {
  constexpr Duration kFirstRetry = std::chrono::seconds(1);
  if (written) {
    retry = kFirstRetry;
    return interval;
  }
  if (retry <= Duration::zero()) retry = kFirstRetry;
  Duration wait = std::min(retry, interval);
  retry = std::min(retry * 2, interval);
  return wait;
}

Heartbeat::Heartbeat(pool::StateTable& table, std::string instance_id, Clock& aws_clock, Duration interval,
                     std::function<bool()> busy, TableHealth& health)
    : table_(table),
      instance_id_(std::move(instance_id)),
      clock_(aws_clock),
      interval_(interval),
      busy_(std::move(busy)),
      health_(health) {}

Heartbeat::~Heartbeat() { stop(); }

bool Heartbeat::beat() {
  pool::AgentReport r;
  r.heartbeat_ms = to_epoch_ms(clock_.now());
  r.busy = busy_();
  try {
    bool ok = table_.report(instance_id_, r);
    health_.ok();
    return ok;
  } catch (const std::exception& e) {
    health_.failed();
    spdlog::warn("heartbeat failed: {}", e.what());
    return false;
  }
}

void Heartbeat::start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    Duration retry{};
    while (!stop_) {
      lock.unlock();
      const bool written = beat();
      lock.lock();
      cv_.wait_for(lock, next_beat_wait(written, interval_, retry), [this] { return stop_; });
    }
  });
}

void Heartbeat::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace runpool::agent
