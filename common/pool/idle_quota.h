// How many idle runners a resource class may keep at a moment, and which ones go first when there
// are more: what scale-down enforces and scale-up tops up to. The schedule (common/schedule/)
// decides it from the time; scale_down_plan.h applies it.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace runpool::pool {

// Which idle instances give up their place first when there are more than the quota allows.
//   oldest_first: the oldest are removed, the newest kept (fresh instances, e.g. newest image);
//   newest_first: the newest are removed, the oldest kept (warm caches).
// Ties (same launch time) break on the instance id, so a pass is deterministic.
enum class Eviction { kOldestFirst, kNewestFirst };

std::string_view eviction_name(Eviction e);                  // "oldest_first" | "newest_first"
std::optional<Eviction> parse_eviction(std::string_view s);  // nullopt for anything else

struct IdleQuota {
  // scale-down with no schedule and no --idle: every idle instance stays (idle_ttl retires them).
  static constexpr int kKeepAll = std::numeric_limits<int>::max();
  int idle = 0;  // idle instances of the class that may stay (kKeepAll: no limit)
  Eviction eviction = Eviction::kOldestFirst;
  std::string source;  // what decided it, for --dry-run: "schedule[2] '* 9-17 * * 1-5' Europe/Berlin", "--to 3", "no schedule entry matches"
};

}  // namespace runpool::pool
