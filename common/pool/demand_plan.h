// What one runner scale set needs next, from its demand and the runners it has: the rule GitHub's
// own scale-set clients follow — desired = min(max_runners, min_armed + totalAssignedJobs), where
// assigned jobs are those waiting and those running — applied to the scale set's runners. More are
// claimed from the warm pool first, launched only for the rest; fewer come only from armed runners
// (started and listening, no job), never from one starting or busy, and never from one armed so
// recently that a job may be on its way to it. Instances being cleaned back into the pool are
// waited for before anything is launched. Pure: the long-running controller gathers the facts
// (the session's last statistics, the pool's records of the scale set) and carries the plan out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace runpool::pool {

enum class RunnerPhase {
  kStarting,  // claimed or launched for the scale set; its JIT runner not yet listening
  kArmed,     // listening, no job
  kBusy,      // running a job
  kEnding,    // its job done or its removal asked: cleaning, on its way back to the pool
};

struct ScaleSetRunner {
  std::string instance_id;
  RunnerPhase phase = RunnerPhase::kStarting;
  int64_t since_ms = 0;  // in this phase since (AWS clock)
};

struct DemandFacts {
  int64_t now_ms = 0;
  int min_armed = 0;    // idle headroom: runners kept listening with no job assigned
  int max_runners = 0;  // the most runners the scale set may have at once
  // totalAssignedJobs of the session's last statistics; nullopt before the first statistics.
  std::optional<int64_t> assigned_jobs;
  std::vector<ScaleSetRunner> runners;
  int claimable = 0;          // idle instances of the pool this scale set may claim now
  int64_t arm_grace_ms = 0;  // an armed runner younger than this is never removed
  // An ending runner's instance is being cleaned and comes back to the pool: for one ending less
  // than this long, a runner short is waited for (claimed once back) rather than launched, since
  // a cleaning takes seconds and a cold boot a minute. 0: never waited for (reuse = never).
  int64_t return_wait_ms = 0;
};

enum class DemandRule {
  kNoStatistics,  // demand not known yet: nothing removed, min_armed kept
  kGrow,          // fewer runners than desired
  kShrink,        // more runners than desired: armed ones removed
  kSteady,        // as many as desired (or the surplus is all starting, busy or freshly armed)
};

const char* demand_rule_name(DemandRule r);

struct DemandPlan {
  DemandRule rule = DemandRule::kSteady;
  int64_t desired = 0;
  int current = 0;   // starting + armed + busy (ending ones no longer count)
  int claim = 0;     // from the warm pool
  int awaited = 0;   // left to instances being cleaned back into the pool
  int launch = 0;    // the rest
  std::vector<std::string> remove;  // armed runners beyond desired, longest armed first
  std::string why;   // for logs and status
};

DemandPlan plan_demand(const DemandFacts& facts);

}  // namespace runpool::pool
