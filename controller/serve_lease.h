// The lease of a scale set `runpoolctl serve` holds (common/pool/lease.h), kept by a thread of its
// own so that no call the serving loop waits on (a launch, a claim, a long poll) can delay a
// renewal. It is created, renewed and taken over as pool::decide_lease says; given up at stop (so
// a standby takes over at once) and when the holder cannot serve: step_back() gives it up and
// keeps away from it for a while, so that a standby takes it within the lease's time.
#pragma once

#include <atomic>
#include <functional>
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

  void start();
  // Stops the thread and gives the lease up.
  void stop();

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
