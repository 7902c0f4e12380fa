#include "controller/take_draining.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/pool/record_update.h"
#include "common/pool/transitions.h"
#include "controller/await_agents.h"
#include "controller/drain.h"
#include "controller/pool_queue.h"

namespace runpool::controller {

DrainingTakeover::DrainingTakeover(Context& ctx, const ClaimPlan& plan) : ctx_(ctx), plan_(plan) {}

void DrainingTakeover::finish_drained() {
  if (plan_.count <= 0) return;
  pool::DrainingFacts f;
  try {
    // Eventually consistent, and that is enough: nothing is done to a record on this read alone
    // (the conditional writes, the wait's consistent batch reads decide). No index fits: the
    // table's only one is by label, and a draining record keeps its assignment's label.
    ctx_.table.scan_eventually([&](const pool::InstanceRecord& r) {
      if (r.state == pool::State::kDraining && r.resource_class == plan_.resource_class) f.records.push_back(r);
    });
  } catch (const std::exception& e) {
    spdlog::warn("could not look for draining instances of class {} ({}); launching instead", plan_.resource_class,
                 e.what());
    plan.launch_now = plan_.count;
    return;
  }
  f.request = claim_request(ctx_.settings, plan_, ctx_.now_ms());
  f.policy = ctx_.settings.reuse_policy_for(plan_.resource_class);
  f.timeouts = ctx_.settings.timeouts;
  f.need = plan_.count;
  plan = pool::plan_draining_claims(f);
  for (const auto& n : plan.notes) spdlog::info("draining instance {}: not for this claim", n);
  reserve_awaited(f.expected_drain_ms);
  if (!plan.finish.empty() || !plan.await.empty()) {
    spdlog::info("pool {} is short by {}: {} drained instance(s) to finish, {} draining to wait for", plan_.resource_class,
                 plan_.count, plan.finish.size(), plan.await.size());
  }
  for (const auto& r : plan.finish) {
    if (enough() || ctx_.cancelled.load()) break;
    try {
      take(r);
    } catch (const std::exception& e) {
      spdlog::warn("instance {}: finishing its drain failed ({}); left to refresh", r.instance_id, e.what());
    }
  }
}

void DrainingTakeover::reserve_awaited(int64_t expected_drain_ms) {
  std::vector<pool::InstanceRecord> won;
  for (pool::InstanceRecord r : plan.await) {
    // Until its drain's expected end: a wait that outlives that is not worth having.
    pool::Step step = pool::await_drain(r, r.state_since_ms + expected_drain_ms, ctx_.now_ms());
    bool ok = false;
    try {
      ok = ctx_.table.transition(r.instance_id, step.expect, step.change);
    } catch (const std::exception& e) {
      spdlog::warn("instance {}: could not mark it awaited ({})", r.instance_id, e.what());
    }
    if (ok) {
      pool::apply(r, step.change);
      won.push_back(r);
    } else {
      // Another provision waits for it, or it moved on: launched instead, now rather than late.
      spdlog::info("draining instance {}: awaited by another provision, or no longer draining; launching instead",
                   r.instance_id);
      ++plan.launch_now;
    }
  }
  plan.await = std::move(won);
  plan.await_until_ms = 0;
  for (const auto& r : plan.await) plan.await_until_ms = std::max(plan.await_until_ms, r.awaited_until_ms);
}

bool DrainingTakeover::take(const pool::InstanceRecord& r) {
  // Returned without its pool message: it is claimed next, and advertised only if that fails.
  SettledDrain settled = settle_drained(ctx_, r, false);
  switch (settled.end) {
    case DrainedEnd::kReturned:
      if (claim_idle(settled.returned)) return true;
      advertise_idle(ctx_, settled.returned);
      return false;
    case DrainedEnd::kMoved: {
      // A concurrent release, provision or refresh returned it first: claim it if still idle.
      auto now = ctx_.table.get(r.instance_id);
      return now && now->state == pool::State::kIdle && now->generation == r.generation && claim_idle(*now);
    }
    case DrainedEnd::kRetired:
    case DrainedEnd::kRunnerLeft:
      return false;
  }
  return false;
}

bool DrainingTakeover::claim_idle(const pool::InstanceRecord& idle) {
  if (enough()) return false;
  const pool::ClaimVerdict v = pool::judge_pool_message(pool::PoolMessage{idle.instance_id, idle.generation}, idle,
                                                         claim_request(ctx_.settings, plan_, ctx_.now_ms()));
  if (v.fate != pool::MessageFate::kClaim) {
    spdlog::info("instance {} is back in the pool but not for this claim: {}", idle.instance_id, v.reason);
    return false;
  }
  pool::Step step = pool::claim(idle, plan_.label, plan_.reg_token, plan_.reg_url, ctx_.now_ms(), ctx_.settings.timeouts);
  if (!ctx_.table.transition(idle.instance_id, step.expect, step.change)) {
    spdlog::info("lost the race for {} once it was back in the pool", idle.instance_id);
    return false;
  }
  pool::InstanceRecord claimed_record = idle;
  pool::apply(claimed_record, step.change);
  spdlog::info("claimed {} ({}, {}) straight from its drain: generation {}", claimed_record.instance_id,
               claimed_record.instance_type, pool::usage_class_name(claimed_record.usage_class),
               claimed_record.generation);
  claimed.push_back(claimed_record);
  wake_agents(ctx_.queue, {claimed_record.instance_id});  // it registers now, not at its next poll
  try {
    ctx_.compute.tag_label({claimed_record.instance_id}, plan_.label);
  } catch (const std::exception& e) {
    spdlog::warn("could not tag {} with runpool:label {}: {}", claimed_record.instance_id, plan_.label, e.what());
  }
  return true;
}

void DrainingTakeover::await_drains() {
  if (enough() || plan.await.empty() || ctx_.cancelled.load()) return;
  std::vector<AwaitItem> items;
  for (const auto& r : plan.await) items.push_back(AwaitItem{r, false});
  AwaitOptions o;
  o.awaited = pool::Awaited::kDrained;
  const Duration left{std::max<int64_t>(0, plan.await_until_ms - ctx_.now_ms())};
  o.deadline = std::min(plan_.deadline, ctx_.clock.steady_now() + left);
  o.stop_on_cancel = true;
  spdlog::info("waiting up to {} for {} draining instance(s) of class {} rather than launching", format_duration(left),
               items.size(), plan_.resource_class);
  AwaitResult res = await_agents(ctx_, std::move(items), o,
                                 [&](const pool::HandshakeFacts& f, const pool::HandshakeDecision& d) {
    switch (d.verdict) {
      case pool::Verdict::kDone:
        take(*f.current);
        return enough() ? AwaitAction::kStop : AwaitAction::kResolve;
      case pool::Verdict::kMovedOn:
        // Returned by someone else (a release that waited, refresh) and perhaps still idle.
        if (f.current && f.current->state == pool::State::kIdle && f.current->generation == f.written->generation) {
          claim_idle(*f.current);
        }
        return enough() ? AwaitAction::kStop : AwaitAction::kResolve;
      case pool::Verdict::kWrite:
        hand_fresh_remove_token(ctx_, *f.current, [&] {
          if (!remove_token_) remove_token_ = ctx_.github.remove_token();
          return *remove_token_;
        });
        return AwaitAction::kKeep;
      case pool::Verdict::kWait:
        return AwaitAction::kKeep;
      case pool::Verdict::kFail:
      case pool::Verdict::kGone:
        // Not this provision's to end: refresh does, on its deadlines and EC2's word.
        spdlog::info("instance {} will not come back from its drain: {}", f.written->instance_id, d.reason);
        return AwaitAction::kResolve;
    }
    return AwaitAction::kKeep;
  });
  if (res.end == AwaitEnd::kTimedOut && !res.pending.empty()) {
    spdlog::info("{} draining instance(s) not drained in time for this provision; launching instead",
                 res.pending.size());
  }
}

}  // namespace runpool::controller
