// runpoolctl refresh: expiry, reconciliation, leak and ghost sweeps (written by the refresh work).
#pragma once

#include "controller/context.h"

namespace runpool::controller {

struct RefreshOptions {
  bool dry_run = false;
  bool json = false;
};

int run_refresh(Context& ctx, const RefreshOptions& options);

}  // namespace runpool::controller
