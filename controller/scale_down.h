// runpoolctl scale-down: seed 000's two-phase pass over the pool (common/pool/scale_down_plan.h),
// and bypass-removal, the operator's mark that exempts an instance from it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "controller/context.h"

namespace runpool::controller {

struct ScaleDownOptions {
  bool dry_run = false;
  bool json = false;
  std::optional<int> idle{};  // --idle N: this quota for every class instead of the schedule's
};

// Scan the table, list GitHub's runners once per owner, look up marked orphans, plan, carry the
// plan out: no failing owner or call stops the rest; failures are reported (exit 1) and the next
// pass retries. Drains it starts are waited for up to scale_down_drain_wait, then each drained
// instance is terminated; the others finish on a later pass (or by refresh).
int run_scale_down(Context& ctx, const ScaleDownOptions& options);

// Sets (on) or clears (off) the bypass-removal mark of each instance; exit 1 if one has no record.
int run_bypass_removal(Context& ctx, const std::vector<std::string>& instance_ids, bool on, bool json);

}  // namespace runpool::controller
