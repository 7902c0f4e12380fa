#include "controller/serve_pass.h"

#include <algorithm>
#include <set>

#include "common/pool/runner_name.h"

namespace runpool::controller {

namespace {

// A finished runner's name matters until its instance has left that assignment (a new generation,
// or a state past running).
bool still_assigned(const ServeSnapshot& s, const std::string& name) {
  auto parts = pool::parse_runner_name(s.pool, name);
  return parts && std::any_of(s.records.begin(), s.records.end(), [&](const pool::InstanceRecord& r) {
           return r.instance_id == parts->instance_id && r.generation == parts->generation &&
                  (r.state == pool::State::kCreated || r.state == pool::State::kClaimed ||
                   r.state == pool::State::kRunning);
         });
}

}  // namespace

ServePass plan_serve_pass(const ServeSnapshot& s, const SessionDemand& session) {
  ServePass out;
  std::set<std::string> finished;
  for (const std::string& name : session.finished) {
    if (still_assigned(s, name)) {
      finished.insert(name);
    } else {
      out.forget.push_back(name);
    }
  }
  out.upkeep = pool::plan_upkeep(s.records, s.pool, s.scale_set, finished);

  pool::DemandFacts& f = out.facts;
  f.now_ms = s.now_ms;
  f.min_armed = s.min_armed;
  f.max_runners = s.max_runners;
  f.assigned_jobs = session.assigned_jobs;
  f.runners = pool::scale_set_runners(s.records, s.pool, s.scale_set, finished, s.now_ms);
  f.return_wait_ms = s.return_wait_ms;
  f.arm_grace_ms = s.arm_grace_ms;
  f.claimable = s.claimable.value_or(0);
  out.plan = pool::plan_demand(f);
  // Growing: how many the pool holds splits claims from instances awaited and launches. Asked for
  // whenever runners are short, even if all could be awaited: an idle instance serves at once.
  out.needs_claimable = !s.claimable && out.plan.current < out.plan.desired;
  for (const std::string& id : out.plan.remove) {
    auto it = std::find_if(s.records.begin(), s.records.end(),
                           [&](const pool::InstanceRecord& r) { return r.instance_id == id; });
    if (it != s.records.end()) out.remove.push_back(*it);
  }
  // A runner starting or ending changes on its agent's word (registered, drained), which only the
  // table tells; a surplus held back by the arm grace is removable once the grace ends.
  const bool settled = std::all_of(f.runners.begin(), f.runners.end(), [&](const pool::ScaleSetRunner& r) {
    if (r.phase == pool::RunnerPhase::kArmed) return true;
    if (r.phase != pool::RunnerPhase::kBusy) return false;
    auto it = std::find_if(s.records.begin(), s.records.end(),
                           [&](const pool::InstanceRecord& x) { return x.instance_id == r.instance_id; });
    return it != s.records.end() && s.known.count(pool::runner_name(s.pool, it->instance_id, it->generation)) > 0;
  });
  out.quiet = settled && out.upkeep.empty() && out.remove.empty() && !out.needs_claimable &&
              out.plan.claim + out.plan.launch == 0 && out.plan.awaited == 0 && out.plan.current <= out.plan.desired;
  return out;
}

RunnerLookups plan_runner_lookups(const ServeSnapshot& s, const std::set<std::string>& known,
                                  const std::set<std::string>& finished) {
  RunnerLookups out;
  for (const pool::ScaleSetRunner& r : pool::scale_set_runners(s.records, s.pool, s.scale_set, finished, s.now_ms)) {
    auto it = std::find_if(s.records.begin(), s.records.end(),
                           [&](const pool::InstanceRecord& x) { return x.instance_id == r.instance_id; });
    if (it == s.records.end()) continue;
    const std::string name = pool::runner_name(s.pool, it->instance_id, it->generation);
    if (known.count(name)) {
      out.known.insert(name);
    } else if (r.phase == pool::RunnerPhase::kArmed) {
      out.look_up.push_back(name);
    }
  }
  return out;
}

bool serves_scale_set(const std::optional<github::ScaleSetRunner>& runner, int64_t set_id) {
  return runner && runner->scale_set_id == set_id;
}

}  // namespace runpool::controller
