#include "controller/claim_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/pool/claim.h"
#include "common/pool/record_update.h"
#include "common/pool/reuse_policy.h"
#include "common/pool/runner_name.h"
#include "common/pool/transitions.h"

namespace runpool::controller {
namespace {

// A claim write whose answer was lost and retried fails its condition the second time although it
// was applied: the record then is ours (our label, the next generation).
bool ours_after_all(Context& ctx, const pool::InstanceRecord& idle, const std::string& label) {
  auto now = ctx.table.get(idle.instance_id);
  return now && now->state == pool::State::kClaimed && now->generation == idle.generation + 1 && now->label == label;
}

class Claimer {
 public:
  Claimer(Context& ctx, const ClaimPlan& plan)
      : ctx_(ctx),
        plan_(plan),
        scope_key_(pool::scope_key_for(plan.reg_url, ctx.settings.reuse_policy_for(plan.resource_class).reuse_scope)) {}

  // Whether the claim has an own scope to prefer (see prepare): its class reuses same-scope, and
  // its registration URL names an owner.
  bool prefers_own_scope() const {
    return !scope_key_.empty() &&
           ctx_.settings.reuse_policy_for(plan_.resource_class).reuse == pool::Reuse::kSameScope;
  }

  // Reads the records a received batch names, in one batch read (a warm claim of 10 costs one read,
  // not ten in a row), judges each message, and puts the batch in the order handle() takes it: the
  // messages it may claim last, its own reuse scope's first among them (pool::claim_preference_order).
  void prepare(std::vector<QueuedMessage>& batch) {
    std::vector<std::string> ids;
    for (const QueuedMessage& m : batch) {
      if (m.message) ids.push_back(m.message->instance_id);
    }
    records_ = ids.empty() ? std::map<std::string, pool::InstanceRecord>{} : ctx_.table.get_many(ids);
    const Settings& s = ctx_.settings;
    pool::ClaimRequest request{plan_.resource_class,         plan_.usage,
                               plan_.type_globs,             ctx_.now_ms(),
                               s.claim_min_remaining.count(), s.max_heartbeat_age.count(),
                               s.pool,  // never another pool's instance, whatever the message says
                               s.max_instance_age_ms(plan_.resource_class),
                               // same-scope reuse: a tagged instance is only for its own scope
                               scope_key_};
    verdicts_.clear();
    std::vector<QueuedMessage> arranged, claimable;
    std::vector<std::string> tags;
    // Copies: should anything throw, the caller still holds the whole batch to make visible again.
    for (const QueuedMessage& m : batch) {
      if (!m.message) {
        arranged.push_back(m);
        continue;
      }
      const std::optional<pool::InstanceRecord> record = this->record(*m.message);
      pool::ClaimVerdict verdict = pool::judge_pool_message(*m.message, record, request);
      const bool may_claim = verdict.fate == pool::MessageFate::kClaim;
      verdicts_[m.receipt] = std::move(verdict);
      if (!may_claim) {
        arranged.push_back(m);
        continue;
      }
      tags.push_back(record->reuse_scope_key);
      claimable.push_back(m);
    }
    for (size_t i : pool::claim_preference_order(tags, scope_key_)) arranged.push_back(std::move(claimable[i]));
    batch = std::move(arranged);
  }

  // Deals with one message of the prepared batch: claim, drop or hold it.
  void handle(const QueuedMessage& m) {
    ++out.examined;
    if (done()) {
      held.push_back(m);
      return;
    }
    if (!m.message) {
      spdlog::warn("deleting a malformed pool message: {}", m.body.substr(0, 120));
      drop(m);
      return;
    }
    if (claimed_ids_.count(m.message->instance_id)) {
      spdlog::info("dropping the pool message for {} (generation {}): claimed already by this provision",
                   m.message->instance_id, m.message->generation);
      drop(m);
      return;
    }
    const Settings& s = ctx_.settings;
    const std::optional<pool::InstanceRecord> record = this->record(*m.message);
    const pool::ClaimVerdict& verdict = verdicts_.at(m.receipt);
    if (verdict.fate == pool::MessageFate::kDrop) {
      spdlog::info("dropping the pool message for {} (generation {}): {}", m.message->instance_id,
                   m.message->generation, verdict.reason);
      drop(m);
      return;
    }
    if (verdict.fate == pool::MessageFate::kRelease) {
      spdlog::info("leaving {} in the pool: {}", m.message->instance_id, verdict.reason);
      held.push_back(m);
      return;
    }
    const std::string jit_name = pool::runner_name(s.pool, record->instance_id, record->generation + 1);
    pool::Step step =
        plan_.jit_config
            ? pool::claim_jit(*record, plan_.label, plan_.jit_config(jit_name), plan_.reg_url, ctx_.now_ms(), s.timeouts)
            : pool::claim(*record, plan_.label, plan_.reg_token, plan_.reg_url, ctx_.now_ms(), s.timeouts);
    if (ctx_.table.transition(record->instance_id, step.expect, step.change) ||
        ours_after_all(ctx_, *record, plan_.label)) {
      pool::InstanceRecord claimed = *record;
      pool::apply(claimed, step.change);
      spdlog::info("claimed {} ({}, {}) from the pool: generation {}", claimed.instance_id, claimed.instance_type,
                   pool::usage_class_name(claimed.usage_class), claimed.generation);
      out.claimed.push_back(claimed);
      claimed_ids_.insert(claimed.instance_id);
      wake_agents(ctx_.queue, {claimed.instance_id});  // its agent starts registering now, not at its next poll
      remove(m);  // only after the claim: a crash before leaves a message that names a stale generation
    } else {
      // Someone else claimed or retired it between our read and our write.
      spdlog::info("lost the race for {}; dropping its message", record->instance_id);
      if (plan_.jit_discard) plan_.jit_discard(jit_name);
      drop(m);
    }
  }

  bool done() const { return static_cast<int>(out.claimed.size()) >= plan_.count; }

  // Deletes the messages claimed or dropped so far: one request per 10.
  void flush_removals() {
    if (removals_.empty()) return;
    std::vector<std::string> receipts;
    receipts.swap(removals_);
    try {
      ctx_.queue.remove_many(plan_.resource_class, receipts);
    } catch (const std::exception& e) {
      spdlog::warn("could not delete {} pool message(s) ({}); the next reader drops them", receipts.size(), e.what());
    }
  }

  // Makes every held message visible again.
  void release_held() {
    for (const QueuedMessage& m : held) {
      try {
        ctx_.queue.make_visible(plan_.resource_class, m.receipt);
      } catch (const std::exception& e) {
        spdlog::warn("could not make a pool message visible again ({}); it reappears after its visibility timeout",
                     e.what());
      }
      ++out.released;
    }
    held.clear();
  }

  ClaimOutcome out;
  std::vector<QueuedMessage> held;

 private:
  std::optional<pool::InstanceRecord> record(const pool::PoolMessage& message) const {
    auto it = records_.find(message.instance_id);
    return it == records_.end() ? std::nullopt : std::optional<pool::InstanceRecord>(it->second);
  }
  void remove(const QueuedMessage& m) { removals_.push_back(m.receipt); }
  void drop(const QueuedMessage& m) {
    remove(m);
    ++out.dropped;
  }

  Context& ctx_;
  const ClaimPlan& plan_;
  const std::string scope_key_;  // the claim's reuse scope ("" when its registration URL names no owner)
  std::map<std::string, pool::InstanceRecord> records_;  // the current batch's, by instance id
  std::map<std::string, pool::ClaimVerdict> verdicts_;   // the current batch's, by receipt
  std::set<std::string> claimed_ids_;
  std::vector<std::string> removals_;  // receipts to delete at the end of the batch
};

}  // namespace

ClaimOutcome claim_from_pool(Context& ctx, const ClaimPlan& plan) {
  Claimer claimer(ctx, plan);
  // Every message seen is claimed, deleted or held (hidden from our next receive), so this bound
  // only guards against a queue that keeps handing out the same messages.
  const int max_examined = plan.count * 4 + 20;
  std::vector<QueuedMessage> batch;
  size_t next = 0;
  try {
    while (!claimer.done() && claimer.out.examined < max_examined) {
      if (ctx.cancelled.load() || ctx.clock.steady_now() >= plan.deadline) break;
      // A claim that prefers its own scope receives a full batch whatever its count, so there is a
      // choice: the preference holds within each received batch only, SQS offering no way to choose
      // across the queue. What it does not take is made visible again at the end.
      const int missing = plan.count - static_cast<int>(claimer.out.claimed.size());
      const int want = claimer.prefers_own_scope() ? 10 : std::min(10, missing);
      batch = ctx.queue.receive(plan.resource_class, want, ctx.settings.claim_wait, ctx.settings.claim_visibility);
      if (batch.empty()) break;  // the pool is empty (for this request)
      next = 0;
      claimer.prepare(batch);
      for (; next < batch.size(); ++next) claimer.handle(batch[next]);
      claimer.flush_removals();
    }
  } catch (const std::exception& e) {
    claimer.out.error = e.what();
    spdlog::warn("claiming from the {} pool stopped: {}", plan.resource_class, claimer.out.error);
    // The message in hand and the rest of its batch go back to the pool.
    for (; next < batch.size(); ++next) claimer.held.push_back(batch[next]);
  }
  claimer.flush_removals();
  claimer.release_held();
  return claimer.out;
}

}  // namespace runpool::controller
