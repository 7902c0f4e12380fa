// runpoolctl refresh: expiry, reconciliation, leak and ghost sweeps (written by the refresh work).
#pragma once

#include "common/pool/lease_store.h"
#include "controller/context.h"

namespace runpool::controller {

struct RefreshOptions {
  bool dry_run = false;
  bool json = false;
  // Where the last full listing of GitHub's runners is noted (common/pool/runner_listing.h); null:
  // every pass lists in full.
  pool::LeaseStore* listing_marker = nullptr;
};

int run_refresh(Context& ctx, const RefreshOptions& options);

}  // namespace runpool::controller
