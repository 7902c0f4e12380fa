#include "controller/serve.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <set>

#include "common/pool/demand_plan.h"
#include "common/pool/lease.h"
#include "common/pool/reuse_policy.h"
#include "common/pool/runner_identity.h"
#include "common/pool/runner_name.h"
#include "common/pool/scale_set_upkeep.h"
#include "common/pool/transitions.h"
#include "controller/claim_pool.h"
#include "controller/drain.h"
#include "controller/jit_mint.h"
#include "controller/label.h"
#include "controller/launch.h"
#include "controller/launch_plan.h"
#include "controller/metrics_events.h"
#include "controller/retire.h"
#include "controller/serve_pass.h"
#include "controller/serve_server.h"
#include "controller/spot_rerun.h"

namespace runpool::controller {

std::string serve_lease_prefix(const std::string& pool) { return "scaleset/" + pool + "/"; }
std::string serve_lease_name(const Settings& s) { return serve_lease_prefix(s.pool) + s.scale_set(); }

int run_serve(Context& ctx, ServeDeps& deps) { return Server(ctx, deps).run(); }

namespace {

// How long a claim may go without claiming an instance before the shortfall is launched instead:
// at most 10 s, and well inside the lease's margin (a sixth of its time): a claim asks the fence
// before each write, but a batch's runner configurations are made before its writes.
Duration claim_budget(const Settings& s) { return std::min<Duration>(std::chrono::seconds(10), s.serve_lease_ttl / 6); }
// A record claimed or launched this recently is counted even if the label index does not show it
// yet (the index is eventually consistent): otherwise the next pass would add it twice.
constexpr int64_t kRecentMs = 60'000;

}  // namespace

// ---- The set's instances: the serving loop's reconcile pass carried out (serve_server.h).

std::vector<pool::InstanceRecord> Server::set_records() {
  std::vector<pool::InstanceRecord> records = ctx_.table.by_label(set_name_);
  const int64_t now = ctx_.now_ms();
  for (auto it = recent_.begin(); it != recent_.end();) {
    bool listed = std::any_of(records.begin(), records.end(),
                              [&](const pool::InstanceRecord& r) { return r.instance_id == it->first; });
    if (listed || now - it->second.state_since_ms > kRecentMs) {
      it = recent_.erase(it);
    } else {
      records.push_back(it->second);
      ++it;
    }
  }
  return records;
}

// The set's armed runners not yet looked up under this session (plan_runner_lookups says why):
// one gone from GitHub, or another set's, is drained like a finished one. A lookup that fails is
// tried again next pass; the rest wait for it.
void Server::look_up_runners(const ServeSnapshot& snap) {
  std::set<std::string> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished = demand_.finished;
  }
  RunnerLookups lookups = plan_runner_lookups(snap, looked_up_, finished);
  looked_up_ = std::move(lookups.known);
  const int64_t set_id = set_id_.value_or(0);
  std::set<std::string> gone;
  for (const std::string& name : lookups.look_up) {
    try {
      // By the assignment's runner name: the record's runner_id is the agent's (forgeable) word.
      if (serves_scale_set(deps_.scale_sets.get_runner_by_name(name), set_id)) {
        looked_up_.insert(name);
      } else {
        gone.insert(name);
      }
    } catch (const std::exception& e) {
      spdlog::warn("could not look runner {} up ({}); again next pass", name, e.what());
      break;
    }
  }
  if (gone.empty()) return;
  spdlog::info("{} armed runner(s) of scale set '{}' are no longer its runners on GitHub (their job completed "
               "while this session did not listen, or the set was deleted): draining them",
               gone.size(), set_name_);
  std::lock_guard<std::mutex> lock(mu_);
  demand_.finished.insert(gone.begin(), gone.end());
}

// One pass: the snapshot gathered, plan_serve_pass decides, and its result carried out — each
// action while the lease holds.
bool Server::reconcile() {
  ServeSnapshot snap;
  snap.pool = s_.pool;
  snap.scale_set = set_name_;
  snap.records = set_records();
  snap.now_ms = ctx_.now_ms();
  snap.min_armed = s_.scale_set_min_armed;
  snap.max_runners = s_.scale_set_max_runners;
  // Cleaned instances come back to the pool unless the class never reuses one.
  if (s_.reuse_policy_for(s_.scale_set_class()).reuse != pool::Reuse::kNever) {
    snap.return_wait_ms = s_.scale_set_return_wait.count();
  }
  snap.arm_grace_ms = s_.scale_set_arm_grace.count();
  look_up_runners(snap);
  snap.known = looked_up_;
  const SessionDemand session = demand();
  note_session_spot_runs(ctx_, snap.records, session.runs);  // refresh re-runs the job once its run is over
  ServePass pass = plan_serve_pass(snap, session);
  if (!pass.forget.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    forget_finished(demand_, [&](const std::string& name) {
      return std::find(pass.forget.begin(), pass.forget.end(), name) == pass.forget.end();
    });
  }
  for (const pool::Upkeep& u : pass.upkeep) {
    if (!fenced()) return false;
    upkeep(u);
  }
  if (pass.needs_claimable) {
    // SQS's approximate count, read after the upkeep: a settled instance may be back in the pool.
    snap.claimable = pool_depth();
    pass = plan_serve_pass(snap, session);
  }
  const pool::DemandPlan& plan = pass.plan;
  sample_.assigned_jobs = session.assigned_jobs;
  sample_.desired = plan.desired;
  sample_.runners = pass.facts.runners;
  if (plan.why != last_why_) {
    spdlog::info("scale set '{}' [{}]: {}", set_name_, pool::demand_rule_name(plan.rule), plan.why);
    last_why_ = plan.why;
  }
  if (plan.claim + plan.launch > 0 && fenced()) add_runners(plan.claim, plan.launch);
  for (const pool::InstanceRecord& r : pass.remove) {
    if (!fenced()) return false;
    remove_armed(r);
  }
  return pass.quiet;
}

void Server::upkeep(const pool::Upkeep& u) {
  const pool::InstanceRecord& r = u.record;
  try {
    switch (u.kind) {
      case pool::UpkeepKind::kMarkRunning: {
        pool::Step step = pool::mark_running(r, ctx_.now_ms(), s_.timeouts);
        if (ctx_.table.transition(r.instance_id, step.expect, step.change)) {
          spdlog::info("instance {}: runner listening for scale set '{}' (generation {})", r.instance_id, set_name_,
                       r.generation);
        }
        break;
      }
      case pool::UpkeepKind::kDrainFinished: {
        pool::Step step = pool::start_drain(r, Secret(), ctx_.now_ms(), s_.timeouts);
        if (ctx_.table.transition(r.instance_id, step.expect, step.change)) {
          spdlog::info("instance {}: {}; cleaning it", r.instance_id, u.why);
          wake_agents(ctx_.queue, {r.instance_id});
        }
        break;
      }
      case pool::UpkeepKind::kSettle: {
        SettledDrain settled = settle_drained(ctx_, r);
        switch (settled.end) {
          case DrainedEnd::kReturned: spdlog::info("instance {}: clean, back in the pool", r.instance_id); break;
          case DrainedEnd::kRetired: spdlog::info("instance {}: retired ({})", r.instance_id, settled.retired_why); break;
          case DrainedEnd::kRunnerLeft:
          case DrainedEnd::kMoved: break;  // looked at again next pass
        }
        break;
      }
      case pool::UpkeepKind::kRetireFailed: {
        spdlog::warn("instance {}: {}", r.instance_id, u.why);
        pool::RunnerFateDecision fate = settle_runner(ctx_, r, true, false);
        if (fate.proceed) retire(ctx_, {r}, "agent failed");
        break;
      }
    }
  } catch (const std::exception& e) {
    spdlog::warn("instance {}: {} failed: {}", r.instance_id, pool::upkeep_kind_name(u.kind), e.what());
  }
}

// Many runners' configurations at once: the admin client and each lane's side by side.
std::vector<MintedJit> Server::make_jits(const std::vector<std::string>& names) {
  const int64_t set_id = set_id_.value_or(0);  // a pass runs only with the set's session open
  std::vector<JitLane> lanes = {
      [this, set_id](const std::string& name) { return make_jit(deps_.scale_sets, set_id, name); }};
  for (github::ScaleSetClient* c : deps_.jit_lanes) {
    lanes.push_back([set_id, c](const std::string& name) { return make_jit(*c, set_id, name); });
  }
  std::vector<MintedJit> made = mint_jit_configs(lanes, names);
  // Made for this session's set: no lookup needed to know they are its runners.
  for (size_t i = 0; i < names.size() && i < made.size(); ++i) {
    if (made[i].config) looked_up_.insert(names[i]);
  }
  return made;
}

int Server::pool_depth() {
  try {
    return static_cast<int>(std::min<int64_t>(ctx_.queue.depth(s_.scale_set_class()).visible, 1'000'000));
  } catch (const std::exception& e) {
    spdlog::warn("could not read the {} pool's depth ({}); claiming first all the same", s_.scale_set_class(), e.what());
    return std::numeric_limits<int>::max();
  }
}

// `claim` from the warm pool, then `launch` more plus whatever the claims fell short by.
void Server::add_runners(int claim, int launch) {
  const std::string class_name = s_.scale_set_class();
  const ResourceClass* rc = s_.find_class(class_name);
  if (!rc) throw ConfigError("scale_set_resource_class: no resource class '" + class_name + "'");
  const std::string url = ctx_.github.registration_url();
  ClaimPlan cp;
  cp.resource_class = class_name;
  cp.count = claim;
  cp.label = set_name_;
  cp.reg_url = url;
  // The budget bounds a claim that finds nothing; one that keeps claiming goes on (a burst of
  // hundreds from a full pool), each write while the lease holds.
  cp.deadline = ctx_.clock.steady_now() + claim_budget(s_);
  cp.extend_per_claim = std::chrono::duration_cast<std::chrono::milliseconds>(claim_budget(s_));
  cp.keep_going = [this] { return fenced(); };
  cp.jit_configs = [this](const std::vector<std::string>& names) { return make_jits(names); };
  cp.jit_discard = [this](const std::string& name) { discard_jit(deps_.scale_sets, name); };
  int rest = launch;
  if (claim > 0) {
    ClaimOutcome claimed = claim_from_pool(ctx_, cp);
    for (const pool::InstanceRecord& r : claimed.claimed) recent_[r.instance_id] = r;
    rest += claim - static_cast<int>(claimed.claimed.size());
  }
  if (rest <= 0 || !fenced()) return;
  LaunchOrder order;
  order.resource_class = class_name;
  order.types = launch_types(*rc, s_.allowed_instance_types);
  order.usage = s_.usage_class;
  order.on_demand_fallback = s_.on_demand_fallback;
  order.count = rest;
  order.label = set_name_;
  order.token_seed = set_name_ + "-" + random_hex16();  // the label repeats; each launch is new
  order.reg_url = url;
  order.deadline = ctx_.clock.steady_now() + s_.provision_timeout;
  order.jit_configs = [this](const std::vector<std::string>& names) { return make_jits(names); };
  LaunchOutcome launched;
  try {
    launch_instances(ctx_, order, launched);
  } catch (const std::exception& e) {
    spdlog::error("scale set '{}': launching {} instance(s) failed: {}", set_name_, rest, e.what());
  }
  for (const pool::InstanceRecord& r : launched.records) recent_[r.instance_id] = r;
  if (static_cast<int>(launched.records.size()) < rest) {
    spdlog::warn("scale set '{}': {} of {} instance(s) launched{}", set_name_, launched.records.size(), rest,
                 launched.problems.empty() ? "" : " (" + launched.problems.front() + ")");
  }
}

// An armed runner beyond the demand: GitHub deletes it only while no job is on its way to it
// (a runner with a job answers busy, and is kept); then its instance is cleaned.
void Server::remove_armed(const pool::InstanceRecord& r) {
  if (r.runner_id <= 0) return;
  try {
    // The runner GitHub names as this assignment's, never the record's runner_id alone: a forged
    // id would delete another's runner (common/pool/runner_identity.h).
    auto own = deps_.scale_sets.get_runner_by_name(pool::runner_name(s_.pool, r.instance_id, r.generation));
    if (own && !pool::is_records_runner(r, own->name)) own.reset();
    if (own && deps_.scale_sets.delete_runner(own->id) == github::DeleteOutcome::kBusy) {
      spdlog::info("instance {}: its runner has a job on its way; kept", r.instance_id);
      return;
    }
    pool::Step step = pool::start_drain(r, Secret(), ctx_.now_ms(), s_.timeouts);
    if (ctx_.table.transition(r.instance_id, step.expect, step.change)) {
      spdlog::info("instance {}: armed beyond the demand; its runner removed, cleaning it", r.instance_id);
      wake_agents(ctx_.queue, {r.instance_id});
    }
  } catch (const std::exception& e) {
    spdlog::warn("instance {}: could not remove its armed runner ({})", r.instance_id, e.what());
  }
}

}  // namespace runpool::controller
