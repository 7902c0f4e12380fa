#include "controller/claim_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

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
        scope_key_(pool::scope_key_for(plan.reg_url, ctx.settings.reuse_policy_for(plan.resource_class).reuse_scope)),
        deadline_(plan.deadline) {}

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
    const pool::ClaimRequest request = claim_request(ctx_.settings, plan_, ctx_.now_ms());
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

  // A scale set's claim: the runner configurations of the prepared batch's instances it will
  // claim, made at once (side by side) instead of one per claim.
  void mint(const std::vector<QueuedMessage>& batch) {
    if (!plan_.jit_configs) return;
    const size_t want = static_cast<size_t>(std::max(0, plan_.count - static_cast<int>(out.claimed.size())));
    std::vector<std::string> receipts, names;
    std::set<std::string> ids;
    for (const QueuedMessage& m : batch) {
      if (names.size() >= want) break;
      if (!m.message) continue;
      auto v = verdicts_.find(m.receipt);
      if (v == verdicts_.end() || v->second.fate != pool::MessageFate::kClaim) continue;
      const std::string& id = m.message->instance_id;
      if (claimed_ids_.count(id) || !ids.insert(id).second) continue;  // a duplicate message
      names.push_back(pool::runner_name(ctx_.settings.pool, id, record(*m.message)->generation + 1));
      receipts.push_back(m.receipt);
    }
    if (names.empty()) return;
    std::vector<MintedJit> made = plan_.jit_configs(names);
    if (made.size() != names.size()) throw std::logic_error("runner configurations: one per name expected");
    for (size_t i = 0; i < names.size(); ++i) minted_[receipts[i]] = {names[i], std::move(made[i])};
  }

  // Removes the runners made for instances that were not claimed after all.
  void discard_unused() {
    for (auto& [receipt, m] : minted_) {
      if (!m.jit.config || !plan_.jit_discard) continue;
      try {
        plan_.jit_discard(m.name);
      } catch (const std::exception& e) {
        spdlog::warn("could not remove the unused runner {} ({}); refresh removes it", m.name, e.what());
      }
    }
    minted_.clear();
  }

  // Deals with one message of the prepared batch: claim, drop or hold it.
  void handle(const QueuedMessage& m) {
    ++out.examined;
    if (done() || (plan_.keep_going && !plan_.keep_going())) {
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
    std::optional<Secret> jit;
    if (plan_.jit_configs) {
      // Kept in minted_ until the write's outcome: should the write throw, the runner is removed.
      auto it = minted_.find(m.receipt);
      if (it == minted_.end()) {  // not made with the batch: an earlier claim lost its race, one more is needed
        std::vector<MintedJit> one = plan_.jit_configs({jit_name});
        it = minted_.emplace(m.receipt, Minted{jit_name, one.size() == 1 ? std::move(one[0]) : MintedJit{}}).first;
      }
      if (!it->second.jit.config) {
        const std::string why = it->second.jit.error.empty() ? "none made" : it->second.jit.error;
        minted_.erase(it);
        spdlog::warn("no runner configuration for {}: {}; leaving it in the pool", record->instance_id, why);
        out.error = "making a runner configuration failed: " + why;
        stopped_ = true;
        held.push_back(m);
        return;
      }
      jit = it->second.jit.config;
    }
    pool::Step step =
        jit ? pool::claim_jit(*record, plan_.label, *jit, plan_.reg_url, ctx_.now_ms(), s.timeouts)
            : pool::claim(*record, plan_.label, plan_.reg_token, plan_.reg_url, ctx_.now_ms(), s.timeouts);
    if (ctx_.table.transition(record->instance_id, step.expect, step.change) ||
        ours_after_all(ctx_, *record, plan_.label)) {
      pool::InstanceRecord claimed = *record;
      pool::apply(claimed, step.change);
      spdlog::info("claimed {} ({}, {}) from the pool: generation {}", claimed.instance_id, claimed.instance_type,
                   pool::usage_class_name(claimed.usage_class), claimed.generation);
      out.claimed.push_back(claimed);
      claimed_ids_.insert(claimed.instance_id);
      minted_.erase(m.receipt);
      if (plan_.extend_per_claim.count() > 0) {
        deadline_ = std::max(deadline_, ctx_.clock.steady_now() + plan_.extend_per_claim);
      }
      wake_agents(ctx_.queue, {claimed.instance_id});  // its agent starts registering now, not at its next poll
      remove(m);  // only after the claim: a crash before leaves a message that names a stale generation
    } else {
      // Someone else claimed or retired it between our read and our write.
      spdlog::info("lost the race for {}; dropping its message", record->instance_id);
      if (jit && plan_.jit_discard) plan_.jit_discard(jit_name);
      minted_.erase(m.receipt);
      drop(m);
    }
  }

  bool done() const { return static_cast<int>(out.claimed.size()) >= plan_.count; }
  // Whether another batch may be received: not cancelled, in time, not stopped by a failure.
  bool may_go_on() const {
    return !stopped_ && !ctx_.cancelled.load() && ctx_.clock.steady_now() < deadline_ &&
           (!plan_.keep_going || plan_.keep_going());
  }

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

  struct Minted {
    std::string name;  // the runner's
    MintedJit jit;
  };

  Context& ctx_;
  const ClaimPlan& plan_;
  const std::string scope_key_;  // the claim's reuse scope ("" when its registration URL names no owner)
  std::chrono::steady_clock::time_point deadline_;
  bool stopped_ = false;  // a runner configuration could not be made: no further batch
  std::map<std::string, Minted> minted_;  // the current batch's runner configurations, by receipt
  std::map<std::string, pool::InstanceRecord> records_;  // the current batch's, by instance id
  std::map<std::string, pool::ClaimVerdict> verdicts_;   // the current batch's, by receipt
  std::set<std::string> claimed_ids_;
  std::vector<std::string> removals_;  // receipts to delete at the end of the batch
};

}  // namespace

pool::ClaimRequest claim_request(const Settings& s, const ClaimPlan& plan, int64_t now_ms) {
  return pool::ClaimRequest{plan.resource_class,
                            plan.usage,
                            plan.type_globs,
                            now_ms,
                            s.claim_min_remaining.count(),
                            s.max_heartbeat_age.count(),
                            s.pool,  // never another pool's instance, whatever the message says
                            s.max_instance_age_ms(plan.resource_class),
                            // same-scope reuse: a tagged instance is only for its own scope
                            pool::scope_key_for(plan.reg_url, s.reuse_policy_for(plan.resource_class).reuse_scope)};
}

ClaimOutcome claim_from_pool(Context& ctx, const ClaimPlan& plan) {
  Claimer claimer(ctx, plan);
  // Every message seen is claimed, deleted or held (hidden from our next receive), so this bound
  // only guards against a queue that keeps handing out the same messages.
  const int max_examined = plan.count * 4 + 20;
  std::vector<QueuedMessage> batch;
  size_t next = 0;
  try {
    while (!claimer.done() && claimer.out.examined < max_examined) {
      if (!claimer.may_go_on()) break;
      // A claim that prefers its own scope receives a full batch whatever its count, so there is a
      // choice: the preference holds within each received batch only, SQS offering no way to choose
      // across the queue. What it does not take is made visible again at the end.
      const int missing = plan.count - static_cast<int>(claimer.out.claimed.size());
      const int want = claimer.prefers_own_scope() ? 10 : std::min(10, missing);
      batch = ctx.queue.receive(plan.resource_class, want, ctx.settings.claim_wait, ctx.settings.claim_visibility);
      if (batch.empty()) break;  // the pool is empty (for this request)
      next = 0;
      claimer.prepare(batch);
      claimer.mint(batch);
      for (; next < batch.size(); ++next) claimer.handle(batch[next]);
      claimer.discard_unused();
      claimer.flush_removals();
    }
  } catch (const std::exception& e) {
    claimer.out.error = e.what();
    spdlog::warn("claiming from the {} pool stopped: {}", plan.resource_class, claimer.out.error);
    // The message in hand and the rest of its batch go back to the pool, their runners removed.
    for (; next < batch.size(); ++next) claimer.held.push_back(batch[next]);
    claimer.discard_unused();
  }
  claimer.flush_removals();
  claimer.release_held();
  // The claimed instances' runpool:label tag names their new assignment (cost attribution). Only
  // a label: a failure costs a report's accuracy, never the claim.
  if (!claimer.out.claimed.empty()) {
    std::vector<std::string> ids;
    for (const auto& r : claimer.out.claimed) ids.push_back(r.instance_id);
    try {
      ctx.compute.tag_label(ids, plan.label);
    } catch (const std::exception& e) {
      spdlog::warn("could not tag {} claimed instance(s) with runpool:label {}: {}", ids.size(), plan.label, e.what());
    }
  }
  return claimer.out;
}

}  // namespace runpool::controller
