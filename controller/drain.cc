#include "controller/drain.h"

#include <spdlog/spdlog.h>

#include <map>

#include "common/pool/agent_text.h"
#include "common/pool/record_update.h"
#include "common/pool/runner_identity.h"
#include "common/pool/transitions.h"
#include "controller/await_agents.h"
#include "controller/retire.h"

namespace runpool::controller {

using pool::State;

pool::DrainedDecision drained_decision(const Settings& settings, const pool::InstanceRecord& record) {
  const pool::ReusePolicy& policy = settings.reuse_policy_for(record.resource_class);
  return pool::drained_fate(policy, pool::scope_key_for(record.reg_url, policy.reuse_scope));
}

void advertise_idle(Context& ctx, const pool::InstanceRecord& idle) {
  try {
    ctx.queue.advertise(idle.resource_class, pool::PoolMessage{idle.instance_id, idle.generation});
    pool::Step done = pool::advertised(idle);
    ctx.table.transition(idle.instance_id, done.expect, done.change);
  } catch (const std::exception& e) {
    spdlog::warn("instance {} is idle but its pool message failed ({}); refresh re-advertises it", idle.instance_id,
                 e.what());
  }
}

std::optional<pool::InstanceRecord> return_drained(Context& ctx, const pool::InstanceRecord& record,
                                                   const std::string& reuse_scope_key, bool advertise) {
  pool::Step step = pool::return_to_pool(record, ctx.now_ms(), ctx.settings.timeouts, reuse_scope_key);
  if (!ctx.table.transition(record.instance_id, step.expect, step.change)) return std::nullopt;
  pool::InstanceRecord idle = record;
  pool::apply(idle, step.change);
  if (advertise) advertise_idle(ctx, idle);
  spdlog::info("instance {} returned to the {} pool (generation {}{})", idle.instance_id, idle.resource_class,
               idle.generation, reuse_scope_key.empty() ? "" : ", kept for " + reuse_scope_key);
  return idle;
}

namespace {

pool::ControllerDelete delete_outcome(github::DeleteOutcome o, std::string& error) {
  switch (o) {
    case github::DeleteOutcome::kDeleted: return pool::ControllerDelete::kDeleted;
    case github::DeleteOutcome::kAlreadyGone: return pool::ControllerDelete::kAlreadyGone;
    case github::DeleteOutcome::kBusy: break;
  }
  error = "GitHub: still running a job";
  return pool::ControllerDelete::kBusy;
}

}  // namespace

pool::RunnerFateDecision settle_runner(Context& ctx, const pool::InstanceRecord& r, bool agent_left, bool forced,
                                       const std::function<void()>& on_delete) {
  pool::RunnerFateFacts f;
  f.agent_left_runner = agent_left;
  if (r.signal_generation == r.generation && r.signal_detail != "-") f.agent_detail = pool::agent_text(r.signal_detail);
  f.deadline_forces = forced || (r.hard_deadline_ms != 0 && ctx.now_ms() >= r.hard_deadline_ms);
  // The agent's word — drained, failed, its runner_id — is forgeable while a job still runs: the
  // runner is the one GitHub lists under the assignment's name (pool/runner_identity.h).
  std::optional<github::Runner> own;
  try {
    own = ctx.github.find(pool::records_runner_name(r));
    f.listing = own ? pool::GithubListing::kPresent : pool::GithubListing::kAbsent;
    f.runner_id = own ? own->id : 0;
  } catch (const std::exception& e) {
    f.listing = pool::GithubListing::kUnknown;
    f.delete_error = e.what();
  }
  pool::RunnerFateDecision d = pool::decide_runner_fate(f);
  if (!d.delete_runner) {
    if (d.fate == pool::RunnerFate::kLeftRegistered) spdlog::warn("instance {}: {}", r.instance_id, d.detail);
    return d;
  }
  try {
    if (on_delete) on_delete();
    f.deleted = delete_outcome(ctx.github.remove(own->id), f.delete_error);
  } catch (const std::exception& e) {
    f.deleted = pool::ControllerDelete::kFailed;
    f.delete_error = e.what();
  }
  d = pool::decide_runner_fate(f);
  if (d.fate == pool::RunnerFate::kLeftRegistered) spdlog::warn("instance {}: {}", r.instance_id, d.detail);
  else spdlog::info("instance {}: {}", r.instance_id, d.detail);
  return d;
}

bool hand_fresh_remove_token(Context& ctx, const pool::InstanceRecord& r, const std::function<Secret()>& remove_token) {
  if (!pool::wants_remove_token(r)) return false;
  pool::Step step = pool::refresh_remove_token(r, remove_token());
  if (!ctx.table.transition(r.instance_id, step.expect, step.change)) return false;
  spdlog::info("instance {}: its agent's remove token was refused; a fresh one is in its record", r.instance_id);
  wake_agents(ctx.queue, {r.instance_id});
  return true;
}

void make_unmatchable(Context& ctx, const pool::InstanceRecord& r, int64_t verified_runner_id) {
  if (r.runner_id <= 0 && verified_runner_id <= 0) return;
  try {
    int64_t id = verified_runner_id;
    if (id <= 0) {
      // runner_id is the agent's word: the labels go only from a runner GitHub names as this assignment's.
      std::optional<github::Runner> listed = ctx.github.get(r.runner_id);
      if (!listed) return;
      if (!pool::is_records_runner(r, listed->name)) {
        spdlog::warn("instance {}: its record's runner id {} names a runner that is not its assignment's ({}); "
                     "its labels are left alone",
                     r.instance_id, r.runner_id, pool::records_runner_name(r));
        return;
      }
      id = listed->id;
    }
    if (ctx.github.remove_labels(id)) {
      spdlog::info("instance {}: removed the labels of runner {}: no new job is routed to it", r.instance_id, id);
    }
  } catch (const std::exception& e) {
    spdlog::warn("instance {}: could not remove the labels of runner {} ({}); its agent's drain goes on",
                 r.instance_id, r.runner_id, e.what());
  }
}

namespace {

// The return lost to an operator's retire mark written after `r` was read (return_to_pool's
// condition): the instance ends now, as it would have had the mark been read.
void retire_if_marked_since(Context& ctx, const pool::InstanceRecord& r, SettledDrain& out) {
  std::optional<pool::InstanceRecord> now = ctx.table.get(r.instance_id);
  if (!now || now->state != State::kDraining || now->generation != r.generation || !now->retire_pending ||
      !pool::agent_reported(*now, pool::AgentSignal::kDrained)) {
    return;
  }
  out.retired_why = "outdated";
  RetireOutcome ro = retire(ctx, {*now}, "retired: " + out.retired_why);
  if (ro.skipped.empty()) out.end = DrainedEnd::kRetired;
}

}  // namespace

SettledDrain settle_drained(Context& ctx, const pool::InstanceRecord& r, bool advertise) {
  SettledDrain out;
  // Back to the pool only with its runner gone from GitHub: a runner left registered under the
  // assignment's label would be a ghost of it.
  out.runner = settle_runner(ctx, r, pool::runner_left_registered(r), false);
  if (!out.runner.proceed) {
    out.end = DrainedEnd::kRunnerLeft;
    return out;
  }
  // Outdated (`runpoolctl retire`), or its class never reuses an instance (or has no scope to keep
  // it for): its job is done and its runner gone, so it ends here.
  pool::DrainedDecision reuse = drained_decision(ctx.settings, r);
  out.retired_why = r.retire_pending                               ? "outdated"
                    : reuse.fate == pool::DrainedFate::kTerminate ? reuse.reason
                                                                  : "";
  if (!out.retired_why.empty()) {
    RetireOutcome ro = retire(ctx, {r}, "retired: " + out.retired_why);
    out.end = ro.skipped.empty() ? DrainedEnd::kRetired : DrainedEnd::kMoved;
  } else {
    std::optional<pool::InstanceRecord> idle = return_drained(ctx, r, reuse.scope_key, advertise);
    out.end = idle ? DrainedEnd::kReturned : DrainedEnd::kMoved;
    if (idle) out.returned = std::move(*idle);
    else retire_if_marked_since(ctx, r, out);
  }
  return out;
}

namespace {

enum class Fate { kDraining, kReturned, kGone, kFailed };

// Moves one record to draining; the record as it stands afterwards.
Fate start(Context& ctx, pool::InstanceRecord& r, const std::function<Secret()>& token, DrainOutcome& out) {
  const int64_t generation = r.generation;
  const std::string label = r.label;
  int64_t unmatched = 0;  // the runner whose labels were removed
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (r.generation != generation) return Fate::kReturned;  // returned and claimed again since
    switch (r.state) {
      case State::kDraining:
        return Fate::kDraining;
      case State::kIdle:
        return Fate::kReturned;
      case State::kTerminating:
      case State::kTerminated:
        return Fate::kGone;
      case State::kCreated:
      case State::kClaimed:
      case State::kRunning:
        break;
    }
    if (r.label != label) return Fate::kReturned;
    // The labels go before the write: the agent's one long poll counts from when it sees
    // `draining`, so no job may still be routed to the runner by then. A write that then fails
    // found the record drained, ending or moved on by someone else (its runner's labels go
    // anyway); one that throws leaves a runner no new job reaches, drained by the next release or
    // refresh.
    if (r.runner_id > 0 && r.runner_id != unmatched) {
      make_unmatchable(ctx, r);
      unmatched = r.runner_id;
    }
    pool::Step step = pool::start_drain(r, token(), ctx.now_ms(), ctx.settings.timeouts);
    if (ctx.table.transition(r.instance_id, step.expect, step.change)) {
      pool::apply(r, step.change);
      spdlog::info("instance {} draining (generation {})", r.instance_id, r.generation);
      wake_agents(ctx.queue, {r.instance_id});
      return Fate::kDraining;
    }
    auto fresh = ctx.table.get(r.instance_id);
    if (!fresh) return Fate::kGone;
    r = *fresh;
  }
  out.errors.push_back(r.instance_id + ": the record kept changing; not drained");
  return Fate::kFailed;
}

}  // namespace

DrainOutcome drain_to_pool(Context& ctx, const std::vector<pool::InstanceRecord>& records,
                           const std::function<Secret()>& remove_token, const DrainOptions& options) {
  DrainOutcome out;
  std::optional<Secret> token;
  auto get_token = [&]() -> Secret {
    if (!token) token = remove_token();
    return *token;
  };
  std::map<std::string, pool::InstanceRecord> draining;
  for (pool::InstanceRecord r : records) {
    Fate f;
    try {
      f = start(ctx, r, get_token, out);
    } catch (const std::exception& e) {
      out.errors.push_back(r.instance_id + ": " + e.what());
      continue;
    }
    switch (f) {
      case Fate::kDraining: draining[r.instance_id] = r; break;
      case Fate::kReturned: out.returned.push_back(r.instance_id); break;
      case Fate::kGone: out.gone.push_back(r.instance_id); break;
      case Fate::kFailed: break;
    }
  }

  // Wait for each agent's `drained` (controller/await_agents.h).
  std::vector<AwaitItem> items;
  for (const auto& [id, r] : draining) items.push_back(AwaitItem{r, false});
  AwaitOptions o;
  o.awaited = pool::Awaited::kDrained;
  o.deadline = ctx.clock.steady_now() + options.wait;
  o.stop_on_cancel = options.stop_on_cancel;
  std::vector<pool::InstanceRecord> stragglers;
  AwaitResult res = await_agents(ctx, std::move(items), o,
                                 [&](const pool::HandshakeFacts& f, const pool::HandshakeDecision& d) {
    const pool::InstanceRecord& mine = *f.written;
    const pool::InstanceRecord* r = f.current;
    switch (d.verdict) {
      case pool::Verdict::kMovedOn:
        out.returned.push_back(mine.instance_id);  // a concurrent release returned it
        return AwaitAction::kResolve;
      case pool::Verdict::kGone:
        if (!d.close_record) {
          out.gone.push_back(mine.instance_id);
          return AwaitAction::kResolve;
        }
        {
          // Closed now, while the others are waited for (a stopped instance is terminated).
          spdlog::warn("instance {} is {} in EC2: it cannot drain; closing its record", mine.instance_id, f.ec2_state);
          RetireOutcome ro = retire(ctx, {mine}, "gone from EC2 while draining");
          for (const auto& id : ro.terminated) (aws::instance_gone(f.ec2_state) ? out.gone : out.terminated).push_back(id);
          for (const auto& id : ro.pending) out.errors.push_back(id + ": TerminateInstances failed; refresh retries");
          out.gone.insert(out.gone.end(), ro.skipped.begin(), ro.skipped.end());
        }
        return AwaitAction::kResolve;
      case pool::Verdict::kDone: {
        SettledDrain settled = settle_drained(ctx, *r);
        out.runners.emplace(mine.instance_id, DrainOutcome::Runner{settled.runner.fate, settled.runner.detail});
        switch (settled.end) {
          case DrainedEnd::kRunnerLeft: out.left.push_back(mine.instance_id); break;
          case DrainedEnd::kRetired:
            out.retired.push_back(mine.instance_id);
            out.retired_reasons[mine.instance_id] = settled.retired_why;
            break;
          case DrainedEnd::kReturned: out.returned.push_back(mine.instance_id); break;
          case DrainedEnd::kMoved: return AwaitAction::kKeep;  // moved under us: look again next round
        }
        return AwaitAction::kResolve;
      }
      case pool::Verdict::kFail: {
        spdlog::warn("instance {}: {}", r->instance_id, d.reason);
        pool::RunnerFateDecision fate = settle_runner(ctx, *r, true, false);
        out.runners.emplace(mine.instance_id, DrainOutcome::Runner{fate.fate, fate.detail});
        if (fate.proceed) stragglers.push_back(*r);
        else out.left.push_back(mine.instance_id);
        return AwaitAction::kResolve;
      }
      case pool::Verdict::kWrite:
        hand_fresh_remove_token(ctx, *r, remove_token);
        return AwaitAction::kKeep;  // the agent goes on deregistering with it
      case pool::Verdict::kWait:
        return AwaitAction::kKeep;
    }
    return AwaitAction::kKeep;
  });

  for (const auto& i : res.pending) {
    const pool::InstanceRecord& r = i.written;
    if (options.terminate_stragglers && res.end == AwaitEnd::kTimedOut) {
      spdlog::warn("instance {}: not drained within {}; terminating it", r.instance_id, format_duration(options.wait));
      // The wait is the bound: the instance goes, its runner deleted first when GitHub lets us.
      pool::RunnerFateDecision fate = settle_runner(ctx, r, true, true);
      out.runners.emplace(r.instance_id, DrainOutcome::Runner{fate.fate, fate.detail});
      stragglers.push_back(r);
    } else {
      out.left.push_back(r.instance_id);
    }
  }
  if (!stragglers.empty()) {
    RetireOutcome ro = retire(ctx, stragglers, "not drained");
    out.terminated.insert(out.terminated.end(), ro.terminated.begin(), ro.terminated.end());
    for (const auto& id : ro.pending) out.errors.push_back(id + ": TerminateInstances failed; refresh retries");
    out.gone.insert(out.gone.end(), ro.skipped.begin(), ro.skipped.end());
  }
  return out;
}

}  // namespace runpool::controller
