// The instances serving one runner scale set, as `runpoolctl serve` sees them in the table: which
// of the pool's records are the set's runners and in what phase (the demand plan's input), and
// the lifecycle step each needs from the controller — the steps a provision and a release take
// for a run-scoped label. Pure: serve reads the records and carries the steps out (controller/serve.cc).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/pool/demand_plan.h"
#include "common/pool/instance_record.h"

namespace runpool::pool {

// The records of `pool` assigned to `label` (the scale set's name) that count as its runners:
// created or claimed and not yet registered → starting; registered or running → busy when the
// agent says so, else armed; draining → ending. A runner named in `finished` (its job completed)
// is ending too, before its drain is written (since `now_ms`, as far as the records tell). Idle,
// terminating and terminated records are none.
std::vector<ScaleSetRunner> scale_set_runners(const std::vector<InstanceRecord>& records, const std::string& pool,
                                              const std::string& label, const std::set<std::string>& finished,
                                              int64_t now_ms);

enum class UpkeepKind {
  kMarkRunning,   // created|claimed, registered for its generation: mark_running
  kDrainFinished, // its runner's job completed: start_drain (the ephemeral runner is gone)
  kSettle,        // draining and drained: its runner settled, then back to the pool or retired
  kRetireFailed,  // its agent reported failed: its runner settled, then terminated
};

const char* upkeep_kind_name(UpkeepKind k);

struct Upkeep {
  UpkeepKind kind = UpkeepKind::kMarkRunning;
  InstanceRecord record;  // as read: the conditional write is built from it
  std::string why;
};

// The steps the set's records need now, one per record at most. `finished` holds the runner
// names whose JobCompleted the session delivered.
std::vector<Upkeep> plan_upkeep(const std::vector<InstanceRecord>& records, const std::string& pool,
                                const std::string& label, const std::set<std::string>& finished);

}  // namespace runpool::pool
