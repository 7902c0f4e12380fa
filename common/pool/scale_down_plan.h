// `runpoolctl scale-down` as a pure decision: seed 000's two-phase pass (docs/design.md, "Scale-down")
// over one snapshot — the table's records (the first source of truth), the agents' busy reports in
// them (the authority on busy), GitHub's runners per owner (the cross-check for registered runners),
// the last-chance lookups of marked orphans, the idle quota of each class, and the time (AWS clock).
// The controller's shell (controller/scale_down.cc) gathers the snapshot and carries the plan out;
// every write it makes is a conditional step built from the record as read here.
//
// Phase 1, orphans (records scale-down marked on an earlier pass; a terminating one is refresh's and
// stays in phase 2 under [terminating]):
//   bypass mark                                   → keep                      [bypass]
//   the agent reports busy and still beats        → keep                      [orphan.agent-busy]
//   no runner id                                  → terminate                 [orphan.no-runner-id]
//   runner id, GitHub: 404                        → terminate                 [orphan.gone]
//   runner id, GitHub names it not the generation's runner → terminate, that runner untouched
//                                                                             [orphan.not-its-runner]
//   runner id, GitHub: offline and busy           → terminate                 [orphan.offline-busy]
//   runner id, GitHub: exists otherwise           → remove the mark           [orphan.false-positive]
//   runner id, the lookup failed                  → keep, retried next pass   [orphan.lookup-failed]
// Phase 2, every other record of the pool, grouped by owner (the scope of its reg_url); a record's
// runner on GitHub is the one named runner_name(pool, instance, generation), never one found by the
// record's runner_id alone (the agent's word: runner_identity.h):
//   bypass mark                                   → keep                      [bypass]
//   terminating                                   → keep (refresh's)          [terminating]
//   draining, shared, drained for its generation:
//     GitHub lists its runner online               → keep (the word is forgeable) [drained.runner-online]
//     the owner's runner list failed                → keep                      [drained.unconfirmed]
//     otherwise                                     → terminate                 [drained]
//   draining otherwise                            → keep                      [draining]
//   idle (a run-scoped pool instance, never registered while idle):
//     runtime < minimum running time              → keep                      [min-running-time]
//     idle quota left                             → keep, uses one slot       [idle.quota]
//     quota full                                  → retire idle → terminating [idle.over-quota]
//   created / claimed / running, the owner's runner list failed → keep        [github.unavailable]
//   created / claimed / running, missing from GitHub:
//     boot time exceeded (since the state began)  → mark orphan               [missing.boot-exceeded]
//     still booting                               → keep                      [missing.booting]
//   created / claimed, found                      → keep (registering)        [registering]
//   running, run-scoped, found                    → keep (a workflow's)       [assigned]
//   running, shared, found:
//     runtime < minimum running time              → keep                      [min-running-time]
//     the agent or GitHub says busy               → keep                      [busy.agent | busy.github]
//     idle quota left                             → keep, uses one slot       [idle.quota]
//     quota full                                  → drain, then terminate     [idle.over-quota]
// One deliberate change from seed 000: busy runners are kept before the quota is counted, so the
// quota counts idle runners only (in seed 000 a busy runner can take an idle slot, and an idle one
// is then removed while the pool has no idle runner left).
//
// The quota is per resource class, across owners: the class's candidates (the rows that consult
// the quota) are ordered by the eviction strategy, and the first `idle` of them are kept.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/pool/idle_quota.h"
#include "common/pool/instance_record.h"
#include "common/pool/refresh_plan.h"

namespace runpool::pool {

struct ScaleDownPolicy {
  int64_t min_running_linux_ms = 5 * 60'000;     // a record's os "windows" uses the other; "" is linux
  int64_t min_running_windows_ms = 15 * 60'000;
  int64_t boot_time_ms = 5 * 60'000;  // missing from GitHub this long into created/claimed/running → orphan
  int64_t agent_silence_ms = 10 * 60'000;  // an orphan's busy report counts only while its agent beats
};

// One last-chance GET of an orphan's runner by id.
struct RunnerLookup {
  enum class Result { kFound, kNotFound, kFailed };
  Result result = Result::kFailed;
  RunnerView runner;  // kFound
  std::string error;  // kFailed
};

struct ScaleDownSnapshot {
  std::string pool;
  int64_t now_ms = 0;
  std::vector<InstanceRecord> records;  // the whole scan; other pools' records are ignored
  // GitHub's runners, one paginated list per owner scope (owners_to_list); nullopt: the list failed.
  std::map<std::string, std::optional<std::vector<RunnerView>>> runners;
  std::map<int64_t, RunnerLookup> lookups;  // by runner id (orphan_lookups)
  std::map<std::string, IdleQuota> quotas;  // by resource class; a class not here: 0, oldest_first
};

enum class ScaleDownKind {
  kKeep,          // nothing to do; the rule says why
  kMarkOrphan,    // set orphan_since (conditional on state and generation)
  kUnmarkOrphan,  // clear orphan_since: GitHub knows the runner (a false positive)
  kTerminate,     // begin_terminate, TerminateInstances, close_record once EC2 says so
  kRetire,        // an idle pool instance: idle(gen) → terminating, then as kTerminate
  kDrain,         // a shared runner: GET it (busy re-check), start_drain (agent not busy), wait for
                  // drained, then terminate — only after its deregistration succeeded
};

std::string_view scale_down_kind_name(ScaleDownKind kind);  // "keep", "mark-orphan", …

struct ScaleDownDecision {
  ScaleDownKind kind = ScaleDownKind::kKeep;
  int phase = 2;       // 1: orphans, 2: active instances
  std::string rule;    // stable id, e.g. "idle.over-quota"
  std::string reason;  // readable, for --dry-run and logs
  std::string owner;   // owner scope, "" for records that never need GitHub (idle, terminating)
  InstanceRecord record;  // as read: the conditional write is built from it
  int64_t runner_id = 0;  // the matched or recorded GitHub runner, 0 when none
};

struct ScaleDownPlan {
  // One decision per record of the pool (terminated records excepted): phase 1 first, then phase 2
  // by owner, within an owner by resource class and eviction order.
  std::vector<ScaleDownDecision> decisions;
  std::vector<std::string> notes;  // e.g. an owner whose runner list failed
};

ScaleDownPlan plan_scale_down(const ScaleDownSnapshot& snapshot, const ScaleDownPolicy& policy);

// What the shell must read before planning: the owners whose runners phase 2 needs (records of
// the pool in created, claimed or running, or shared, draining and drained; not orphan-marked), and
// the runner ids of marked orphans
// to look up (not bypassed, with a runner id, not terminating).
std::vector<std::string> owners_to_list(const std::vector<InstanceRecord>& records, const std::string& pool);
std::vector<int64_t> orphan_lookups(const std::vector<InstanceRecord>& records, const std::string& pool);

// The owner scope of a registration URL: "https://github.com/acme/app" → "acme/app",
// "https://ghe.example/acme" → "acme"; "" when the URL has no path.
std::string owner_scope(const std::string& reg_url);

// The busy re-check right before a drain: given a fresh GET of the runner, the decision to carry
// out — the drain itself, or a keep when GitHub now says busy [busy.github-recheck] or the GET
// failed [github.recheck-failed]. A runner GitHub no longer knows is still drained.
ScaleDownDecision recheck_before_drain(const ScaleDownDecision& drain, const RunnerLookup& fresh);

// scale-up for a shared pool: how many instances of `resource_class` to launch so that the idle
// ones — booting (created/claimed) or running with no busy report, not draining, not orphan-marked —
// reach `quota.idle`. 0 when there are enough.
int scale_up_shortfall(const std::vector<InstanceRecord>& records, const std::string& pool,
                       const std::string& resource_class, const IdleQuota& quota);

// scale-up for a run-scoped pool: how many instances of `resource_class` to warm (provision them
// under a warm-up label, then release them into the pool) so that the idle ones — idle, or being
// warmed (a label starting with `warm_prefix`, not yet terminating) — reach `quota.idle`.
int warm_up_shortfall(const std::vector<InstanceRecord>& records, const std::string& pool,
                      const std::string& resource_class, const IdleQuota& quota, const std::string& warm_prefix);

// "drain i-0abc… [idle.over-quota]: idle shared runner beyond the quota of 2 (oldest_first)"
std::string describe(const ScaleDownDecision& decision);

}  // namespace runpool::pool
