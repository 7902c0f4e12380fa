#include "controller/serve_lease.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace runpool::controller {

ServeLease::ServeLease(Context& ctx, pool::LeaseStore& leases, std::string name, std::string holder,
                       std::function<void()> on_taken)
    : ctx_(ctx),
      s_(ctx.settings),
      leases_(leases),
      name_(std::move(name)),
      holder_(std::move(holder)),
      on_taken_(std::move(on_taken)),
      times_{s_.serve_lease_ttl.count(), s_.serve_lease_ttl.count() * 2 / 3} {}

ServeLease::~ServeLease() { stop(); }

void ServeLease::start() { thread_ = std::thread([this] { loop(); }); }

void ServeLease::stop() {
  stop_.store(true);
  { std::lock_guard<std::mutex> lock(wait_mu_); }  // a wait about to begin sees stop_
  wait_cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  } else {
    give_up();
  }
}

bool ServeLease::fenced() const {
  const int64_t now = ctx_.now_ms();
  return now < fence_until_ms_.load() && now >= back_until_ms_.load();
}

void ServeLease::step_back(Duration hold_off) {
  back_until_ms_.store(ctx_.now_ms() + hold_off.count());
  give_up_now_.store(true);
  { std::lock_guard<std::mutex> lock(wait_mu_); }
  wait_cv_.notify_all();
}

int64_t ServeLease::tick() {
  int64_t next_ms = 0;
  try {
    // Read before back_until_ms_, which step_back() writes first: a step back is never missed.
    const bool asked = give_up_now_.exchange(false);
    const int64_t now = ctx_.now_ms();
    if (asked || now < back_until_ms_.load()) {
      give_up();
      next_ms = back_until_ms_.load() - now;
    } else {
      keep();
      next_ms = mine_ ? mine_->expires_ms - times_.renew_before_ms - now : recheck_ms_ - ctx_.now_ms();
    }
  } catch (const std::exception& e) {
    spdlog::warn("{}: the lease could not be read or written ({})", name_, e.what());
    next_ms = s_.serve_retry_wait.count();
  }
  // Looked at again when due, at most every 100 ms. Held, at its renewal only: no one else writes
  // a lease before it expires, and the renewal's conditional write finds out if one did. Standing
  // by, at least every sixth of the lease's time.
  if (mine_) return std::max<int64_t>(next_ms, 100);
  return std::clamp<int64_t>(next_ms, 100, std::max<int64_t>(100, times_.ttl_ms / 6));
}

void ServeLease::loop() {
  while (!stop_.load()) {
    const int64_t next_ms = tick();
    std::unique_lock<std::mutex> lock(wait_mu_);
    ctx_.clock.wait_until(lock, wait_cv_, ctx_.clock.steady_now() + std::chrono::milliseconds(next_ms),
                          [this] { return stop_.load() || give_up_now_.load(); });
  }
  give_up();
}

void ServeLease::keep() {
  const int64_t now = ctx_.now_ms();
  std::optional<pool::Lease> current = leases_.get(name_);
  pool::LeaseDecision d = pool::decide_lease(name_, current, holder_, mine_, now, times_);
  bool wrote = false;
  switch (d.move) {
    case pool::LeaseMove::kCreate: wrote = leases_.create(d.next); break;
    case pool::LeaseMove::kRenew: wrote = leases_.replace(d.next, mine_->generation); break;
    case pool::LeaseMove::kTakeOver: wrote = leases_.replace(d.next, current->generation); break;
    case pool::LeaseMove::kWait:
      recheck_ms_ = d.recheck_ms;
      if (!mine_ && (current ? current->holder : "") != last_seen_holder_) {
        spdlog::info("standing by: {}", d.why);
        last_seen_holder_ = current ? current->holder : "";
      }
      return;
    case pool::LeaseMove::kLost:
      spdlog::warn("lost the lease {}: {}", name_, d.why);
      set_mine(std::nullopt);
      recheck_ms_ = now;
      return;
  }
  if (!wrote) {
    if (mine_) spdlog::warn("lost the lease {}: another controller wrote it first", name_);
    set_mine(std::nullopt);
    recheck_ms_ = now;
    return;
  }
  set_mine(d.next);
  if (d.move != pool::LeaseMove::kRenew) {
    spdlog::info("holding the lease {} (generation {}): {}", name_, d.next.generation, d.why);
    last_seen_holder_ = holder_;
    on_taken_();  // a standby starts serving now; a renewal changes nothing the serving loop waits for
  }
}

void ServeLease::set_mine(std::optional<pool::Lease> lease) {
  mine_ = std::move(lease);
  fence_until_ms_.store(mine_ ? mine_->expires_ms - times_.ttl_ms / 3 : 0);
}

void ServeLease::give_up() {
  if (!mine_) return;
  pool::Lease released = *mine_;
  released.expires_ms = 0;
  set_mine(std::nullopt);
  last_seen_holder_ = "\n";
  try {
    if (leases_.replace(released, released.generation)) spdlog::info("gave up the lease {}", name_);
  } catch (const std::exception& e) {
    spdlog::warn("could not give up the lease {} ({}); a standby takes over when it expires", name_, e.what());
  }
}

}  // namespace runpool::controller
