// The lease of a scale set `runpoolctl serve` holds (common/pool/lease.h), kept by a thread of its
// own so that no call the serving loop waits on (a launch, a claim, a long poll) can delay a
// renewal. It is created, renewed and taken over as pool::decide_lease says; given up at stop (so
// a standby takes over at once) and when the holder cannot serve: step_back() gives it up and
// keeps away from it for a while, so that a standby takes it within the lease's time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/pool/lease.h"
#include "common/pool/lease_store.h"
#include "controller/context.h"

namespace runpool::controller {

class ServeLease {
 public:
  // `on_taken` is called (on the lease's thread) when the lease becomes ours.
  ServeLease(Context& ctx, pool::LeaseStore& leases, std::string name, std::string holder,
             std::function<void()> on_taken);
  ~ServeLease();

  // Runs tick() on a thread of its own, waiting on the clock between turns.
  void start();
  // Stops the thread (if started) and gives the lease up.
  void stop();

  // One turn of the thread: reads, decides and writes the lease (or gives it up while stepping
  // back). Returns how long until the next turn is due, in ms. Tests call it on a fake clock.
  int64_t tick();

  // Whether an action may be taken now: the lease is ours for at least a third of its time more,
  // and we are not stepping back.
  bool fenced() const;

  // Gives the lease up at once (the thread writes it expired) and neither renews nor takes it for
  // `hold_off`: a standby, which looks at least every sixth of the lease's time, takes it
  // meanwhile; with none, this holder takes it again afterwards.
  void step_back(Duration hold_off);

  const std::string& name() const { return name_; }

 private:
  void loop();
  void keep();  // reads, decides and writes the lease
  void give_up();
  void set_mine(std::optional<pool::Lease> lease);

  Context& ctx_;
  const Settings& s_;
  pool::LeaseStore& leases_;
  const std::string name_;
  const std::string holder_;
  const std::function<void()> on_taken_;
  const pool::LeaseTimes times_;
  std::thread thread_;

  std::mutex wait_mu_;  // only for the thread's wait: stop() and step_back() end it early
  std::condition_variable wait_cv_;

  // The thread's own; the others read fence_until_ms_ and back_until_ms_.
  std::optional<pool::Lease> mine_;
  int64_t recheck_ms_ = 0;
  std::string last_seen_holder_ = "\n";
  std::atomic<int64_t> fence_until_ms_{0};
  std::atomic<int64_t> back_until_ms_{0};  // stepping back until then (AWS clock)
  std::atomic<bool> give_up_now_{false};
  std::atomic<bool> stop_{false};
};

}  // namespace runpool::controller
