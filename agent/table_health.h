// Whether the state table answers: every read and write of the loop and the heartbeat reports
// here, and self-termination asks how long it has been failing.
#pragma once

#include <mutex>
#include <optional>

#include "common/clock.h"

namespace runpool::agent {

class TableHealth {
 public:
  explicit TableHealth(Clock& clock) : clock_(clock) {}

  void ok() {
    std::lock_guard<std::mutex> lock(mu_);
    failing_since_.reset();
  }
  void failed() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failing_since_) failing_since_ = clock_.steady_now();
  }
  // How long every call has failed; nullopt while the last one succeeded.
  std::optional<Duration> unreachable_for() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failing_since_) return std::nullopt;
    return std::chrono::duration_cast<Duration>(clock_.steady_now() - *failing_since_);
  }

 private:
  Clock& clock_;
  mutable std::mutex mu_;
  std::optional<std::chrono::steady_clock::time_point> failing_since_;
};

}  // namespace runpool::agent
