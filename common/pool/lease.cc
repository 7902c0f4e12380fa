#include "common/pool/lease.h"

namespace runpool::pool {

const char* lease_move_name(LeaseMove m) {
  switch (m) {
    case LeaseMove::kCreate: return "create";
    case LeaseMove::kRenew: return "renew";
    case LeaseMove::kTakeOver: return "take-over";
    case LeaseMove::kWait: return "wait";
    case LeaseMove::kLost: return "lost";
  }
  return "unknown";
}

LeaseDecision decide_lease(const std::string& name, const std::optional<Lease>& current, const std::string& me,
                           const std::optional<Lease>& mine, int64_t now_ms, const LeaseTimes& times) {
  const auto fresh = [&](int64_t generation) { return Lease{name, me, generation, now_ms + times.ttl_ms}; };
  const bool ours = current && mine && current->holder == me && current->generation == mine->generation;
  if (mine && !ours) {
    return {LeaseMove::kLost, {}, 0,
            current ? "taken over by " + current->holder + " (generation " + std::to_string(current->generation) + ")"
                    : std::string("the lease item is gone")};
  }
  if (!current) return {LeaseMove::kCreate, fresh(1), 0, "nobody holds it"};
  if (ours) {
    // Renewed even after expiry: a generation still ours means nobody took over meanwhile.
    const int64_t due = current->expires_ms - times.renew_before_ms;
    if (now_ms >= due) return {LeaseMove::kRenew, fresh(current->generation), 0, "due for renewal"};
    return {LeaseMove::kWait, {}, due, "held, renewal not yet due"};
  }
  if (now_ms >= current->expires_ms) {
    return {LeaseMove::kTakeOver, fresh(current->generation + 1), 0,
            "expired, held by " + current->holder + " (generation " + std::to_string(current->generation) + ")"};
  }
  return {LeaseMove::kWait, {}, current->expires_ms, "held by " + current->holder};
}

bool lease_held(const std::optional<Lease>& current, const Lease& mine, int64_t now_ms) {
  return current && current->holder == mine.holder && current->generation == mine.generation &&
         now_ms < current->expires_ms;
}

}  // namespace runpool::pool
