// Stop requests (SIGINT/SIGTERM, taken by a thread of their own with sigwait) and the waits that
// end early because of them. The main loop's wait also ends at a nudge: a wake-up from the
// agent's wake queue (wake_listener.h) asking it to read its record now.
#pragma once

#include <condition_variable>
#include <mutex>

#include "common/clock.h"

namespace runpool::agent {

class StopFlag {
 public:
  void request() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
  }
  bool requested() {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_;
  }
  // True when stopped during the wait. Nudges do not end it.
  bool wait_for(Duration d) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, d, [this] { return stop_; });
  }

  // Ends the current (or the next) wait_or_nudge early.
  void nudge() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      nudged_ = true;
    }
    cv_.notify_all();
  }
  // Waits up to `d`, less if stopped or nudged (a nudge is used up by the wait it ends). True when
  // stopped; `*nudged`, when given, tells whether a nudge ended (or came during) the wait.
  bool wait_or_nudge(Duration d, bool* nudged = nullptr) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, d, [this] { return stop_ || nudged_; });
    if (nudged) *nudged = nudged_;
    nudged_ = false;
    return stop_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool nudged_ = false;
};

}  // namespace runpool::agent
