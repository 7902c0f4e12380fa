// One reconcile pass of `runpoolctl serve`, decided over plain data: from the scale set's records
// (and the pool's depth, when runners are short) and what its session said, which finished names
// are done with, the upkeep each record needs (pool::plan_upkeep), and the demand plan
// (pool::plan_demand) with the records of the armed runners to remove. Pure; the serving loop
// (serve.cc) gathers the snapshot and carries the pass out.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/github/scaleset_types.h"
#include "common/pool/demand_plan.h"
#include "common/pool/instance_record.h"
#include "common/pool/scale_set_upkeep.h"
#include "controller/session_demand.h"

namespace runpool::controller {

struct ServeSnapshot {
  std::string pool;
  std::string scale_set;
  int64_t now_ms = 0;
  // The set's records (by its label), and those claimed or launched so recently that the label
  // index may not list them yet.
  std::vector<pool::InstanceRecord> records;
  int min_armed = 0;
  int max_runners = 0;
  int64_t return_wait_ms = 0;  // 0: the class never reuses an instance, so none is awaited
  int64_t arm_grace_ms = 0;
  // The warm pool's depth. Read only when runners are short (a request to the queue): nullopt
  // until then, and the pass says so (needs_claimable).
  std::optional<int> claimable;
  // Runner names known to be the set's under this session (looked up, or made by it). A busy
  // runner not among them may have finished while no session listened: its end is not awaited
  // as a message.
  std::set<std::string> known;
};

struct ServePass {
  // Finished runner names whose instance has left that assignment: the session's note of them is
  // dropped (the others stay until their drain is written).
  std::vector<std::string> forget;
  std::vector<pool::Upkeep> upkeep;
  pool::DemandFacts facts;  // what the plan was made from (the metrics sample reads the runners)
  pool::DemandPlan plan;
  // Runners are short and the pool's depth was not in the snapshot: read it and decide again; the
  // plan's claims and launches are not to be acted on meanwhile.
  bool needs_claimable = false;
  std::vector<pool::InstanceRecord> remove;  // the records of plan.remove, in its order
  // Nothing to do and nothing on its way: every runner armed (none in surplus) or busy under this
  // session, no upkeep. The set's next change then comes as a message of the session (a job assigned,
  // started or completed), which wakes the serving loop at once: the next timed pass may wait
  // kQuietPassWait instead of serve_reconcile_interval.
  bool quiet = false;
};

// The longest a quiet set goes without a pass: what no message tells of (an agent's `failed` or
// `interrupted`, a completion the session missed) is seen within it. One table Query a minute
// while nothing happens.
inline constexpr std::chrono::seconds kQuietPassWait{60};

ServePass plan_serve_pass(const ServeSnapshot& snapshot, const SessionDemand& session);

// The set's armed runners to look up on GitHub by name, each once under a session. A JIT runner
// whose JobCompleted the session never heard — it came before the session opened, or went with
// the queue of a scale set deleted and created again — is gone from GitHub, yet its record reads
// armed once its agent reports the runner idle, which may be long after the session opened.
// Counted as a runner it holds back the one a waiting job needs, and the set's jobs are never
// offered to it. `known`: the names already looked up (or made) under this session; `finished`:
// those the session heard of. Pure.
struct RunnerLookups {
  std::vector<std::string> look_up;  // in the records' order
  std::set<std::string> known;       // `known` kept to the records' current assignments
};
RunnerLookups plan_runner_lookups(const ServeSnapshot& snapshot, const std::set<std::string>& known,
                                  const std::set<std::string>& finished);

// Whether the runner GitHub answered for a record's name can take scale set `set_id`'s jobs: none
// (removed after its job, or with its deleted set) and another set's cannot; its instance is done.
bool serves_scale_set(const std::optional<github::ScaleSetRunner>& runner, int64_t set_id);

}  // namespace runpool::controller
