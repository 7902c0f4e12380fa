#include "common/pool/demand_plan.h"

#include <algorithm>

#include <fmt/format.h>

namespace runpool::pool {

const char* demand_rule_name(DemandRule r) {
  switch (r) {
    case DemandRule::kNoStatistics: return "no-statistics";
    case DemandRule::kGrow: return "grow";
    case DemandRule::kShrink: return "shrink";
    case DemandRule::kSteady: return "steady";
  }
  return "?";
}

DemandPlan plan_demand(const DemandFacts& f) {
  DemandPlan p;
  const int64_t max_runners = std::max(0, f.max_runners);
  const int64_t min_armed = std::max(0, f.min_armed);
  const int64_t assigned = std::max<int64_t>(0, f.assigned_jobs.value_or(0));
  p.desired = std::min(max_runners, min_armed + assigned);
  for (const auto& r : f.runners) p.current += r.phase == RunnerPhase::kEnding ? 0 : 1;

  if (p.current < p.desired) {
    const int64_t need = p.desired - p.current;
    p.claim = static_cast<int>(std::min<int64_t>(need, std::max(0, f.claimable)));
    int64_t returning = 0;
    for (const auto& r : f.runners) {
      if (r.phase == RunnerPhase::kEnding && f.now_ms - r.since_ms < f.return_wait_ms) ++returning;
    }
    p.awaited = static_cast<int>(std::min<int64_t>(need - p.claim, returning));
    p.launch = static_cast<int>(need - p.claim - p.awaited);
    p.rule = f.assigned_jobs ? DemandRule::kGrow : DemandRule::kNoStatistics;
    p.why = fmt::format("{} runner(s), {} desired (min(max {}, min_armed {} + {} assigned)): {} claimed, {}{} launched",
                        p.current, p.desired, max_runners, min_armed, assigned, p.claim,
                        p.awaited ? fmt::format("{} awaited from cleaning, ", p.awaited) : "", p.launch);
    return p;
  }
  if (!f.assigned_jobs) {
    p.rule = DemandRule::kNoStatistics;
    p.why = fmt::format("{} runner(s); no statistics yet: none removed", p.current);
    return p;
  }
  if (p.current == p.desired) {
    p.rule = DemandRule::kSteady;
    p.why = fmt::format("{} runner(s), as desired", p.current);
    return p;
  }
  std::vector<const ScaleSetRunner*> armed;
  for (const auto& r : f.runners) {
    if (r.phase == RunnerPhase::kArmed && f.now_ms - r.since_ms >= f.arm_grace_ms) armed.push_back(&r);
  }
  std::stable_sort(armed.begin(), armed.end(),
                   [](const ScaleSetRunner* a, const ScaleSetRunner* b) { return a->since_ms < b->since_ms; });
  const int64_t excess = p.current - p.desired;
  for (const auto* r : armed) {
    if (static_cast<int64_t>(p.remove.size()) >= excess) break;
    p.remove.push_back(r->instance_id);
  }
  p.rule = p.remove.empty() ? DemandRule::kSteady : DemandRule::kShrink;
  p.why = fmt::format("{} runner(s), {} desired: {} armed one(s) removed{}", p.current, p.desired, p.remove.size(),
                      static_cast<int64_t>(p.remove.size()) < excess
                          ? " (the rest are starting, busy or armed too recently to remove)"
                          : "");
  return p;
}

}  // namespace runpool::pool
