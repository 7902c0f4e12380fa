#include "common/pool/runner_listing.h"

#include <algorithm>
#include <set>

#include "common/pool/runner_name.h"
#include "common/pool/transitions.h"

namespace runpool::pool {

std::string runner_listing_marker(const std::string& pool) { return "runner-listing/" + pool; }

ListingDecision decide_runner_listing(const std::string& pool, const std::optional<Lease>& marker, int64_t now_ms,
                                      const std::string& holder, bool dry_run, const ListingPolicy& policy) {
  ListingDecision d;
  if (marker && now_ms - marker->expires_ms < policy.interval_ms) {
    d.mode = ListingMode::kById;
    d.since_ms = marker->expires_ms - policy.overlap_ms;
    d.why = "last full listing " + std::to_string((now_ms - marker->expires_ms) / 1000) + "s ago";
    return d;
  }
  d.mode = ListingMode::kFull;
  d.why = marker ? "last full listing " + std::to_string((now_ms - marker->expires_ms) / 1000) + "s ago"
                 : "no full listing recorded";
  // Should the write lose, another pass lists now: look up what changed since the last listing.
  d.since_ms = (marker ? marker->expires_ms : now_ms) - policy.overlap_ms;
  if (dry_run) return d;  // a dry run writes nothing
  Lease next;
  next.name = runner_listing_marker(pool);
  next.holder = holder;
  next.generation = marker ? marker->generation + 1 : 1;
  next.expires_ms = now_ms;
  d.write = next;
  d.create = !marker;
  d.read_generation = marker ? marker->generation : 0;
  return d;
}

bool needs_full_listing(const std::vector<InstanceRecord>& records, const std::string& pool) {
  for (const auto& r : records) {
    if (r.pool != pool) continue;
    const bool assigned = r.state == State::kCreated || r.state == State::kClaimed || r.state == State::kRunning ||
                          r.state == State::kDraining;
    if (assigned && agent_reported(r, AgentSignal::kFailed)) return true;
    if (r.state == State::kDraining && agent_reported(r, AgentSignal::kDrained)) return true;
  }
  return false;
}

Lease listing_given_back(const Lease& written) {
  Lease back = written;
  back.generation = written.generation + 1;
  back.expires_ms = 0;
  return back;
}

std::vector<int64_t> runners_to_look_up(const std::vector<InstanceRecord>& records, const std::string& pool,
                                        int64_t since_ms) {
  std::vector<int64_t> ids;
  for (const auto& r : records) {
    if (r.pool != pool || r.runner_id == 0) continue;
    const bool settled = r.state == State::kIdle || r.state == State::kTerminating || r.state == State::kTerminated;
    if (settled && r.state_since_ms >= since_ms) ids.push_back(r.runner_id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::vector<RunnerView> keep_recorded(const std::vector<RunnerView>& runners, const std::vector<InstanceRecord>& records,
                                      const std::string& pool) {
  std::set<std::string> recorded;
  for (const auto& r : records) {
    if (r.pool == pool) recorded.insert(r.instance_id);
  }
  std::vector<RunnerView> out;
  for (const auto& v : runners) {
    auto parts = parse_runner_name(pool, v.name);
    if (parts && recorded.count(parts->instance_id)) out.push_back(v);
  }
  return out;
}

}  // namespace runpool::pool
