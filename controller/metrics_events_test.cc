// The events each command builds: names, units, dimensions and values from the command's own
// report, and that every one formats as a valid EMF line.
#include "controller/metrics_events.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/metrics/testing.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using metrics::Unit;
using metrics::testing::dimension_of;
using metrics::testing::values_of;
using pool::ActionKind;
using pool::State;

constexpr int64_t kNow = 1'800'000'000'000;

Settings events_settings() {
  Settings s = testing::test_settings();
  s.metrics_namespace = "acme/runpool";
  return s;
}

Unit unit_of(const metrics::Event& e, const std::string& metric) {
  for (const auto& m : e.metrics) {
    if (m.name == metric) return m.unit;
  }
  ADD_FAILURE() << "no metric " << metric;
  return Unit::kNone;
}

ProvisionReport report(bool ok) {
  ProvisionReport r;
  r.ok = ok;
  r.label = "ci-7-1-build";
  r.resource_class = "large";
  r.requested = 3;
  r.elapsed_ms = 95'000;
  r.instances = {{"i-1", "m7i.2xlarge", pool::UsageClass::kSpot, true, 4, 2'000},
                 {"i-2", "m7i.2xlarge", pool::UsageClass::kSpot, false, 1, 90'000},
                 {"i-3", "m7i.2xlarge", pool::UsageClass::kSpot, false, 1, 95'000}};
  if (!ok) {
    r.error = "timed out";
    for (auto& i : r.instances) i.running_after_ms = 0;
  }
  return r;
}

TEST(MetricsEvents, PoolEventCarriesNamespaceTimeAndDimensions) {
  metrics::Event e = pool_event(events_settings(), kNow);
  EXPECT_EQ(e.ns, "acme/runpool");
  EXPECT_EQ(e.timestamp_ms, kNow);
  ASSERT_EQ(e.dimensions.size(), 1u);
  EXPECT_EQ(dimension_of(e, "Pool"), "ci");
  e = pool_event(events_settings(), kNow, "small");
  EXPECT_EQ(e.dimensions.size(), 2u);
  EXPECT_EQ(dimension_of(e, "ResourceClass"), "small");
}

TEST(MetricsEvents, ASuccessfulProvision) {
  metrics::Event e = provision_event(events_settings(), kNow, report(true));
  EXPECT_EQ(dimension_of(e, "Pool"), "ci");
  EXPECT_EQ(dimension_of(e, "ResourceClass"), "large");
  EXPECT_EQ(values_of(e, "WarmClaims"), std::vector<double>{1});
  EXPECT_EQ(values_of(e, "ColdLaunches"), std::vector<double>{2});
  EXPECT_EQ(values_of(e, "ProvisionFailures"), std::vector<double>{0});
  EXPECT_EQ(values_of(e, "ProvisionLatency"), std::vector<double>{95'000});
  EXPECT_EQ(values_of(e, "WarmReadyLatency"), std::vector<double>{2'000});
  EXPECT_EQ(values_of(e, "ColdReadyLatency"), (std::vector<double>{90'000, 95'000}));
  EXPECT_EQ(unit_of(e, "ProvisionLatency"), Unit::kMilliseconds);
  EXPECT_EQ(unit_of(e, "ColdReadyLatency"), Unit::kMilliseconds);
  EXPECT_EQ(unit_of(e, "WarmClaims"), Unit::kCount);
  Json::Value line = parse_json(metrics::format_emf(e), "EMF");
  EXPECT_EQ(line["Label"], "ci-7-1-build");
  EXPECT_EQ(line["Requested"], 3);
  EXPECT_FALSE(line.isMember("Error"));
}

TEST(MetricsEvents, AFailedProvisionCountsItsClaimsButNoLatency) {
  metrics::Event e = provision_event(events_settings(), kNow, report(false));
  EXPECT_EQ(values_of(e, "ProvisionFailures"), std::vector<double>{1});
  EXPECT_EQ(values_of(e, "WarmClaims"), std::vector<double>{1});
  EXPECT_EQ(values_of(e, "ColdLaunches"), std::vector<double>{2});
  for (const char* m : {"ProvisionLatency", "WarmReadyLatency", "ColdReadyLatency"}) {
    EXPECT_TRUE(values_of(e, m).empty()) << m;
  }
  EXPECT_EQ(parse_json(metrics::format_emf(e), "EMF")["Error"], "timed out");
}

TEST(MetricsEvents, Release) {
  DrainOutcome d;
  d.returned = {"i-1", "i-2", "i-3"};
  d.terminated = {"i-4"};
  d.left = {"i-5"};
  d.gone = {"i-6"};
  metrics::Event e = release_event(events_settings(), kNow, "run-1", d, true, 42'000);
  EXPECT_EQ(e.dimensions.size(), 1u);
  EXPECT_EQ(values_of(e, "ReleaseLatency"), std::vector<double>{42'000});
  EXPECT_EQ(unit_of(e, "ReleaseLatency"), Unit::kMilliseconds);
  EXPECT_EQ(values_of(e, "InstancesDrained"), std::vector<double>{3});
  EXPECT_EQ(values_of(e, "StragglersTerminated"), std::vector<double>{1});
  EXPECT_EQ(values_of(e, "InstancesStillDraining"), std::vector<double>{1});
  EXPECT_EQ(values_of(e, "ReleaseFailures"), std::vector<double>{1});
  EXPECT_EQ(parse_json(metrics::format_emf(e), "EMF")["Label"], "run-1");
  EXPECT_EQ(values_of(release_event(events_settings(), kNow, "run-1", {}, false, 1), "ReleaseFailures"),
            std::vector<double>{0});
}

TEST(MetricsEvents, RefreshCountsTerminationsPerRuleAndEveryKindOfLeak) {
  std::vector<RefreshDone> done = {
      {ActionKind::kTerminate, "deadline.idle", State::kIdle, ""},
      {ActionKind::kTerminate, "deadline.idle", State::kIdle, ""},
      {ActionKind::kTerminate, "agent.failed", State::kRunning, ""},
      {ActionKind::kRetryTerminate, "terminating.retry", State::kTerminating, ""},  // not a new termination
      {ActionKind::kTerminateUntracked, "ec2.untracked", std::nullopt, ""},
      {ActionKind::kDeleteRunner, "ghost.runner", std::nullopt, ""},
      {ActionKind::kDeleteRunner, "ghost.runner", std::nullopt, "already gone"},  // someone else's
      {ActionKind::kClose, "ec2.gone", State::kIdle, ""},
      {ActionKind::kClose, "ec2.gone", State::kTerminating, ""},      // our own termination, confirmed
      {ActionKind::kClose, "terminate.confirmed", State::kTerminating, ""},
      {ActionKind::kAdvertise, "handshake.advertise", State::kIdle, ""},
  };
  std::vector<PoolDepthSample> depths = {{"small", 3, 4}, {"large", 0, 0}};
  auto events = refresh_events(events_settings(), kNow, done, 2, depths, false);
  ASSERT_EQ(events.size(), 5u);  // summary, 2 rules, 2 classes

  const metrics::Event& summary = events[0];
  EXPECT_EQ(summary.dimensions.size(), 1u);
  EXPECT_EQ(values_of(summary, "Terminations"), std::vector<double>{3});
  EXPECT_EQ(values_of(summary, "UntrackedTerminated"), std::vector<double>{1});
  EXPECT_EQ(values_of(summary, "GhostRunnersDeleted"), std::vector<double>{1});
  EXPECT_EQ(values_of(summary, "RecordsClosedGone"), std::vector<double>{1});
  EXPECT_EQ(values_of(summary, "Leaks"), std::vector<double>{3});
  EXPECT_EQ(values_of(summary, "RefreshFailures"), std::vector<double>{2});

  std::map<std::string, double> by_rule;
  for (size_t i = 1; i <= 2; ++i) {
    EXPECT_EQ(dimension_of(events[i], "Pool"), "ci");
    by_rule[dimension_of(events[i], "Rule")] = values_of(events[i], "Terminations").at(0);
  }
  EXPECT_EQ(by_rule, (std::map<std::string, double>{{"agent.failed", 1}, {"deadline.idle", 2}}));

  EXPECT_EQ(dimension_of(events[3], "ResourceClass"), "small");
  EXPECT_EQ(values_of(events[3], "IdleInstances"), std::vector<double>{3});
  EXPECT_EQ(values_of(events[3], "PoolQueueMessages"), std::vector<double>{4});
  EXPECT_EQ(dimension_of(events[4], "ResourceClass"), "large");
  EXPECT_EQ(values_of(events[4], "IdleInstances"), std::vector<double>{0});
  for (const auto& e : events) EXPECT_NO_THROW(metrics::format_emf(e));
}

TEST(MetricsEvents, AQuietRefreshStillReportsZeros) {
  auto events = refresh_events(events_settings(), kNow, {}, 0, {}, false);
  ASSERT_EQ(events.size(), 1u);
  for (const char* m : {"Terminations", "UntrackedTerminated", "GhostRunnersDeleted", "RecordsClosedGone", "Leaks",
                        "RefreshFailures"}) {
    EXPECT_EQ(values_of(events[0], m), std::vector<double>{0}) << m;
  }
}

TEST(MetricsEvents, ADryRunReportsOnlyThePoolDepth) {
  std::vector<RefreshDone> done = {{ActionKind::kTerminate, "deadline.idle", State::kIdle, ""}};
  auto events = refresh_events(events_settings(), kNow, done, 0, {{"small", 1, 1}}, true);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(values_of(events[0], "IdleInstances"), std::vector<double>{1});
}

TEST(MetricsEvents, ScaleDownSummaryAndQuotas) {
  ScaleDownDone d;
  d.drains_started = 3;
  d.drained_terminated = 2;
  d.orphans_terminated = 1;
  d.retired = 4;
  d.orphans_marked = 5;
  d.idle_quota = {{"large", 1}, {"small", 3}};
  auto events = scale_down_events(events_settings(), kNow, d, false);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(values_of(events[0], "ScaleDownDrains"), std::vector<double>{3});
  EXPECT_EQ(values_of(events[0], "ScaleDownTerminations"), std::vector<double>{3}) << "drained and orphans";
  EXPECT_EQ(values_of(events[0], "ScaleDownRetirements"), std::vector<double>{4});
  EXPECT_EQ(values_of(events[0], "OrphansMarked"), std::vector<double>{5});
  EXPECT_EQ(values_of(events[0], "ScaleDownFailures"), std::vector<double>{0});
  EXPECT_EQ(dimension_of(events[2], "ResourceClass"), "small");
  EXPECT_EQ(values_of(events[2], "IdleQuota"), std::vector<double>{3});
  for (const auto& e : events) EXPECT_NO_THROW(metrics::format_emf(e));
  EXPECT_EQ(scale_down_events(events_settings(), kNow, d, true).size(), 2u) << "a dry run: only the quotas";
}

TEST(ScaleSetEvents, TheRunnersByPhaseTheDemandAndEachJobsQueuedToStartedTime) {
  ScaleSetSample sample;
  sample.scale_set = "linux-big";
  sample.assigned_jobs = 3;
  sample.desired = 4;
  sample.runners = {{"i-a", pool::RunnerPhase::kBusy, 0},
                    {"i-b", pool::RunnerPhase::kBusy, 0},
                    {"i-c", pool::RunnerPhase::kArmed, 0},
                    {"i-d", pool::RunnerPhase::kEnding, 0}};
  sample.queued_to_started_ms = {900, 1'400};
  auto events = scale_set_events(events_settings(), kNow, sample);
  ASSERT_EQ(events.size(), 1u);
  const metrics::Event& e = events[0];
  EXPECT_EQ(dimension_of(e, "ScaleSet"), "linux-big");
  EXPECT_EQ(dimension_of(e, "Pool"), events_settings().pool);
  EXPECT_EQ(values_of(e, "AssignedJobs"), std::vector<double>{3});
  EXPECT_EQ(values_of(e, "DesiredRunners"), std::vector<double>{4});
  EXPECT_EQ(values_of(e, "StartingRunners"), std::vector<double>{0});
  EXPECT_EQ(values_of(e, "ArmedRunners"), std::vector<double>{1});
  EXPECT_EQ(values_of(e, "BusyRunners"), std::vector<double>{2});
  EXPECT_EQ(values_of(e, "EndingRunners"), std::vector<double>{1});
  EXPECT_EQ(values_of(e, "JobQueuedToStarted"), (std::vector<double>{900, 1'400}));
  EXPECT_EQ(unit_of(e, "JobQueuedToStarted"), Unit::kMilliseconds);
  EXPECT_NO_THROW(metrics::format_emf(e));
}

TEST(ScaleSetEvents, NoStatisticsYetNoAssignedJobsAndManyJobsSpreadOverEvents) {
  ScaleSetSample sample;
  sample.scale_set = "s";
  for (int i = 0; i < 250; ++i) sample.queued_to_started_ms.push_back(i);
  auto events = scale_set_events(events_settings(), kNow, sample);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_TRUE(values_of(events[0], "AssignedJobs").empty()) << "unknown is not zero";
  size_t total = 0;
  for (const auto& e : events) {
    total += values_of(e, "JobQueuedToStarted").size();
    EXPECT_NO_THROW(metrics::format_emf(e));
  }
  EXPECT_EQ(total, 250u);
  EXPECT_EQ(values_of(events[2], "JobQueuedToStarted").size(), 50u);
}

}  // namespace
}  // namespace runpool::controller
