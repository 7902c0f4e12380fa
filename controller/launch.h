// Launching the instances the pool could not give: CreateFleet (instant) round by round — spot
// first and on-demand after a spot shortfall when allowed, partial fulfilment kept and topped up —
// and each new instance's record written at once (created, generation 1, the registration token).
// An instance whose record cannot be written is terminated right away (and, carrying the pool's
// tags, found by refresh should that fail too).
#pragma once

#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/pool/instance_record.h"
#include "common/secret.h"
#include "controller/context.h"
#include "controller/jit_mint.h"
#include "controller/launch_plan.h"

namespace runpool::controller {

struct LaunchOrder {
  std::string resource_class;
  std::vector<std::string> types;  // launch_types(): the class's types allowed for this request
  pool::UsageClass usage = pool::UsageClass::kSpot;
  bool on_demand_fallback = true;
  int count = 0;
  std::string label;
  bool shared = false;     // a shared pool's runner (pool_mode = shared): the record says so
  std::string token_seed;  // what ClientTokens derive from besides the pool; "" = the label. scale-up
                           // adds a per-run nonce: its label repeats, its launches must not replay
  Secret reg_token;
  std::string reg_url;
  std::set<std::string> known;  // instance ids this provision already has (an idempotent replay names them again)
  std::chrono::steady_clock::time_point deadline;
  // A scale set's runners: each new record carries a just-in-time configuration made for its
  // runner name (runner_name(pool, instance, 1)) in place of reg_token; `jit_configs` makes a
  // fleet answer's at once (jit_mint.h). An instance whose configuration cannot be made is
  // terminated like one whose record cannot be written.
  JitMint jit_configs;
};

struct LaunchOutcome {
  std::vector<pool::InstanceRecord> records;  // written, created
  int fleet_calls = 0;
  std::vector<std::string> problems;  // capacity errors and the like, for the message
};

// Fills `out` as it goes. Throws only for errors that are not capacity (AWS errors after retries,
// e.g. a bad launch template); `out` then holds what was launched and recorded before the error.
void launch_instances(Context& ctx, const LaunchOrder& order, LaunchOutcome& out);

// Creates a run-scoped instance's wake-up queue (common/pool/wake_queue.h); a failure is only
// logged: without it the agent reads its record every assignment_poll_interval.
void make_wake_queue(Context& ctx, const std::string& instance_id);

}  // namespace runpool::controller
