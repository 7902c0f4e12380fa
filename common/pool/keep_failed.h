// keep_failed (a controller setting): a failed instance is kept running for inspection instead of
// terminated, out of service, and terminated once the keep is over. Failed means its agent
// reported failed for its current assignment, or — where the caller judged that it timed out
// registering — it never registered. Every path that would terminate such an instance (refresh,
// provision, serve) asks keep_verdict first, so an operator finds it whichever noticed.
#pragma once

#include <cstdint>
#include <string>

#include "common/pool/instance_record.h"
#include "common/pool/transitions.h"

namespace runpool::pool {

enum class KeepVerdict {
  kNotKept,   // terminate as usual
  kKeep,      // failed: keep it (keep_for_inspection), from now for the keep time
  kKept,      // kept, and the keep is not over: leave it alone
  kKeepOver,  // kept, and the keep is over: terminate it now
};

// `unregistered_failed`: the caller is about to terminate the instance because it did not
// register in time (a created or claimed record without `registered` then counts as failed).
// keep_failed_ms <= 0: keeping is off (a record kept earlier still ends when its keep does).
KeepVerdict keep_verdict(const InstanceRecord& r, int64_t now_ms, int64_t keep_failed_ms, bool unregistered_failed);

// created|claimed|running|draining(gen) → the same, kept until now + keep_ms: its deadline moves
// there too (the agent's own backstop waits for it), and its registration credentials go, so an
// agent that had not registered yet cannot start serving jobs now.
Step keep_for_inspection(const InstanceRecord& r, int64_t now_ms, int64_t keep_ms);

// "kept for inspection until 2026-11-28T10:00:00Z (keep_failed)"
std::string kept_description(const InstanceRecord& r);

}  // namespace runpool::pool
