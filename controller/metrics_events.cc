#include "controller/metrics_events.h"

#include <map>

namespace runpool::controller {

using metrics::Unit;

metrics::Event pool_event(const Settings& s, int64_t now_ms, const std::string& resource_class) {
  metrics::Event e;
  e.ns = s.metrics_namespace;
  e.timestamp_ms = now_ms;
  e.dimension("Pool", s.pool);
  if (!resource_class.empty()) e.dimension("ResourceClass", resource_class);
  return e;
}

metrics::Event provision_event(const Settings& s, int64_t now_ms, const ProvisionReport& r) {
  metrics::Event e = pool_event(s, now_ms, r.resource_class);
  e.add("WarmClaims", r.warm()).add("ColdLaunches", r.launched()).add("ProvisionFailures", r.ok ? 0 : 1);
  if (r.ok) {
    std::vector<double> warm, cold;
    for (const auto& i : r.instances) {
      if (i.running_after_ms > 0) (i.warm ? warm : cold).push_back(static_cast<double>(i.running_after_ms));
    }
    e.add("ProvisionLatency", static_cast<double>(r.elapsed_ms), Unit::kMilliseconds)
        .add_values("WarmReadyLatency", std::move(warm), Unit::kMilliseconds)
        .add_values("ColdReadyLatency", std::move(cold), Unit::kMilliseconds);
  }
  e.property("Command", "provision").property("Label", r.label).property("Requested", r.requested);
  if (!r.ok) e.property("Error", r.error);
  return e;
}

metrics::Event release_event(const Settings& s, int64_t now_ms, const std::string& label, const DrainOutcome& d,
                             bool failed, int64_t elapsed_ms) {
  metrics::Event e = pool_event(s, now_ms);
  e.add("ReleaseLatency", static_cast<double>(elapsed_ms), Unit::kMilliseconds)
      .add("InstancesDrained", static_cast<double>(d.returned.size()))
      .add("StragglersTerminated", static_cast<double>(d.terminated.size()))
      .add("InstancesStillDraining", static_cast<double>(d.left.size()))
      .add("ReleaseFailures", failed ? 1 : 0);
  e.property("Command", "release").property("Label", label);
  return e;
}

std::vector<metrics::Event> refresh_events(const Settings& s, int64_t now_ms, const std::vector<RefreshDone>& done,
                                           int failed, const std::vector<PoolDepthSample>& depths, bool dry_run) {
  std::vector<metrics::Event> out;
  if (!dry_run) {
    int untracked = 0, ghosts = 0, gone = 0;
    std::map<std::string, int> by_rule;
    for (const auto& a : done) {
      switch (a.kind) {
        case pool::ActionKind::kTerminate: ++by_rule[a.rule]; break;
        case pool::ActionKind::kTerminateUntracked: ++untracked; break;
        case pool::ActionKind::kDeleteRunner:
          if (a.detail.empty()) ++ghosts;  // not one someone else had already deleted
          break;
        case pool::ActionKind::kClose:
          // A terminating record closed once EC2 confirms is the end of our own termination; a
          // live one whose instance vanished (reclaimed, killed, self-terminated) is a leak.
          if (a.rule == "ec2.gone" && a.state != pool::State::kTerminating) ++gone;
          break;
        default: break;
      }
    }
    int terminations = 0;
    for (const auto& [rule, n] : by_rule) terminations += n;
    metrics::Event summary = pool_event(s, now_ms);
    summary.add("Terminations", terminations)
        .add("UntrackedTerminated", untracked)
        .add("GhostRunnersDeleted", ghosts)
        .add("RecordsClosedGone", gone)
        .add("Leaks", untracked + ghosts + gone)
        .add("RefreshFailures", failed)
        .property("Command", "refresh");
    out.push_back(std::move(summary));
    for (const auto& [rule, n] : by_rule) {
      metrics::Event e = pool_event(s, now_ms);
      e.dimension("Rule", rule).add("Terminations", n).property("Command", "refresh");
      out.push_back(std::move(e));
    }
  }
  for (const auto& d : depths) {
    metrics::Event e = pool_event(s, now_ms, d.resource_class);
    e.add("IdleInstances", static_cast<double>(d.idle_records))
        .add("PoolQueueMessages", static_cast<double>(d.queued))
        .property("Command", "refresh");
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<metrics::Event> scale_down_events(const Settings& s, int64_t now_ms, const ScaleDownDone& d,
                                              bool dry_run) {
  std::vector<metrics::Event> out;
  if (!dry_run) {
    metrics::Event e = pool_event(s, now_ms);
    e.add("ScaleDownDrains", d.drains_started)
        .add("ScaleDownTerminations", d.drained_terminated + d.orphans_terminated)
        .add("ScaleDownRetirements", d.retired)
        .add("OrphansMarked", d.orphans_marked)
        .add("OrphansUnmarked", d.orphans_unmarked)
        .add("OrphansTerminated", d.orphans_terminated)
        .add("ScaleDownFailures", d.failed)
        .property("Command", "scale-down");
    out.push_back(std::move(e));
  }
  for (const auto& [resource_class, idle] : d.idle_quota) {
    metrics::Event e = pool_event(s, now_ms, resource_class);
    e.add("IdleQuota", idle).property("Command", "scale-down");
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<metrics::Event> scale_set_events(const Settings& s, int64_t now_ms, const ScaleSetSample& sample) {
  auto event = [&] {
    metrics::Event e = pool_event(s, now_ms);
    e.dimension("ScaleSet", sample.scale_set);
    return e;
  };
  std::map<pool::RunnerPhase, int> phases;
  for (const auto& r : sample.runners) ++phases[r.phase];
  metrics::Event e = event();
  if (sample.assigned_jobs) e.add("AssignedJobs", static_cast<double>(*sample.assigned_jobs));
  e.add("DesiredRunners", static_cast<double>(sample.desired))
      .add("StartingRunners", phases[pool::RunnerPhase::kStarting])
      .add("ArmedRunners", phases[pool::RunnerPhase::kArmed])
      .add("BusyRunners", phases[pool::RunnerPhase::kBusy])
      .add("EndingRunners", phases[pool::RunnerPhase::kEnding]);
  std::vector<metrics::Event> out;
  const auto& latencies = sample.queued_to_started_ms;
  size_t i = 0;
  do {
    std::vector<double> chunk;
    for (; i < latencies.size() && chunk.size() < metrics::kMaxValuesPerMetric; ++i) {
      chunk.push_back(static_cast<double>(latencies[i]));
    }
    e.add_values("JobQueuedToStarted", std::move(chunk), metrics::Unit::kMilliseconds);
    out.push_back(std::move(e));
    e = event();
  } while (i < latencies.size());
  return out;
}

}  // namespace runpool::controller
