// Refresh's view of GitHub's runners at a cost that follows change (common/pool/runner_listing.h):
// in full before the table scan when the marker says a listing is due and this pass wins its
// write; otherwise, after the scan, the runners of records that changed, by id, or — when a record
// carries an agent's word to confirm — in full, keeping recorded instances' runners.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/pool/lease_store.h"
#include "common/pool/refresh_plan.h"
#include "common/pool/runner_listing.h"
#include "controller/context.h"

namespace runpool::controller {

class RunnerListing {
 public:
  using OnError = std::function<void(const std::string& what, const std::string& message)>;
  // `marker` null: every pass lists in full before the scan (as the unit tests' contexts do).
  RunnerListing(Context& ctx, pool::LeaseStore* marker, bool dry_run, OnError on_error);

  // Before the scan. Sets `runners` when this pass listed in full.
  void before_scan(std::optional<std::vector<pool::RunnerView>>& runners);
  // After the scan, unless before_scan listed.
  void after_scan(const std::vector<pool::InstanceRecord>& records,
                  std::optional<std::vector<pool::RunnerView>>& runners);

  // "full", "full after scan", "by id"; and how many runners were asked for by id.
  const std::string& mode() const { return mode_; }
  int looked_up() const { return looked_up_; }
  const std::string& why() const { return decision_.why; }

 private:
  bool win_marker();
  void list_all(std::optional<std::vector<pool::RunnerView>>& runners);
  void give_back();

  Context& ctx_;
  pool::LeaseStore* marker_;
  bool dry_run_;
  OnError on_error_;
  pool::ListingDecision decision_;
  bool listed_ = false;
  std::string mode_;
  int looked_up_ = 0;
};

}  // namespace runpool::controller
