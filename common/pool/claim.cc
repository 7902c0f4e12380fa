#include "common/pool/claim.h"

#include <fnmatch.h>

#include "common/pool/retire_plan.h"
#include "common/pool/reuse_policy.h"

namespace runpool::pool {

bool instance_type_allowed(const std::string& type, const std::vector<std::string>& globs) {
  if (globs.empty()) return true;
  for (const auto& g : globs) {
    if (fnmatch(g.c_str(), type.c_str(), 0) == 0) return true;
  }
  return false;
}

ClaimVerdict judge_pool_message(const PoolMessage& message, const std::optional<InstanceRecord>& record,
                                const ClaimRequest& request) {
  if (!record) return {MessageFate::kDrop, "no record for the instance"};
  const InstanceRecord& r = *record;
  if (r.state != State::kIdle) return {MessageFate::kDrop, "instance is " + std::string(state_name(r.state))};
  if (r.shared) return {MessageFate::kDrop, "instance belongs to a shared pool"};
  if (!request.pool.empty() && r.pool != request.pool) return {MessageFate::kDrop, "instance belongs to another pool"};
  // A message from an earlier idle period (the instance was claimed and re-advertised since), or
  // one naming a generation the record never had (forged, or from another table).
  if (r.generation != message.generation) {
    return {MessageFate::kDrop, "message is for generation " + std::to_string(message.generation) +
                                    ", the instance is at " + std::to_string(r.generation)};
  }
  if (r.resource_class != request.resource_class) return {MessageFate::kDrop, "resource class differs"};
  if (r.deadline_ms - request.now_ms < request.min_remaining_ms) {
    return {MessageFate::kDrop, "instance expires too soon"};
  }
  if (request.now_ms - r.heartbeat_ms > request.max_heartbeat_age_ms) {
    return {MessageFate::kDrop, "agent heartbeat is stale"};
  }
  // Outdated instances are never claimed, even when nothing else is warm: a launch serves the
  // job on the current image instead, and refresh retires this one.
  if (std::string due = retirement_due(r, request.now_ms, request.max_instance_age_ms); !due.empty()) {
    return {MessageFate::kDrop, "instance is due for retirement (" + due + ")"};
  }
  // The instance is fine, just not for this request: leave it to another provision.
  if (request.usage_class && *request.usage_class != r.usage_class) {
    return {MessageFate::kRelease, "usage class differs"};
  }
  if (!instance_type_allowed(r.instance_type, request.allowed_type_globs)) {
    return {MessageFate::kRelease, "instance type not allowed"};
  }
  if (!scope_may_claim(r.reuse_scope_key, request.reuse_scope_key)) {
    return {MessageFate::kRelease, "instance is kept for " + r.reuse_scope_key};
  }
  return {MessageFate::kClaim, "valid"};
}

}  // namespace runpool::pool
