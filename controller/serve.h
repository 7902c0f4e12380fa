// runpoolctl serve: the long-running controller of one runner scale set (docs/design.md,
// "Demand-driven pools"). Workflows ask only `runs-on: <scale set>`; serve learns the demand from
// the set's message session and serves it from the warm pool with just-in-time runners:
//
//   hold the lease ─→ create or find the scale set ─→ open its session (waiting out another's)
//        │                                                    │
//        │        the session's thread: long poll → acquire offered jobs → note demand and
//        │        completed jobs → acknowledge
//        │                                                    │
//        └── every serve_reconcile_interval, while the lease is held: read the set's records;
//            mark listening runners running, drain those whose job completed, return drained
//            instances to the pool (or retire them), then plan the demand (pool::plan_demand):
//            claim idle instances with a JIT configuration in their record, launch the rest,
//            remove armed runners beyond the demand (only those GitHub lets go: no job on its way).
//
// One holder at a time: the lease (common/pool/lease.h, kept by serve_lease.h) in the state table;
// every action is taken only while the lease has at least a third of its time left, so a standby
// that takes over after expiry never acts beside a paused holder.
//
// A failed session call is judged by decide_session_fault (session_fault.h): any 404 (the service
// no longer knows the session, or the set is gone) ends the session, and serve looks the set up
// again by name (creating it if it was deleted) and opens a new one; other failures are retried
// until a bound, past which serve gives the lease up and keeps away from it for one lease time,
// so a standby serves in its place (with none, it takes the lease back and tries again).
//
// The decisions are pure functions (pool::decide_lease, decide_session_fault, absorb, and the
// reconcile pass: plan_serve_pass in serve_pass.h over pool::plan_upkeep and pool::plan_demand);
// serve_server.h carries them out — its three loops (lease keeper, listener, serving loop), what
// each owns and what crosses between them are written there.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "common/github/actions_caller.h"
#include "common/github/scaleset_client.h"
#include "common/pool/lease_store.h"
#include "controller/context.h"

namespace runpool::controller {

struct ServeDeps {
  github::ScaleSetClient& scale_sets;   // the admin calls
  github::ActionsCaller& queue_caller;  // the session's queue calls, on a connection of their own
  std::atomic<bool>& stop_queue;        // set: a queue call in flight on that connection ends at once
  pool::LeaseStore& leases;
  std::string holder;  // who serves: host and process, in the lease and the session's owner name
  // More admin clients, each on a connection of its own, beside scale_sets: a burst's runner
  // configurations are made side by side (jit_mint.h). Empty: one at a time.
  std::vector<github::ScaleSetClient*> jit_lanes = {};
};

// Runs until SIGINT/SIGTERM (ctx.cancelled); then closes the session and gives the lease up so a
// standby takes over at once. Returns the exit code.
int run_serve(Context& ctx, ServeDeps& deps);

// "scaleset/<pool>/<scale set>": the lease's name; every scale set of a pool under one prefix.
std::string serve_lease_prefix(const std::string& pool);
std::string serve_lease_name(const Settings& settings);

}  // namespace runpool::controller
