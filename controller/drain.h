// Returning an assignment's instances to the pool: each to draining (handing the agent a remove
// token so it deregisters its runner for real), then — once its agent reports `drained` for this
// generation — to idle and advertised in its class's queue. One EC2 reports gone or stopped while
// the wait goes on (looked at every 5 s) has no agent left to drain it: its record is closed then. Used by release and by provision's
// clean-up; every step is a conditional write, so concurrent callers never both win one.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/pool/instance_record.h"
#include "common/pool/reuse_policy.h"
#include "common/pool/runner_fate.h"
#include "common/secret.h"
#include "controller/context.h"

namespace runpool::controller {

struct DrainOutcome {
  std::vector<std::string> returned;    // idle again and advertised (by us or a concurrent caller)
  std::vector<std::string> terminated;  // not drained in time, the agent failed, or stopped in EC2: terminated
  std::vector<std::string> retired;     // drained, but terminated, not returned: see retired_reasons
  // Why each retired instance was not returned: "outdated" (marked by `runpoolctl retire`),
  // "reuse-never" (its class's reuse = never) or "reuse-no-scope" (same-scope reuse, but its
  // assignment had no repository or owner to keep it for).
  std::map<std::string, std::string> retired_reasons;
  std::vector<std::string> left;        // still draining at the end (not waited for, or not in time): the next
                                        // provision of their class or refresh finishes them, or terminates them late
  std::vector<std::string> gone;        // terminating/terminated/removed by someone else, or gone from
                                        // EC2 while draining (its record closed)
  std::vector<std::string> errors;      // "<id>: what failed"
  // What became of each settled instance's runner on GitHub: deregistered by its agent, deleted
  // by runpoolctl, or left registered (then the instance was not returned, and terminated only
  // when a deadline forced it).
  struct Runner {
    pool::RunnerFate fate;
    std::string detail;
  };
  std::map<std::string, Runner> runners;
};

struct DrainOptions {
  Duration wait{std::chrono::minutes(15)};
  bool terminate_stragglers = true;  // else leave them draining, for refresh
  bool stop_on_cancel = true;        // a cancellation ends the wait (the rest is left for refresh)
};

// Right before a drain request is written: removes the record's runner's custom labels so that
// GitHub routes it no new job (it matches no runs-on) by the time its agent sees `draining` and
// starts its one long poll's wait before deregistering it. Best effort: a failure is logged and the drain goes on (the agent's wait still covers a job
// already dispatched). Nothing to do for a record without a runner id yet. The record's runner_id
// is looked up first and used only when GitHub names that runner as the assignment's
// (pool/runner_identity.h); `verified_runner_id`, when the caller matched the runner by name
// already, skips that look-up.
void make_unmatchable(Context& ctx, const pool::InstanceRecord& record, int64_t verified_runner_id = 0);

// `remove_token` is asked for at most once, and only when some record still has to start draining.
DrainOutcome drain_to_pool(Context& ctx, const std::vector<pool::InstanceRecord>& records,
                           const std::function<Secret()>& remove_token, const DrainOptions& options);

// Makes sure the assignment's runner is gone from GitHub before its instance is terminated or
// returned. GitHub is asked for it by name (pool/runner_identity.h), never by the record's
// runner_id: none listed, nothing to do; listed — the agent left it (`agent_left`), or says it
// deregistered it and is contradicted — a DELETE with the controller's own credentials (on_delete:
// each call), which GitHub refuses while it runs a job; no answer leaves the instance unless
// `forced`. `forced`: a
// deadline makes the instance go whatever GitHub answers.
pool::RunnerFateDecision settle_runner(Context& ctx, const pool::InstanceRecord& record, bool agent_left, bool forced,
                                       const std::function<void()>& on_delete = {});

// Where a drained record ended: its runner settled on GitHub (settle_runner), then the instance
// returned to the pool or retired as its class's reuse policy (drained_decision) or an operator's
// retire mark says. kMoved: the record changed under us (look again); kRunnerLeft: its runner is
// still registered, so the instance stays draining.
enum class DrainedEnd { kReturned, kRetired, kRunnerLeft, kMoved };
struct SettledDrain {
  DrainedEnd end = DrainedEnd::kMoved;
  pool::RunnerFateDecision runner;
  std::string retired_why;        // kRetired: "outdated", "reuse-never" or "reuse-no-scope"
  pool::InstanceRecord returned;  // kReturned: the record as written, idle
};
// `advertise` false: returned without its pool message (advertise_pending stays set), for a caller
// that claims it at once and advertises it only when that fails (advertise_idle).
SettledDrain settle_drained(Context& ctx, const pool::InstanceRecord& record, bool advertise = true);

// A drain whose agent handed back a refused remove token (pool::wants_remove_token) gets a fresh
// one. True when it was written.
bool hand_fresh_remove_token(Context& ctx, const pool::InstanceRecord& record, const std::function<Secret()>& remove_token);

// draining(gen) with `drained` for gen → idle, then (`advertise`) the pool message, then
// advertise_pending cleared. The idle record as written; nullopt when the record did not meet the
// condition (someone else moved it). A failed SendMessage leaves advertise_pending set (refresh
// re-advertises) and still counts as returned. Returned untagged, or tagged with the assignment's
// scope under same-scope reuse: callers first ask drained_decision, which may say terminate instead.
std::optional<pool::InstanceRecord> return_drained(Context& ctx, const pool::InstanceRecord& record,
                                                   const std::string& reuse_scope_key = "", bool advertise = true);

// An idle record's pool message sent, then its advertise_pending cleared; a failure is logged
// (refresh re-advertises what stays pending).
void advertise_idle(Context& ctx, const pool::InstanceRecord& idle);

// The class's reuse policy applied to a drained record (common/pool/reuse_policy.h): the scope is
// its registration URL's under the class's reuse_scope.
pool::DrainedDecision drained_decision(const Settings& settings, const pool::InstanceRecord& record);

}  // namespace runpool::controller
