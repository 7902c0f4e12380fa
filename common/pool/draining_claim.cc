#include "common/pool/draining_claim.h"

#include <algorithm>

#include "common/pool/record_update.h"
#include "common/pool/span.h"

namespace runpool::pool {

DrainingVerdict judge_draining(const InstanceRecord& r, const ClaimRequest& request, const ReusePolicy& policy,
                               const Timeouts& timeouts, int64_t expected_drain_ms) {
  auto pass = [](std::string why) { return DrainingVerdict{DrainingPick::kPass, std::move(why)}; };
  if (r.state != State::kDraining) return pass(std::string("is ") + std::string(state_name(r.state)));
  if (r.shared) return pass("belongs to a shared pool");
  if (!request.pool.empty() && r.pool != request.pool) return pass("belongs to another pool");
  if (r.resource_class != request.resource_class) return pass("resource class differs");
  if (r.kept_until_ms != 0) return pass("kept for inspection");
  if (r.retire_pending) return pass("marked for retirement");
  if (r.awaited_until_ms > request.now_ms) return pass("awaited by another provision");
  if (agent_reported(r, AgentSignal::kFailed)) return pass("its agent reported failed");
  const DrainedDecision reuse = drained_fate(policy, scope_key_for(r.reg_url, policy.reuse_scope));
  if (reuse.fate == DrainedFate::kTerminate) return pass("its class does not reuse it (" + reuse.reason + ")");
  const bool drained = agent_reported(r, AgentSignal::kDrained);
  if (!drained) {
    // Only a drain that is on time: one past its deadlines is refresh's, one older than a drain
    // takes is held by something else.
    if (deadline_passed(r, request.now_ms) || (r.hard_deadline_ms != 0 && request.now_ms >= r.hard_deadline_ms)) {
      return pass("past its drain deadline");
    }
    if (request.now_ms - r.state_since_ms > expected_drain_ms) {
      return pass("draining for " + span(request.now_ms - r.state_since_ms) + ", longer than a drain takes");
    }
  }
  // What its pool message would say once it is returned, judged as the claim would judge it.
  InstanceRecord idle = r;
  apply(idle, return_to_pool(r, request.now_ms, timeouts, reuse.scope_key).change);
  ClaimVerdict v = judge_pool_message(PoolMessage{idle.instance_id, idle.generation}, idle, request);
  if (v.fate != MessageFate::kClaim) return pass("once returned: " + v.reason);
  return {drained ? DrainingPick::kFinish : DrainingPick::kAwait, ""};
}

DrainingPlan plan_draining_claims(const DrainingFacts& f) {
  DrainingPlan plan;
  for (const InstanceRecord& r : f.records) {
    // Only the claim's own pool and class are its business; other records are not even noted.
    if (r.state != State::kDraining || r.resource_class != f.request.resource_class ||
        (!f.request.pool.empty() && r.pool != f.request.pool)) {
      continue;
    }
    DrainingVerdict v = judge_draining(r, f.request, f.policy, f.timeouts, f.expected_drain_ms);
    switch (v.pick) {
      case DrainingPick::kFinish: plan.finish.push_back(r); break;
      case DrainingPick::kAwait: plan.await.push_back(r); break;
      case DrainingPick::kPass: plan.notes.push_back(r.instance_id + ": " + v.why); break;
    }
  }
  auto by_start = [](const InstanceRecord& a, const InstanceRecord& b) {
    return a.state_since_ms != b.state_since_ms ? a.state_since_ms < b.state_since_ms : a.instance_id < b.instance_id;
  };
  std::sort(plan.finish.begin(), plan.finish.end(), by_start);
  std::sort(plan.await.begin(), plan.await.end(), by_start);
  const int need = std::max(0, f.need);
  const int after_finish = std::max(0, need - static_cast<int>(plan.finish.size()));
  if (static_cast<int>(plan.await.size()) > after_finish) plan.await.resize(static_cast<size_t>(after_finish));
  for (const InstanceRecord& r : plan.await) {
    plan.await_until_ms = std::max(plan.await_until_ms, r.state_since_ms + f.expected_drain_ms);
  }
  plan.launch_now = after_finish - static_cast<int>(plan.await.size());
  return plan;
}

}  // namespace runpool::pool
