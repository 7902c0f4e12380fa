#include "agent/heartbeat.h"

#include <spdlog/spdlog.h>

namespace runpool::agent {

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
    while (!stop_) {
      lock.unlock();
      beat();
      lock.lock();
      cv_.wait_for(lock, interval_, [this] { return stop_; });
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
