// runpoolctl retire: drain outdated instances out of a warm pool without losing a job. Idle ones
// whose AMI, runner version or agent version differs from the given current values are retired at
// once (the conditional idle(gen) → terminating refresh uses, so a concurrent claim wins or loses
// cleanly); assigned ones are marked, and their release retires them instead of returning them.
#pragma once

#include "common/pool/retire_plan.h"
#include "controller/context.h"

namespace runpool::controller {

struct RetireOptions {
  pool::RetireCriteria criteria;
  bool dry_run = false;
  bool json = false;
};

int run_retire(Context& ctx, const RetireOptions& options);

}  // namespace runpool::controller
