#include "controller/runner_listing.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

namespace runpool::controller {

RunnerListing::RunnerListing(Context& ctx, pool::LeaseStore* marker, bool dry_run, OnError on_error)
    : ctx_(ctx), marker_(marker), dry_run_(dry_run), on_error_(std::move(on_error)) {}

void RunnerListing::list_all(std::optional<std::vector<pool::RunnerView>>& runners) {
  try {
    std::vector<pool::RunnerView> all;
    for (const auto& r : ctx_.github.list()) all.push_back({r.id, r.name, r.busy, r.online()});
    runners = std::move(all);
  } catch (const std::exception& e) {
    on_error_("listing GitHub runners (ghost sweep skipped)", e.what());
    give_back();
  }
}

// The marker this pass wrote names a listing that did not happen: the next pass lists.
void RunnerListing::give_back() {
  if (!marker_ || !decision_.write || decision_.mode != pool::ListingMode::kFull || mode_ == "full after scan") return;
  try {
    marker_->replace(pool::listing_given_back(*decision_.write), decision_.write->generation);
  } catch (const std::exception& e) {
    spdlog::warn("refresh: giving the runner-listing marker back: {}", e.what());
  }
}

// Reads the marker and, when a listing is due, writes it conditionally. A marker that cannot be
// read or written costs a full listing, never a missed one.
bool RunnerListing::win_marker() {
  pool::ListingPolicy policy{};
  policy.interval_ms = ctx_.settings.runner_listing_interval.count();
  const std::string name = pool::runner_listing_marker(ctx_.settings.pool);
  try {
    decision_ = pool::decide_runner_listing(ctx_.settings.pool, marker_->get(name), ctx_.now_ms(),
                                            "refresh pid " + std::to_string(::getpid()), dry_run_, policy);
    if (decision_.mode == pool::ListingMode::kById) return false;
    if (!decision_.write) return true;  // dry run
    const bool won = decision_.create ? marker_->create(*decision_.write)
                                      : marker_->replace(*decision_.write, decision_.read_generation);
    if (!won) {
      decision_.mode = pool::ListingMode::kById;
      decision_.why = "another pass took the full listing due";
    }
    return won;
  } catch (const std::exception& e) {
    spdlog::warn("refresh: the runner-listing marker {}: {}; listing in full", name, e.what());
    decision_.mode = pool::ListingMode::kFull;
    decision_.why = "the marker could not be read or written";
    return true;
  }
}

void RunnerListing::before_scan(std::optional<std::vector<pool::RunnerView>>& runners) {
  if (marker_ && ctx_.settings.runner_listing_interval.count() > 0 && !win_marker()) return;
  if (decision_.why.empty()) decision_.why = "every pass lists";
  list_all(runners);
  listed_ = true;
  mode_ = "full";
}

void RunnerListing::after_scan(const std::vector<pool::InstanceRecord>& records,
                               std::optional<std::vector<pool::RunnerView>>& runners) {
  if (listed_) return;
  const std::string& pool = ctx_.settings.pool;
  if (pool::needs_full_listing(records, pool)) {
    mode_ = "full after scan";
    list_all(runners);
    if (runners) runners = pool::keep_recorded(*runners, records, pool);
    return;
  }
  mode_ = "by id";
  try {
    std::vector<pool::RunnerView> found;
    for (int64_t id : pool::runners_to_look_up(records, pool, decision_.since_ms)) {
      ++looked_up_;
      if (auto r = ctx_.github.get(id)) found.push_back({r->id, r->name, r->busy, r->online()});
    }
    // runner_id is the agent's to write: a runner it names is judged only if its own name names an
    // instance with a record (one with none may be a record written after the scan).
    runners = pool::keep_recorded(found, records, pool);
  } catch (const std::exception& e) {
    on_error_("looking up GitHub runners by id (ghost sweep skipped)", e.what());
  }
}

}  // namespace runpool::controller
