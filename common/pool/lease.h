// One holder at a time for a long-running duty (serving a runner scale set: its message session
// admits one listener): a lease item in the state table, taken and renewed by conditional writes
// on its generation and expiring on the AWS clock, so a second controller can stand by and take
// over within a bound when the holder dies. The generation is the fencing token: it grows on every
// take-over and never on a renewal, so a holder that was paused or cut off past its expiry finds
// a newer generation and stops (kLost) instead of acting beside its successor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace runpool::pool {

struct Lease {
  std::string name;        // what is held, e.g. "scaleset/<pool>/<scale set>"
  std::string holder;      // who holds it: host and process, for status and logs
  int64_t generation = 0;  // 1 at creation, +1 at every take-over
  int64_t expires_ms = 0;  // on the AWS clock

  bool operator==(const Lease&) const = default;
};

struct LeaseTimes {
  int64_t ttl_ms = 30'000;           // how long a write holds the lease
  int64_t renew_before_ms = 10'000;  // the holder renews this long before expiry
};

enum class LeaseMove {
  kCreate,    // nobody holds it: write `next` where there is no item
  kRenew,     // ours, due for renewal: write `next` if the generation is still ours
  kTakeOver,  // another's and expired: write `next` if the generation is still the one read
  kWait,      // another's and live, or ours and not yet due: look again at `recheck_ms`
  kLost,      // we held it and it is gone or another's: stop acting, then start over unheld
};

struct LeaseDecision {
  LeaseMove move = LeaseMove::kWait;
  Lease next{};             // the lease to write (kCreate, kRenew, kTakeOver)
  int64_t recheck_ms = 0;   // kWait: when to look again (AWS clock)
  std::string why;          // for logs and status
};

const char* lease_move_name(LeaseMove m);

// What `me` does next. `current` is the lease as read now (nullopt: no item), `mine` the lease
// `me` believes it holds (nullopt: none). Pure; every case is in lease_test.cc.
LeaseDecision decide_lease(const std::string& name, const std::optional<Lease>& current, const std::string& me,
                           const std::optional<Lease>& mine, int64_t now_ms, const LeaseTimes& times);

// Whether `mine` still entitles its holder to act at `now_ms`: read as `current`, same holder and
// generation, not expired. A holder checks this before each action it fences.
bool lease_held(const std::optional<Lease>& current, const Lease& mine, int64_t now_ms);

}  // namespace runpool::pool
