// run_provision against in-memory fakes: claim first, launch the rest, wait for registered, and
// clean up on every failure path so nothing stays assigned to a dead run.
#include "controller/provision.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <unistd.h>

#include "common/json.h"
#include "controller/launch_plan.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::State;
using pool::UsageClass;
using testing::World;

TEST(Provision, ColdLaunchesRecordsWaitsAndMarksRunning) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(2)), kExitOk) << w.out.str();
  auto running = w.in_state(State::kRunning);
  ASSERT_EQ(running.size(), 2u);
  for (const auto& r : running) {
    EXPECT_EQ(r.label, "ci-1-1-build");
    EXPECT_EQ(r.generation, 1);
    EXPECT_EQ(r.resource_class, "small");
    EXPECT_EQ(r.instance_type, "c7i.large");
    EXPECT_EQ(r.usage_class, UsageClass::kOnDemand);
    EXPECT_EQ(r.reg_url, "https://github.com/acme/app");
    EXPECT_TRUE(r.reg_token.empty());  // the agent took it
    EXPECT_GT(r.hard_deadline_ms, r.deadline_ms);
  }
  EXPECT_EQ(w.github.registration_tokens, 1);  // one per provision, not per instance
  ASSERT_EQ(w.compute.requests.size(), 1u);
  EXPECT_EQ(w.compute.requests[0].total_target_capacity, 2);
  EXPECT_EQ(w.compute.requests[0].default_target_capacity_type, "on-demand");
  EXPECT_EQ(w.queue.receives, 1);  // the pool was asked first
  EXPECT_NE(w.out.str().find("0 warm, 2 launched"), std::string::npos) << w.out.str();
  // Tagged at launch.
  bool labelled = false;
  for (const auto& t : w.compute.tags[running[0].instance_id]) labelled |= (t.key == kTagLabel && t.value == "ci-1-1-build");
  EXPECT_TRUE(labelled);
}

TEST(Provision, WarmFirstThenLaunchTheRest) {
  World w;
  w.add_idle("i-00000000000000aa1", 2);
  w.add_idle("i-00000000000000aa2", 5, "small", UsageClass::kOnDemand, "m7i.large");
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(3)), kExitOk) << w.out.str();
  auto a = w.record("i-00000000000000aa1");
  EXPECT_EQ(a.state, State::kRunning);
  EXPECT_EQ(a.generation, 3);
  EXPECT_EQ(a.label, "ci-1-1-build");
  EXPECT_EQ(w.record("i-00000000000000aa2").generation, 6);
  EXPECT_EQ(w.in_state(State::kRunning).size(), 3u);
  ASSERT_EQ(w.compute.requests.size(), 1u);
  EXPECT_EQ(w.compute.requests[0].total_target_capacity, 1);
  EXPECT_TRUE(w.queue.bodies("small").empty());  // claimed messages deleted
  EXPECT_NE(w.out.str().find("2 warm, 1 launched"), std::string::npos) << w.out.str();
  // Each claimed agent was woken (once); the launched one reads its record at boot anyway.
  std::vector<std::string> woken = w.queue.wakes;
  std::sort(woken.begin(), woken.end());
  EXPECT_EQ(woken, (std::vector<std::string>{"i-00000000000000aa1", "i-00000000000000aa2"}));
}

TEST(Provision, AWarmClaimReadsAndDeletesEachReceivedBatchInOneRequestEach) {
  World w;
  for (int i = 0; i < 12; ++i) w.add_idle(fmt::format("i-00000000000000b{:02d}", i), 2);
  w.table.reads.clear();
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(12)), kExitOk) << w.out.str();
  EXPECT_EQ(w.in_state(State::kRunning).size(), 12u);
  EXPECT_TRUE(w.compute.requests.empty());
  // Two receives (10 + 2): one batch read of the records and one batch delete each, no single reads.
  ASSERT_GE(w.table.reads.size(), 2u);
  EXPECT_EQ(std::vector<std::string>(w.table.reads.begin(), w.table.reads.begin() + 2),
            (std::vector<std::string>{"get_many 10", "get_many 2"}));
  EXPECT_EQ(std::count_if(w.table.reads.begin(), w.table.reads.end(),
                          [](const std::string& r) { return r.starts_with("get "); }),
            0);
  EXPECT_EQ(w.queue.batch_removes, 2);
  EXPECT_TRUE(w.queue.bodies("small").empty());
}

TEST(Provision, ASecondMessageForAnInstanceClaimedFromTheSameBatchIsDropped) {
  World w;
  w.add_idle("i-00000000000000aa1", 2);
  w.queue.advertise("small", {"i-00000000000000aa1", 2});  // a duplicate (a release re-run after its send)
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(2)), kExitOk) << w.out.str();
  EXPECT_EQ(w.record("i-00000000000000aa1").generation, 3) << "claimed once";
  EXPECT_EQ(w.compute.requests.size(), 1u) << "the second runner is launched, not claimed twice";
  EXPECT_EQ(w.in_state(State::kRunning).size(), 2u);
  EXPECT_TRUE(w.queue.bodies("small").empty()) << "both messages deleted";
}

// A launched instance's record carries its class's job privileges: its agent grants them.
TEST(Provision, ALaunchedRecordCarriesItsClasssJobPrivileges) {
  World w;
  pool::ReusePolicy docker;
  docker.job_privileges = pool::JobPrivileges::kDocker;
  docker.reuse = pool::Reuse::kNever;
  w.settings.resource_class_reuse_policy["small"] = docker;
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1, "run-1")), kExitOk) << w.out.str();
  ASSERT_EQ(w.compute.launched.size(), 1u);
  EXPECT_EQ(w.record(w.compute.launched[0]).job_privileges, "docker");
  w.settings.resource_class_reuse_policy.clear();
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1, "run-2")), kExitOk) << w.out.str();
  ASSERT_EQ(w.compute.launched.size(), 2u);
  EXPECT_EQ(w.record(w.compute.launched[1]).job_privileges, "user");
}

// Under reuse = same-scope a claim prefers, among the instances of the batch it receives, one kept
// for its own scope (its caches are warm) to an untagged one ahead of it in the queue; the untagged
// one stays in the pool, visible again.
TEST(Provision, ASameScopeClaimPrefersItsOwnScopeWithinTheBatch) {
  World w;
  w.settings.reuse_policy.reuse = pool::Reuse::kSameScope;
  w.add_idle("i-00000000000000aa1");  // untagged, first in the queue
  pool::InstanceRecord other = testing::idle_record("i-00000000000000aa2", w.now());
  other.reuse_scope_key = "repository:acme/other";
  w.table.inner.create(other);
  w.queue.advertise("small", {other.instance_id, other.generation});
  pool::InstanceRecord own = testing::idle_record("i-00000000000000aa3", w.now());
  own.reuse_scope_key = "repository:acme/app";  // the runs' repository (FakeRunners::url)
  w.table.inner.create(own);
  w.queue.advertise("small", {own.instance_id, own.generation});

  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk) << w.out.str();
  EXPECT_EQ(w.record(own.instance_id).state, State::kRunning);
  EXPECT_EQ(w.record(own.instance_id).label, "ci-1-1-build");
  EXPECT_EQ(w.record("i-00000000000000aa1").state, State::kIdle) << "the untagged one is left for later";
  EXPECT_EQ(w.record(other.instance_id).state, State::kIdle);
  EXPECT_TRUE(w.compute.requests.empty());
  EXPECT_EQ(w.queue.bodies("small").size(), 2u);
  EXPECT_TRUE(w.queue.all_visible());

  // With no instance of its own scope left, the next claim takes the untagged one.
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1, "ci-2-1-build")), kExitOk) << w.out.str();
  EXPECT_EQ(w.record("i-00000000000000aa1").label, "ci-2-1-build");
  EXPECT_EQ(w.record(other.instance_id).state, State::kIdle);
  EXPECT_TRUE(w.compute.requests.empty());
}

TEST(Provision, AFailingWakeUpCostsNothingButLatency) {
  World w;
  w.add_idle("i-00000000000000aa1");
  w.queue.fail_wake = true;
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk) << w.out.str();
  EXPECT_EQ(w.record("i-00000000000000aa1").state, State::kRunning);
  EXPECT_TRUE(w.compute.requests.empty());
}

TEST(Provision, AllWarmLaunchesNothing) {
  World w;
  w.add_idle("i-00000000000000aa1");
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk);
  EXPECT_TRUE(w.compute.requests.empty());
}

TEST(Provision, StaleWrongAndExpiredMessagesAreHandled) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;  // no fallback: a spot instance does not suit
  // Stale: the message names generation 1, the record is at 3 (claimed and returned since).
  w.table.inner.create(testing::idle_record("i-0000000000000051a", w.now(), 3, "small", UsageClass::kOnDemand));
  w.queue.advertise("small", {"i-0000000000000051a", 1});
  // Wrong usage class: left for others.
  w.add_idle("i-0000000000000b0b1", 2, "small", UsageClass::kSpot);
  // Expired: its idle deadline is too close.
  auto expiring = testing::idle_record("i-0000000000000e0e1", w.now(), 2, "small", UsageClass::kOnDemand);
  expiring.deadline_ms = w.now() + 1000;
  w.table.inner.create(expiring);
  w.queue.advertise("small", {"i-0000000000000e0e1", 2});
  // No record at all.
  w.queue.advertise("small", {"i-0000000000000a0e1", 1});
  // Garbage.
  w.queue.send("small", "not json");

  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk) << w.out.str();
  EXPECT_EQ(w.record("i-0000000000000051a").state, State::kIdle);
  EXPECT_EQ(w.record("i-0000000000000b0b1").state, State::kIdle);
  EXPECT_EQ(w.record("i-0000000000000e0e1").state, State::kIdle);
  // Only the spot instance's message is left, visible again for another provision.
  auto left = w.queue.bodies("small");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_NE(left[0].find("i-0000000000000b0b1"), std::string::npos);
  EXPECT_TRUE(w.queue.all_visible());
  EXPECT_EQ(w.in_state(State::kRunning).size(), 1u);  // launched instead
  EXPECT_EQ(w.compute.requests.size(), 1u);
}

TEST(Provision, SpotRequestWithFallbackClaimsOnDemandToo) {
  World w;
  w.add_idle("i-00000000000000d01", 2, "small", UsageClass::kOnDemand);
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk);
  EXPECT_EQ(w.record("i-00000000000000d01").state, State::kRunning);
}

TEST(Provision, TypeGlobsFilterClaimsAndLaunches) {
  World w;
  w.add_idle("i-00000000000000c71", 2, "small", UsageClass::kSpot, "c7i.large");
  auto o = testing::provision_options(1);
  o.allowed_types = std::vector<std::string>{"m7i.*"};
  ASSERT_EQ(run_provision(w.ctx, o), kExitOk);
  EXPECT_EQ(w.record("i-00000000000000c71").state, State::kIdle);  // not allowed: left in the pool
  ASSERT_EQ(w.compute.requests.size(), 1u);
  const auto& ov = w.compute.requests[0].launch_template_configs[0].overrides;
  ASSERT_EQ(ov.size(), 1u);
  EXPECT_EQ(ov[0].instance_type, "m7i.large");
}

TEST(Provision, SpotShortageFallsBackToOnDemand) {
  World w;
  w.compute.capacity[{"c7i.large", "spot"}] = 1;
  w.compute.capacity[{"m7i.large", "spot"}] = 0;
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(3)), kExitOk) << w.out.str();
  int spot = 0, od = 0;
  for (const auto& r : w.in_state(State::kRunning)) (r.usage_class == UsageClass::kSpot ? spot : od)++;
  EXPECT_EQ(spot, 1);
  EXPECT_EQ(od, 2);
  // spot round 1 (1 of 3), spot round 2 (0 of 2), then on-demand for 2.
  ASSERT_EQ(w.compute.requests.size(), 3u);
  EXPECT_EQ(w.compute.requests[1].default_target_capacity_type, "spot");
  EXPECT_EQ(w.compute.requests[2].default_target_capacity_type, "on-demand");
  EXPECT_EQ(w.compute.requests[2].total_target_capacity, 2);
  EXPECT_NE(w.compute.requests[0].client_token, w.compute.requests[1].client_token);
}

TEST(Provision, PartialFleetsAreToppedUp) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  w.compute.per_call_limit = 1;
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(3)), kExitOk) << w.out.str();
  EXPECT_EQ(w.compute.requests.size(), 3u);
  EXPECT_EQ(w.in_state(State::kRunning).size(), 3u);
}

TEST(Provision, NotEnoughCapacityFailsAndTerminatesWhatItLaunched) {
  World w;
  w.settings.on_demand_fallback = false;
  w.compute.per_call_limit = 1;
  w.settings.fleet_rounds = 2;
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(3)), kExitFailed);
  EXPECT_EQ(w.compute.terminated.size(), 2u);
  EXPECT_EQ(w.in_state(State::kTerminated).size(), 2u);
  EXPECT_NE(w.out.str().find("launched 2 of the 3"), std::string::npos) << w.out.str();
}

TEST(Provision, CapacityErrorForTheWholeCallMovesToOnDemand) {
  World w;
  w.compute.fail_next = aws::AwsError("ec2", "CreateFleet", 500, "InsufficientInstanceCapacity", "none");
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk);
  ASSERT_EQ(w.compute.requests.size(), 2u);
  EXPECT_EQ(w.compute.requests[1].default_target_capacity_type, "on-demand");
}

TEST(Provision, OtherLaunchErrorsFail) {
  World w;
  w.compute.fail_next = aws::AwsError("ec2", "CreateFleet", 400, "InvalidLaunchTemplateName.NotFoundException", "x");
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitFailed);
  EXPECT_NE(w.out.str().find("InvalidLaunchTemplateName"), std::string::npos);
}

TEST(Provision, TimeoutTerminatesLaunchedAndDrainsClaimedBackToThePool) {
  World w;
  w.add_idle("i-00000000000000aa1", 2);
  w.agents.register_ok = false;
  auto o = testing::provision_options(2);
  o.timeout = std::chrono::seconds(20);
  ASSERT_EQ(run_provision(w.ctx, o), kExitFailed);
  EXPECT_NE(w.out.str().find("timed out"), std::string::npos) << w.out.str();
  // The launched one is terminated.
  ASSERT_EQ(w.compute.launched.size(), 1u);
  EXPECT_EQ(w.compute.terminated.count(w.compute.launched[0]), 1u);
  EXPECT_EQ(w.record(w.compute.launched[0]).state, State::kTerminated);
  // The claimed one drained and is back in the pool, under its claimed generation.
  auto back = w.record("i-00000000000000aa1");
  EXPECT_EQ(back.state, State::kIdle);
  EXPECT_EQ(back.generation, 3);
  EXPECT_EQ(back.label, "");
  EXPECT_FALSE(back.advertise_pending);
  ASSERT_EQ(w.queue.bodies("small").size(), 1u);
  EXPECT_EQ(w.queue.bodies("small")[0], R"({"generation":3,"instance_id":"i-00000000000000aa1"})");
  EXPECT_EQ(w.github.remove_tokens, 1);
}

TEST(Provision, CancellationCleansUp) {
  World w;
  w.add_idle("i-00000000000000aa1", 2);
  w.agents.register_ok = false;
  int ticks = 0;
  w.on_tick = [&] {
    if (++ticks == 3) w.cancelled = true;
  };
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(2)), kExitFailed);
  EXPECT_NE(w.out.str().find("cancelled"), std::string::npos);
  EXPECT_EQ(w.record("i-00000000000000aa1").state, State::kIdle);
  EXPECT_EQ(w.compute.terminated.size(), 1u);
  for (const auto& r : w.in_state(State::kRunning)) ADD_FAILURE() << r.instance_id << " still running";
}

TEST(Provision, ClaimedNotDrainedInTimeIsLeftDrainingForRefresh) {
  World w;
  w.add_idle("i-00000000000000aa1", 2);
  w.agents.register_ok = false;
  w.agents.drain_ok = false;
  auto o = testing::provision_options(1);
  o.timeout = std::chrono::seconds(5);
  ASSERT_EQ(run_provision(w.ctx, o), kExitFailed);
  auto r = w.record("i-00000000000000aa1");
  EXPECT_EQ(r.state, State::kDraining);  // its drain deadline lets refresh finish it
  EXPECT_GT(r.deadline_ms, w.now());
}

TEST(Provision, NoRemoveTokenMeansClaimedInstancesAreTerminated) {
  World w;
  w.add_idle("i-00000000000000aa1", 2);
  w.agents.register_ok = false;
  w.github.fail_remove_token = true;
  auto o = testing::provision_options(1);
  o.timeout = std::chrono::seconds(5);
  ASSERT_EQ(run_provision(w.ctx, o), kExitFailed);
  EXPECT_EQ(w.record("i-00000000000000aa1").state, State::kTerminated);
  EXPECT_EQ(w.compute.terminated.count("i-00000000000000aa1"), 1u);
}

// An agent that fails is let go and replaced — once per runner asked for: a cause that is not
// the instance's own fails every replacement too, and the provision then gives up.
TEST(Provision, AnAgentThatFailsIsReplacedAndEveryReplacementFailingFailsTheProvision) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  w.agents.register_ok = false;
  w.on_tick = [&] {
    for (const auto& id : w.compute.launched) w.agents.failing.insert(id);
  };
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitFailed);
  EXPECT_NE(w.out.str().find("config.sh failed"), std::string::npos) << w.out.str();
  EXPECT_NE(w.out.str().find("0 of 1 instance(s) running, at least 1 needed"), std::string::npos) << w.out.str();
  EXPECT_LT(w.clock.sleeps, 10) << "each failure ends its wait at once";
  EXPECT_EQ(w.compute.launched.size(), 2u) << "the first and one replacement";
  EXPECT_EQ(w.compute.terminated.size(), 2u);
}

TEST(Provision, AFailedInstanceIsReplacedAndTheProvisionSucceeds) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  w.agents.register_ok = false;
  std::string bad;
  w.on_tick = [&] {
    if (bad.empty() && !w.compute.launched.empty()) {
      bad = w.compute.launched[0];
      w.agents.failing.insert(bad);
    }
    w.agents.register_ok = true;  // the others register
  };
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(2)), kExitOk) << w.out.str();
  EXPECT_EQ(w.in_state(State::kRunning).size(), 2u);
  EXPECT_EQ(w.compute.launched.size(), 3u);
  EXPECT_EQ(w.compute.terminated.count(bad), 1u);
  EXPECT_EQ(w.record(bad).state, State::kTerminated);
  EXPECT_NE(w.out.str().find("provisioned 2 runner(s)"), std::string::npos) << w.out.str();
  EXPECT_NE(w.out.str().find("let go"), std::string::npos) << w.out.str();
  EXPECT_NE(w.out.str().find(bad), std::string::npos) << w.out.str();
}

// keep_failed: the failed instance is kept for inspection, out of service, and still replaced.
TEST(Provision, WithKeepFailedAFailedInstanceIsKeptNotTerminatedAndStillReplaced) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  w.settings.keep_failed = std::chrono::hours(2);
  w.agents.register_ok = false;
  std::string bad;
  w.on_tick = [&] {
    if (bad.empty() && !w.compute.launched.empty()) {
      bad = w.compute.launched[0];
      w.agents.failing.insert(bad);
    }
    w.agents.register_ok = true;
  };
  const int64_t start = to_epoch_ms(w.clock.now());
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk) << w.out.str();
  EXPECT_EQ(w.compute.launched.size(), 2u) << "replaced";
  EXPECT_EQ(w.compute.terminated.count(bad), 0u) << "kept";
  pool::InstanceRecord kept = w.record(bad);
  EXPECT_EQ(kept.state, State::kCreated) << "never claimed, never serving";
  EXPECT_GE(kept.kept_until_ms, start + 2 * 3'600'000) << "kept two hours from when it was let go";
  EXPECT_LE(kept.kept_until_ms, to_epoch_ms(w.clock.now()) + 2 * 3'600'000);
  EXPECT_TRUE(kept.reg_token.empty());
  EXPECT_NE(w.out.str().find("; kept for inspection (keep_failed)"), std::string::npos) << w.out.str();
}

// A provision that timed out waiting for registrations keeps what never registered: what did not
// come up is what an operator wants to look at.
TEST(Provision, WithKeepFailedATimedOutProvisionKeepsWhatNeverRegistered) {
  World w;
  w.settings.keep_failed = std::chrono::hours(1);
  w.agents.register_ok = false;
  auto o = testing::provision_options(1);
  o.timeout = std::chrono::seconds(20);
  ASSERT_EQ(run_provision(w.ctx, o), kExitFailed);
  ASSERT_EQ(w.compute.launched.size(), 1u);
  EXPECT_TRUE(w.compute.terminated.empty());
  EXPECT_GT(w.record(w.compute.launched[0]).kept_until_ms, 0);

  // Without keep_failed it is terminated, as ever (TimeoutTerminatesLaunched… above).
  World off;
  off.agents.register_ok = false;
  ASSERT_EQ(run_provision(off.ctx, o), kExitFailed);
  EXPECT_EQ(off.compute.terminated.size(), 1u);
}

TEST(Provision, AnInstanceThatDiesWhileBootingIsReplacedEarly) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  w.agents.register_ok = false;
  w.on_tick = [&] {
    for (const auto& id : w.compute.launched) w.compute.terminated.insert(id);  // e.g. spot reclaimed
  };
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitFailed);
  EXPECT_NE(w.out.str().find("terminated in EC2"), std::string::npos) << w.out.str();
  EXPECT_EQ(w.compute.launched.size(), 2u);
  EXPECT_LT(w.clock.clock.total_slept(), std::chrono::seconds(30));
}

TEST(Provision, AClaimedInstanceWhoseAgentFallsSilentIsReplacedByALaunch) {
  World w;
  w.add_idle("i-00000000000000aa1", 2);
  w.agents.silent.insert("i-00000000000000aa1");  // no heartbeat, no registration: it died after it was advertised
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk) << w.out.str();
  EXPECT_NE(w.out.str().find("silent"), std::string::npos) << w.out.str();
  EXPECT_LT(w.clock.clock.total_slept(), w.settings.provision_timeout);
  EXPECT_EQ(w.record("i-00000000000000aa1").state, State::kDraining);  // left for refresh to retire
  ASSERT_EQ(w.compute.launched.size(), 1u);
  EXPECT_EQ(w.record(w.compute.launched[0]).state, State::kRunning);
}

// --min-count: enough running ends the wait for the rest after straggler_wait; those are let go.
TEST(Provision, AMinimumCountSucceedsWithWhatRunsAndLetsTheStragglersGo) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  w.agents.register_ok = false;  // until the slow one is picked
  std::string slow;
  w.on_tick = [&] {
    if (slow.empty() && w.compute.launched.size() == 3) {
      slow = w.compute.launched[2];
      w.agents.silent.insert(slow);
      w.agents.register_ok = true;
    }
  };
  auto o = testing::provision_options(3);
  o.min_count = 2;
  o.straggler_wait = std::chrono::seconds(20);
  ASSERT_EQ(run_provision(w.ctx, o), kExitOk) << w.out.str();
  ASSERT_FALSE(slow.empty());
  EXPECT_EQ(w.in_state(State::kRunning).size(), 2u);
  EXPECT_EQ(w.compute.terminated.count(slow), 1u) << "the straggler is let go";
  EXPECT_NE(w.out.str().find("provisioned 2 of 3 runner(s)"), std::string::npos) << w.out.str();
  EXPECT_NE(w.out.str().find("not running in time"), std::string::npos) << w.out.str();
  EXPECT_LT(w.clock.clock.total_slept(), std::chrono::seconds(60)) << "not the whole provision_timeout";
}

TEST(Provision, AMinimumCountNotReachedFailsAndLetsEverythingGo) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  w.agents.register_ok = false;
  auto o = testing::provision_options(3);
  o.min_count = 2;
  o.timeout = std::chrono::seconds(30);
  ASSERT_EQ(run_provision(w.ctx, o), kExitFailed);
  EXPECT_NE(w.out.str().find("timed out"), std::string::npos) << w.out.str();
  EXPECT_EQ(w.compute.terminated.size(), 3u);
  EXPECT_TRUE(w.in_state(State::kRunning).empty());
}

TEST(Provision, ALaunchShortOfTheCountIsEnoughWhenItMeetsTheMinimum) {
  World w;
  w.settings.on_demand_fallback = false;
  w.compute.per_call_limit = 1;
  w.settings.fleet_rounds = 2;
  auto o = testing::provision_options(3);
  o.min_count = 2;
  ASSERT_EQ(run_provision(w.ctx, o), kExitOk) << w.out.str();
  EXPECT_EQ(w.in_state(State::kRunning).size(), 2u);
  EXPECT_NE(w.out.str().find("provisioned 2 of 3"), std::string::npos) << w.out.str();
}

TEST(Provision, AnInstanceWhoseRecordCannotBeWrittenIsTerminatedAtOnce) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  w.settings.fleet_rounds = 1;
  w.table.fail_create = true;
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitFailed);
  ASSERT_EQ(w.compute.launched.size(), 1u);
  EXPECT_EQ(w.compute.terminated.count(w.compute.launched[0]), 1u);
}

TEST(Provision, LosingAClaimRaceDropsTheMessageAndLaunches) {
  World w;
  w.add_idle("i-00000000000000aa1", 2);
  bool raced = false;
  w.table.before_transition = [&](const std::string& id, const pool::Expect&, const pool::LifecycleChange& c) {
    if (raced || !c.state || *c.state != State::kClaimed) return;
    raced = true;  // another provision claims it first
    auto r = *w.table.inner.get(id);
    auto step = pool::claim(r, "other-label", Secret("t"), "u", w.now(), w.settings.timeouts);
    ASSERT_TRUE(w.table.inner.transition(id, step.expect, step.change));
  };
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk);
  EXPECT_EQ(w.record("i-00000000000000aa1").label, "other-label");
  EXPECT_EQ(w.compute.requests.size(), 1u);
  EXPECT_TRUE(w.queue.bodies("small").empty());
}

TEST(Provision, AClaimWhoseAnswerWasLostIsStillOurs) {
  World w;
  w.add_idle("i-00000000000000aa1", 2);
  w.table.lose_answer_once = true;
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk);
  EXPECT_EQ(w.record("i-00000000000000aa1").label, "ci-1-1-build");
  EXPECT_TRUE(w.compute.requests.empty());
}

TEST(Provision, ARerunWithTheSameLabelKeepsWhatIsAssignedAndLaunchesNoMore) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(2)), kExitOk);
  ASSERT_EQ(w.compute.requests.size(), 1u);
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(2)), kExitOk);
  EXPECT_EQ(w.compute.requests.size(), 1u);
  EXPECT_EQ(w.in_state(State::kRunning).size(), 2u);
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(3)), kExitOk);  // asks for one more
  EXPECT_EQ(w.in_state(State::kRunning).size(), 3u);
}

TEST(Provision, AReplayedFleetAnswerIsNotLaunchedTwice) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  // The first provision crashed after CreateFleet, before writing records: the instance exists,
  // no record does. The re-run sends the same ClientToken and gets the same instance back.
  auto token = fleet_client_token("ci", "ci-1-1-build", UsageClass::kOnDemand, 1, 1);
  w.compute.create_fleet(fleet_request(w.settings, "small", {"c7i.large", "m7i.large"}, UsageClass::kOnDemand, 1,
                                       "ci-1-1-build", token));
  ASSERT_EQ(w.compute.launched.size(), 1u);
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk);
  EXPECT_EQ(w.compute.launched.size(), 1u);
  EXPECT_EQ(w.record(w.compute.launched[0]).state, State::kRunning);
}

TEST(Provision, AnUnreachablePoolStillLaunches) {
  World w;
  w.queue.fail_receive = true;
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk);
  EXPECT_EQ(w.compute.requests.size(), 1u);
}

TEST(Provision, ClaimingIsBoundedWhenTheQueueKeepsHandingOutMessages) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  // Thirty spot instances, none suitable: each is held, not re-read, and the claim phase stops.
  for (int i = 0; i < 30; ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "i-%017x", 0xb000 + i);
    w.add_idle(id, 2, "small", UsageClass::kSpot);
  }
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1)), kExitOk);
  EXPECT_LE(w.queue.receives, 24);  // count * 4 + 20 messages examined at most
  EXPECT_EQ(w.queue.bodies("small").size(), 30u);
  EXPECT_TRUE(w.queue.all_visible());
}

TEST(Provision, UsageErrors) {
  World w;
  auto bad = [&](ProvisionOptions o) { EXPECT_THROW(run_provision(w.ctx, o), UsageError); };
  bad(testing::provision_options(0));
  bad(testing::provision_options(51));
  auto o = testing::provision_options(1);
  o.resource_class = "huge";
  bad(o);
  o = testing::provision_options(1, "a,b");
  bad(o);
  o = testing::provision_options(1, "self-hosted");
  bad(o);
  o = testing::provision_options(1);
  o.allowed_types = std::vector<std::string>{"r5.*"};
  bad(o);
  o = testing::provision_options(2);
  o.min_count = 3;  // more than --count
  bad(o);
  o.min_count = -1;
  bad(o);
  EXPECT_TRUE(w.compute.requests.empty());
  EXPECT_EQ(w.github.registration_tokens, 0);
}

TEST(Provision, DerivedLabel) {
  World w;
  w.settings.usage_class = UsageClass::kOnDemand;
  auto o = testing::provision_options(1, "");
  o.getenv = [](const char* n) -> const char* {
    std::string s = n;
    return s == "GITHUB_RUN_ID" ? "77" : s == "GITHUB_RUN_ATTEMPT" ? "2" : s == "GITHUB_JOB" ? "prov" : nullptr;
  };
  ASSERT_EQ(run_provision(w.ctx, o), kExitOk);
  EXPECT_EQ(w.in_state(State::kRunning)[0].label, "ci-77-2-prov");
}

TEST(Provision, JsonAndActionsOutputs) {
  World w;
  w.add_idle("i-00000000000000aa1");
  char out_path[] = "/tmp/runpool-out-XXXXXX", sum_path[] = "/tmp/runpool-sum-XXXXXX";
  close(mkstemp(out_path));
  close(mkstemp(sum_path));
  auto o = testing::provision_options(2);
  o.json = true;
  o.actions = {out_path, sum_path};
  ASSERT_EQ(run_provision(w.ctx, o), kExitOk);
  Json::Value j = parse_json(w.out.str(), "output");
  EXPECT_TRUE(j["ok"].asBool());
  EXPECT_EQ(j["label"].asString(), "ci-1-1-build");
  EXPECT_EQ(j["warm"].asInt(), 1);
  EXPECT_EQ(j["launched"].asInt(), 1);
  EXPECT_EQ(j["instances"].size(), 2u);
  std::ifstream of(out_path), sf(sum_path);
  std::stringstream o1, s1;
  o1 << of.rdbuf();
  s1 << sf.rdbuf();
  EXPECT_NE(o1.str().find("label<<ghadelimiter_0123456789abcdef\nci-1-1-build\nghadelimiter_0123456789abcdef\n"),
            std::string::npos)
      << o1.str();
  EXPECT_NE(o1.str().find("warm<<"), std::string::npos);
  EXPECT_NE(o1.str().find("i-00000000000000aa1 i-"), std::string::npos);
  EXPECT_NE(s1.str().find("| instance | type | usage | source | running after |"), std::string::npos) << s1.str();
  EXPECT_NE(s1.str().find("1 warm, 1 launched"), std::string::npos);
  std::remove(out_path);
  std::remove(sum_path);
}

TEST(ProvisionReport, Formats) {
  ProvisionReport r;
  r.ok = false;
  r.error = "timed out | badly";
  r.label = "L";
  r.resource_class = "small";
  r.instances = {{"i-1", "c7i.large", UsageClass::kSpot, true, 3, 0}};
  EXPECT_NE(provision_text(r).find("failed"), std::string::npos);
  EXPECT_NE(provision_summary(r).find("**Failed:** `timed out | badly`"), std::string::npos);
  EXPECT_FALSE(provision_json(r)["ok"].asBool());
  auto outs = provision_outputs(r);
  EXPECT_EQ(outs[0], (std::pair<std::string, std::string>{"label", "L"}));
  EXPECT_EQ(outs[2], (std::pair<std::string, std::string>{"warm", "1"}));
  EXPECT_EQ(outs[3], (std::pair<std::string, std::string>{"launched", "0"}));
}

}  // namespace
}  // namespace runpool::controller
