// Claiming warm instances from a class's pool queue (docs/design.md, "Pool messages"): long-poll
// the queue, judge each message against a consistent read of its record, win the conditional
// idle(gen) → claimed(gen+1) write, and only then delete the message. Stale messages are deleted;
// valid ones that do not suit this request are held (hidden from us) until the end, then made
// visible again for others. Stops when enough are claimed, the pool answers empty, the time is up
// or a cancellation arrives.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/pool/claim.h"
#include "common/pool/instance_record.h"
#include "common/secret.h"
#include "controller/context.h"
#include "controller/jit_mint.h"

namespace runpool::controller {

struct ClaimPlan {
  std::string resource_class;
  std::optional<pool::UsageClass> usage;  // nullopt: either
  std::vector<std::string> type_globs;    // empty: any
  int count = 0;
  std::string label;
  Secret reg_token;
  std::string reg_url;
  std::chrono::steady_clock::time_point deadline;
  // Each instance claimed moves the deadline to at least now + this (0: the deadline is fixed): a
  // claim that keeps finding instances goes on, one that stalls stops a budget after its last.
  std::chrono::milliseconds extend_per_claim{0};
  // Asked before each batch and each claim; false stops claiming (what is in hand goes back to the
  // pool). Unset: always true.
  std::function<bool()> keep_going;
  // A scale set's runners: each claimed instance gets a just-in-time configuration, made for its
  // runner name (runner_name(pool, instance, generation + 1)) in place of reg_token. `jit_configs`
  // makes a received batch's at once (jit_mint.h); `jit_discard` removes a runner made for an
  // instance that was not claimed after all (its write lost a race, or claiming stopped).
  JitMint jit_configs;
  std::function<void(const std::string& runner_name)> jit_discard;
};

struct ClaimOutcome {
  std::vector<pool::InstanceRecord> claimed;  // as written: claimed, generation + 1
  int dropped = 0;   // stale messages deleted
  int released = 0;  // valid messages left for other requests
  int examined = 0;
  std::string error;  // why claiming stopped early (an AWS error after retries); claimed is still right
};

ClaimOutcome claim_from_pool(Context& ctx, const ClaimPlan& plan);

// What the claim judge (pool::judge_pool_message) checks an instance against for `plan` at
// `now_ms`: the pool's bounds, the class's maximum age, the claim's reuse scope.
pool::ClaimRequest claim_request(const Settings& s, const ClaimPlan& plan, int64_t now_ms);

}  // namespace runpool::controller
