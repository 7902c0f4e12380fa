#include "controller/claim_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/pool/claim.h"
#include "common/pool/memory_state_table.h"  // pool::apply
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
  Claimer(Context& ctx, const ClaimPlan& plan) : ctx_(ctx), plan_(plan) {}

  // Deals with one message: claim, drop or hold it.
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
    const Settings& s = ctx_.settings;
    std::optional<pool::InstanceRecord> record = ctx_.table.get(m.message->instance_id);
    pool::ClaimRequest request{plan_.resource_class,         plan_.usage,
                               plan_.type_globs,             ctx_.now_ms(),
                               s.claim_min_remaining.count(), s.max_heartbeat_age.count(),
                               s.pool};  // never another pool's instance, whatever the message says
    pool::ClaimVerdict verdict = pool::judge_pool_message(*m.message, record, request);
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
    pool::Step step = pool::claim(*record, plan_.label, plan_.reg_token, plan_.reg_url, ctx_.now_ms(), s.timeouts);
    if (ctx_.table.transition(record->instance_id, step.expect, step.change) ||
        ours_after_all(ctx_, *record, plan_.label)) {
      pool::InstanceRecord claimed = *record;
      pool::apply(claimed, step.change);
      spdlog::info("claimed {} ({}, {}) from the pool: generation {}", claimed.instance_id, claimed.instance_type,
                   pool::usage_class_name(claimed.usage_class), claimed.generation);
      out.claimed.push_back(claimed);
      wake_agents(ctx_.queue, {claimed.instance_id});  // its agent starts registering now, not at its next poll
      remove(m);  // only now: a crash before this leaves a message that names a stale generation
    } else {
      // Someone else claimed or retired it between our read and our write.
      spdlog::info("lost the race for {}; dropping its message", record->instance_id);
      drop(m);
    }
  }

  bool done() const { return static_cast<int>(out.claimed.size()) >= plan_.count; }

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
  void remove(const QueuedMessage& m) {
    try {
      ctx_.queue.remove(plan_.resource_class, m.receipt);
    } catch (const std::exception& e) {
      spdlog::warn("could not delete a pool message ({}); the next reader drops it", e.what());
    }
  }
  void drop(const QueuedMessage& m) {
    remove(m);
    ++out.dropped;
  }

  Context& ctx_;
  const ClaimPlan& plan_;
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
      int want = std::min(10, plan.count - static_cast<int>(claimer.out.claimed.size()));
      batch = ctx.queue.receive(plan.resource_class, want, ctx.settings.claim_wait, ctx.settings.claim_visibility);
      if (batch.empty()) break;  // the pool is empty (for this request)
      for (next = 0; next < batch.size(); ++next) claimer.handle(batch[next]);
    }
  } catch (const std::exception& e) {
    claimer.out.error = e.what();
    spdlog::warn("claiming from the {} pool stopped: {}", plan.resource_class, claimer.out.error);
    // The message in hand and the rest of its batch go back to the pool.
    for (; next < batch.size(); ++next) claimer.held.push_back(batch[next]);
  }
  claimer.release_held();
  return claimer.out;
}

}  // namespace runpool::controller
