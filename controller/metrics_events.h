// What runpoolctl measures (docs/observability.md lists every metric): each command's metric
// events, built from what the command already reports, as plain data. Pure: the command hands
// them to ctx.metrics, which decides where they go.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/metrics/emf.h"
#include "common/pool/demand_plan.h"
#include "common/pool/refresh_plan.h"
#include "controller/drain.h"
#include "controller/provision.h"
#include "controller/settings.h"

namespace runpool::controller {

// An event in the settings' namespace at `now_ms` with the Pool dimension, and ResourceClass
// when one is given.
metrics::Event pool_event(const Settings& s, int64_t now_ms, const std::string& resource_class = "");

// Pool+ResourceClass: WarmClaims, ColdLaunches, ProvisionFailures; on success ProvisionLatency
// (start to all registered) and each instance's WarmReadyLatency / ColdReadyLatency.
metrics::Event provision_event(const Settings& s, int64_t now_ms, const ProvisionReport& report);

// Pool: ReleaseLatency, InstancesDrained (back in the pool), StragglersTerminated,
// InstancesStillDraining, ReleaseFailures.
metrics::Event release_event(const Settings& s, int64_t now_ms, const std::string& label, const DrainOutcome& d,
                             bool failed, int64_t elapsed_ms);

// One action refresh carried out (its outcome was "done").
struct RefreshDone {
  pool::ActionKind kind = pool::ActionKind::kTerminate;
  std::string rule;
  std::optional<pool::State> state;  // the record's state as read, when the action has a record
  std::string detail;                // e.g. "already gone" for a runner someone else deleted
};

// One class's pool depth as refresh saw it before acting.
struct PoolDepthSample {
  std::string resource_class;
  int64_t idle_records = 0;
  int64_t queued = 0;  // the queue's approximate visible + in-flight messages
};

// A pass's events: a Pool summary — Terminations, UntrackedTerminated, GhostRunnersDeleted,
// RecordsClosedGone, Leaks (the sum of those three) and RefreshFailures, zeros included so an
// alarm sees data every pass — one Pool+Rule Terminations event per rule that terminated, and
// per class Pool+ResourceClass IdleInstances and PoolQueueMessages. A dry run did nothing: only
// the pool depth.
std::vector<metrics::Event> refresh_events(const Settings& s, int64_t now_ms, const std::vector<RefreshDone>& done,
                                           int failed, const std::vector<PoolDepthSample>& depths, bool dry_run);

// What one scale-down pass did, by decision kind (outcomes "done"), and the quota it kept per class.
struct ScaleDownDone {
  int orphans_marked = 0, orphans_unmarked = 0, orphans_terminated = 0;
  int drains_started = 0, drained_terminated = 0, retired = 0;
  int failed = 0;
  std::map<std::string, int> idle_quota;  // by resource class
};

// A pass's events: a Pool summary — ScaleDownDrains, ScaleDownTerminations (drained shared runners
// and orphans), ScaleDownRetirements, OrphansMarked, OrphansUnmarked, OrphansTerminated,
// ScaleDownFailures, zeros included — and per class Pool+ResourceClass IdleQuota. A dry run
// did nothing: only the quotas.
std::vector<metrics::Event> scale_down_events(const Settings& s, int64_t now_ms, const ScaleDownDone& done,
                                              bool dry_run);

// What runpoolctl serve saw of its scale set since its last event.
struct ScaleSetSample {
  std::string scale_set;
  std::optional<int64_t> assigned_jobs;  // the latest statistics (nullopt: none yet)
  int64_t desired = 0;
  std::vector<pool::ScaleSetRunner> runners;    // as the last pass read them
  std::vector<int64_t> queued_to_started_ms;    // one per job started since the last event
};

// Pool+ScaleSet: AssignedJobs (when known), DesiredRunners, StartingRunners, ArmedRunners,
// BusyRunners, EndingRunners, and JobQueuedToStarted (one value per job; more than an event holds
// go into further events carrying only them).
std::vector<metrics::Event> scale_set_events(const Settings& s, int64_t now_ms, const ScaleSetSample& sample);

}  // namespace runpool::controller
