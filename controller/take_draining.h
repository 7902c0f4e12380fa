// A provision that its class queue could not satisfy takes what is draining in its class
// (common/pool/draining_claim.h): one scan of the table, then each instance whose agent reported
// `drained` is finished as release would have finished it — its runner confirmed gone on GitHub
// by name (settle_runner), returned to idle — and claimed at once for the provision's label; then,
// up to a drain's expected time, the instances still draining are waited for and taken the same
// way as they report `drained`. Every step is the usual conditional write, so a concurrent
// provision, release or refresh finishing the same instance wins or loses it whole; the wait itself
// is written on each awaited record first (pool::await_drain), so two provisions never both wait
// for one drain: the second launches at once instead.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "common/pool/draining_claim.h"
#include "controller/claim_pool.h"
#include "controller/context.h"

namespace runpool::controller {

class DrainingTakeover {
 public:
  // `plan`: the provision's claim (class, usage, types, label, registration token and URL, the
  // provision's deadline); plan.count is what it still lacks.
  DrainingTakeover(Context& ctx, const ClaimPlan& plan);

  // Reads the table, plans, and finishes and claims the drained instances it can take. A failed
  // scan is logged and plans nothing (the provision launches instead).
  void finish_drained();
  // How many draining instances are worth waiting for.
  int awaitable() const { return static_cast<int>(plan.await.size()); }
  // Waits for the awaited drains until enough are taken, their expected end (at most the
  // provision's deadline) or a cancellation; each `drained` is finished and claimed as it comes.
  void await_drains();

  std::vector<pool::InstanceRecord> claimed;  // as written: claimed(gen + 1) for the label
  pool::DrainingPlan plan;

 private:
  int taken() const { return static_cast<int>(claimed.size()); }
  bool enough() const { return taken() >= plan_.count; }
  // Marks each awaited record as this provision's wait (pool::await_drain); one another provision
  // marked first, or that moved on, is dropped from the wait and launched instead.
  void reserve_awaited(int64_t expected_drain_ms);
  // A drained record (as read) finished and, when it returned, claimed. True when claimed.
  bool take(const pool::InstanceRecord& drained);
  // An idle record claimed for the label when the claim judge agrees; true when the write won.
  bool claim_idle(const pool::InstanceRecord& idle);

  Context& ctx_;
  const ClaimPlan& plan_;
  std::optional<Secret> remove_token_;  // asked for only when an agent hands its refused token back
};

}  // namespace runpool::controller
