#include "common/pool/idle_quota.h"

namespace runpool::pool {

std::string_view eviction_name(Eviction e) { return e == Eviction::kOldestFirst ? "oldest_first" : "newest_first"; }

std::optional<Eviction> parse_eviction(std::string_view s) {
  if (s == "oldest_first") return Eviction::kOldestFirst;
  if (s == "newest_first") return Eviction::kNewestFirst;
  return std::nullopt;
}

}  // namespace runpool::pool
