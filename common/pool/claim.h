// Deciding whether a pool message may be claimed: a pure function of the message, the instance's
// record and the request. The controller then still has to win the conditional idle → claimed
// write; this only says whether trying makes sense, and what to do with the message if not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/pool/instance_record.h"

namespace runpool::pool {

// What a pool message says: which instance, and for which idle generation it was advertised.
struct PoolMessage {
  std::string instance_id;
  int64_t generation = 0;
};

struct ClaimRequest {
  std::string resource_class;
  std::optional<UsageClass> usage_class;       // nullopt: either
  std::vector<std::string> allowed_type_globs;  // shell globs ("c*", "m7i.*"); empty: any type
  int64_t now_ms = 0;
  int64_t min_remaining_ms = 0;      // the instance must outlive the claim by this much
  int64_t max_heartbeat_age_ms = 0;  // the agent must have beaten this recently
  // The claiming pool: several pools may share a table, and a message in this pool's queue naming
  // another pool's instance (forged, or a queue shared by mistake) must never claim it. Empty: any.
  std::string pool;
  // The class's max_instance_age (0: none): an older instance, or one `runpoolctl retire` marked,
  // is never claimed; refresh retires it.
  int64_t max_instance_age_ms = 0;
  // The claim's reuse scope (common/pool/reuse_policy.h: "repository:owner/name" or "owner:owner";
  // "" when unknown): an instance tagged with another scope is left to a claimer of its own.
  std::string reuse_scope_key;
};

enum class MessageFate {
  kClaim,    // try the conditional write
  kDrop,     // the message is stale for good: delete it
  kRelease,  // valid, but not for this request: make it visible again for others
};

struct ClaimVerdict {
  MessageFate fate;
  std::string reason;  // why, for logs and tests
};

// `record` is nullopt when the table has no item for the message's instance.
ClaimVerdict judge_pool_message(const PoolMessage& message, const std::optional<InstanceRecord>& record,
                                const ClaimRequest& request);

// True when `type` matches one of `globs` (fnmatch semantics), or `globs` is empty.
bool instance_type_allowed(const std::string& type, const std::vector<std::string>& globs);

}  // namespace runpool::pool
