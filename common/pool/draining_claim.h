// A provision whose class queue could not satisfy it looks at the instances of its class that are
// still draining (a release that did not wait leaves them so): one its agent reported `drained`
// for is finished now — its runner confirmed gone on GitHub, returned, claimed; one still
// draining, soon done, is waited for instead of launching cold. This pure plan says which, from
// the records as read; the shell is controller/take_draining.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/pool/claim.h"
#include "common/pool/instance_record.h"
#include "common/pool/reuse_policy.h"
#include "common/pool/transitions.h"

namespace runpool::pool {

// How long a drain is expected to take from its write: the stock drain's one long poll of the
// runner (the agent's drain_poll_wait, 50 s), its deregistration and the clean — 52–57 s for one,
// 68–69 s for ten draining at once on a busy 2-core host (docs/performance.md, "Release") — plus
// margin. A drain older than this is held by something else (a job that still runs, an agent gone)
// and is not waited for; none is waited for past its start + this. A constant, not a setting: it
// follows the agent's drain, and a drain that ends sooner ends the wait sooner.
inline constexpr int64_t kExpectedDrainMs = 90'000;

enum class DrainingPick {
  kFinish,  // drained for its generation: confirm on GitHub, return, claim
  kAwait,   // still draining, expected to be done soon: wait for it
  kPass,    // not for this claim (why says)
};

struct DrainingVerdict {
  DrainingPick pick = DrainingPick::kPass;
  std::string why;  // kPass: why not
};

// One record of the claim's pool and class, draining: may it serve the claim once returned? The
// claim judge (judge_pool_message) decides on the record as return_to_pool would leave it, tagged
// as the class's reuse policy says, so a draining instance is taken only where its pool message
// would have been claimed; one another provision waits for (await_drain) is its. `expected_drain_ms`:
// see kExpectedDrainMs.
DrainingVerdict judge_draining(const InstanceRecord& r, const ClaimRequest& request, const ReusePolicy& policy,
                               const Timeouts& timeouts, int64_t expected_drain_ms = kExpectedDrainMs);

struct DrainingFacts {
  std::vector<InstanceRecord> records;  // the table's, as scanned: any pool, class and state
  ClaimRequest request;                 // the claim's (its pool, class, scope, the time …)
  ReusePolicy policy;                   // the class's
  Timeouts timeouts;
  int need = 0;  // instances the claim still lacks
  int64_t expected_drain_ms = kExpectedDrainMs;
};

struct DrainingPlan {
  // Drained: finished and taken in this order (longest draining first) until the claim has enough;
  // every one that can serve it is listed, as one may still fail on GitHub (its runner listed).
  std::vector<InstanceRecord> finish;
  std::vector<InstanceRecord> await;   // waited for, in the order their drains started, at most need − finish
  int64_t await_until_ms = 0;          // the latest expected end of an awaited drain (0: none awaited)
  int launch_now = 0;                  // what no draining instance can cover: launched at once, not after the wait
  std::vector<std::string> notes;      // "<instance>: why not" for the class's draining records passed over
};

DrainingPlan plan_draining_claims(const DrainingFacts& f);

}  // namespace runpool::pool
