// run_release against in-memory fakes: drain, wait for drained, back to the pool; stragglers
// terminated; idempotent and safe when a second release runs alongside.
#include "controller/release.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/json.h"
#include "controller/provision.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::State;
using pool::UsageClass;
using testing::World;

void provision(World& w, int count, const std::string& label = "ci-1-1-build") {
  ProvisionOptions o;
  o.count = count;
  o.label = label;
  o.usage = UsageClass::kOnDemand;
  o.getenv = [](const char*) -> const char* { return nullptr; };
  o.random = [] { return std::string("0123456789abcdef"); };
  ASSERT_EQ(run_provision(w.ctx, o), kExitOk);
  w.out.str("");
}

TEST(Release, DrainsWaitsAndReturnsEveryInstanceToThePool) {
  World w;
  provision(w, 2);
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", true, std::nullopt, false, {}}), kExitOk) << w.out.str();
  auto bodies = w.queue.bodies("small");
  ASSERT_EQ(bodies.size(), 2u);
  for (const auto& id : w.compute.launched) {
    auto r = w.record(id);
    EXPECT_EQ(r.state, State::kIdle);
    EXPECT_EQ(r.label, "");
    EXPECT_EQ(r.generation, 1);
    EXPECT_FALSE(r.advertise_pending);
    EXPECT_TRUE(r.remove_token.empty());
    EXPECT_EQ(r.deadline_ms, w.now() - (w.now() - r.state_since_ms) + w.settings.timeouts.idle_ttl_ms);
    EXPECT_NE(std::find(bodies.begin(), bodies.end(), R"({"generation":1,"instance_id":")" + id + R"("})"),
              bodies.end());
  }
  EXPECT_EQ(w.github.remove_tokens, 1);  // one per release
  EXPECT_NE(w.out.str().find("2 returned to the pool"), std::string::npos) << w.out.str();
  EXPECT_TRUE(w.compute.terminated.empty());
  // Both agents were woken for their drain.
  std::vector<std::string> woken = w.queue.wakes, launched = w.compute.launched;
  std::sort(woken.begin(), woken.end());
  std::sort(launched.begin(), launched.end());
  EXPECT_EQ(woken, launched);
}

TEST(Release, TheNextProvisionClaimsWhatWasReleased) {
  World w;
  provision(w, 2, "run-1");
  ASSERT_EQ(run_release(w.ctx, {"run-1", true, std::nullopt, false, {}}), kExitOk);
  provision(w, 2, "run-2");
  EXPECT_EQ(w.compute.launched.size(), 2u);  // none launched for run-2
  for (const auto& id : w.compute.launched) {
    EXPECT_EQ(w.record(id).label, "run-2");
    EXPECT_EQ(w.record(id).generation, 2);
  }
}

TEST(Release, IsIdempotent) {
  World w;
  provision(w, 1);
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", true, std::nullopt, false, {}}), kExitOk);
  w.out.str("");
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", true, std::nullopt, false, {}}), kExitOk);
  EXPECT_NE(w.out.str().find("nothing assigned"), std::string::npos) << w.out.str();
  EXPECT_EQ(w.queue.bodies("small").size(), 1u);
}

TEST(Release, AConcurrentReleaseWinsNothingTwice) {
  World w;
  provision(w, 2);
  w.agents.drain_ok = false;
  // A second release, run while the first waits, finds them draining and waits too; then the
  // agents report drained and each instance is returned exactly once.
  bool nested = false;
  w.on_tick = [&] {
    if (nested) return;
    nested = true;
    w.agents.drain_ok = true;
    std::ostringstream other_out;
    Context other{w.settings, w.clock, w.table, w.queue, w.compute, w.github, other_out, w.cancelled};
    EXPECT_EQ(run_release(other, {"ci-1-1-build", true, std::nullopt, false, {}}), kExitOk);
  };
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", true, std::nullopt, false, {}}), kExitOk) << w.out.str();
  EXPECT_EQ(w.queue.bodies("small").size(), 2u);  // one message each, not two
  for (const auto& id : w.compute.launched) EXPECT_EQ(w.record(id).state, State::kIdle);
}

TEST(Release, NotDrainedInTimeIsTerminated) {
  World w;
  provision(w, 2);
  w.agents.drain_ok = false;
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", true, std::chrono::seconds(10), true, {}}), kExitOk);
  Json::Value j = parse_json(w.out.str(), "release");
  EXPECT_EQ(j["terminated"].size(), 2u);
  for (const auto& id : w.compute.launched) {
    EXPECT_EQ(w.record(id).state, State::kTerminated);
    EXPECT_EQ(w.compute.terminated.count(id), 1u);
  }
  EXPECT_TRUE(w.queue.bodies("small").empty());
}

TEST(Release, AFailedAgentIsTerminatedWithoutWaiting) {
  World w;
  provision(w, 1);
  w.agents.drain_ok = false;
  w.agents.failing.insert(w.compute.launched[0]);
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", true, std::chrono::minutes(10), false, {}}), kExitOk);
  EXPECT_EQ(w.record(w.compute.launched[0]).state, State::kTerminated);
  EXPECT_LT(w.clock.sleeps, 10);
}

// An instance terminated from outside while assigned never drains: release sees it gone in EC2,
// closes its record, and does not wait out its timeout for it.
TEST(Release, AnInstanceGoneFromEc2IsClosedWithoutWaitingOutTheTimeout) {
  World w;
  provision(w, 2);
  const std::string victim = w.compute.launched[0], survivor = w.compute.launched[1];
  w.agents.drain_ok = false;
  w.compute.terminated.insert(victim);
  // The survivor's agent confirms only once the victim is settled: the look at EC2 happens while
  // the release waits, not after.
  w.on_tick = [&] { w.agents.drain_ok = w.record(victim).state == State::kTerminated; };
  const int64_t start = w.now();
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", true, std::chrono::minutes(10), true, {}}), kExitOk) << w.out.str();
  Json::Value j = parse_json(w.out.str(), "release");
  EXPECT_EQ(write_json(j["gone"]), "[\"" + victim + "\"]") << w.out.str();
  EXPECT_EQ(write_json(j["returned"]), "[\"" + survivor + "\"]") << w.out.str();
  EXPECT_EQ(j["terminated"].size(), 0u);
  EXPECT_EQ(w.record(victim).state, State::kTerminated);
  EXPECT_EQ(w.record(survivor).state, State::kIdle);
  EXPECT_LT(w.now() - start, 10'000) << "settled at the first look, 5 s into the wait";
  EXPECT_EQ(w.queue.bodies("small").size(), 1u);
}

// EC2 as FakeCompute sees it, but with some instances stopped (instance-initiated shutdown with
// behaviour stop, a spot interruption that stops), and describe failing on demand.
class StoppingCompute final : public Compute {
 public:
  explicit StoppingCompute(testing::FakeCompute& inner) : inner_(inner) {}
  aws::CreateFleetResult create_fleet(const aws::CreateFleetRequest& r) override { return inner_.create_fleet(r); }
  void terminate(const std::vector<std::string>& ids) override { inner_.terminate(ids); }
  void tag_label(const std::vector<std::string>& ids, const std::string& l) override { inner_.tag_label(ids, l); }
  std::vector<aws::Instance> describe(const std::vector<std::string>& ids) override {
    ++describes;
    if (fail_describe) throw aws::AwsError("ec2", "DescribeInstances", 500, "InternalError", "injected");
    auto out = inner_.describe(ids);
    for (auto& i : out) {
      if (stopped.count(i.instance_id) && !inner_.terminated.count(i.instance_id)) i.state = {80, "stopped"};
    }
    return out;
  }
  std::vector<aws::Instance> pool_instances() override { return inner_.pool_instances(); }
  std::set<std::string> stopped;
  bool fail_describe = false;
  int describes = 0;

 private:
  testing::FakeCompute& inner_;
};

TEST(Release, AStoppedInstanceIsTerminatedWithoutWaitingOutTheTimeout) {
  World w;
  provision(w, 1);
  const std::string id = w.compute.launched[0];
  w.agents.drain_ok = false;
  StoppingCompute ec2(w.compute);
  ec2.stopped.insert(id);
  std::ostringstream out;
  Context ctx{w.settings, w.clock, w.table, w.queue, ec2, w.github, out, w.cancelled};
  const int64_t start = w.now();
  ASSERT_EQ(run_release(ctx, {"ci-1-1-build", true, std::chrono::minutes(10), true, {}}), kExitOk) << out.str();
  Json::Value j = parse_json(out.str(), "release");
  EXPECT_EQ(write_json(j["terminated"]), "[\"" + id + "\"]") << out.str();
  EXPECT_EQ(w.compute.terminated.count(id), 1u) << "TerminateInstances for the stopped instance";
  EXPECT_EQ(w.record(id).state, State::kTerminated);
  EXPECT_LT(w.now() - start, 10'000);
}

TEST(Release, Ec2UnreadableKeepsWaitingForTheAgents) {
  World w;
  provision(w, 1);
  const std::string id = w.compute.launched[0];
  w.agents.drain_ok = false;
  StoppingCompute ec2(w.compute);
  ec2.fail_describe = true;
  ec2.stopped.insert(id);
  std::ostringstream out;
  Context ctx{w.settings, w.clock, w.table, w.queue, ec2, w.github, out, w.cancelled};
  const int64_t start = w.now();
  w.on_tick = [&] { w.agents.drain_ok = w.now() - start > 20'000; };
  ASSERT_EQ(run_release(ctx, {"ci-1-1-build", true, std::chrono::minutes(10), true, {}}), kExitOk) << out.str();
  EXPECT_GE(ec2.describes, 3) << "looked every 5 s, failing";
  EXPECT_EQ(w.record(id).state, State::kIdle) << "drained and returned, not closed on a failed look";
}

// A release whose instances all drain within the first few seconds never asks EC2.
TEST(Release, AQuickDrainDoesNotAskEc2) {
  World w;
  provision(w, 2);
  StoppingCompute ec2(w.compute);
  std::ostringstream out;
  Context ctx{w.settings, w.clock, w.table, w.queue, ec2, w.github, out, w.cancelled};
  ASSERT_EQ(run_release(ctx, {"ci-1-1-build", true, std::nullopt, false, {}}), kExitOk) << out.str();
  EXPECT_EQ(ec2.describes, 0);
}

TEST(Release, APoolMessageThatFailsLeavesAdvertisePendingForRefresh) {
  World w;
  provision(w, 1);
  w.queue.fail_advertise = true;
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", true, std::nullopt, false, {}}), kExitOk);
  auto r = w.record(w.compute.launched[0]);
  EXPECT_EQ(r.state, State::kIdle);
  EXPECT_TRUE(r.advertise_pending);
}

TEST(Release, CancellationLeavesTheRestDrainingAndFails) {
  World w;
  provision(w, 1);
  w.agents.drain_ok = false;
  w.on_tick = [&] { w.cancelled = true; };
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", true, std::nullopt, false, {}}), kExitFailed);
  EXPECT_EQ(w.record(w.compute.launched[0]).state, State::kDraining);
  EXPECT_TRUE(w.compute.terminated.empty());
}

TEST(Release, OtherPoolsAreNotTouched) {
  World w;
  provision(w, 1);
  w.settings.pool = "other";
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", true, std::nullopt, false, {}}), kExitOk);
  EXPECT_EQ(w.record(w.compute.launched[0]).state, State::kRunning);
}

// reuse = never: the drained instance is terminated, not returned, and the output says why.
TEST(Release, ReuseNeverTerminatesTheDrainedInstance) {
  World w;
  w.settings.resource_class_reuse_policy["small"] =
      pool::ReusePolicy{pool::JobPrivileges::kSudo, pool::Reuse::kNever, pool::ReuseScope::kRepository,
                        pool::TrustDomain::kNone};
  provision(w, 1, "run-1");
  ASSERT_EQ(run_release(w.ctx, {"run-1", true, std::nullopt, true, {}}), kExitOk) << w.out.str();
  const std::string id = w.compute.launched.at(0);
  Json::Value j = parse_json(w.out.str(), "release");
  ASSERT_EQ(j["retired"].size(), 1u) << w.out.str();
  EXPECT_EQ(j["retired"][0].asString(), id);
  EXPECT_EQ(j["retired_reasons"][id].asString(), "reuse-never");
  EXPECT_EQ(j["returned"].size(), 0u);
  EXPECT_EQ(w.compute.terminated, std::set<std::string>{id});
  EXPECT_TRUE(w.queue.bodies("small").empty());
  EXPECT_NE(w.record(id).state, State::kIdle);
  // The next run gets a fresh instance.
  provision(w, 1, "run-2");
  EXPECT_EQ(w.compute.launched.size(), 2u);
}

// reuse = same-scope: back to the pool kept for its repository; another repository's claim leaves
// it (and launches), its own repository's claim takes it.
TEST(Release, SameScopeKeepsTheInstanceForItsRepository) {
  World w;
  w.settings.reuse_policy.reuse = pool::Reuse::kSameScope;
  provision(w, 1, "run-1");
  ASSERT_EQ(run_release(w.ctx, {"run-1", true, std::nullopt, false, {}}), kExitOk) << w.out.str();
  const std::string kept = w.compute.launched.at(0);
  EXPECT_EQ(w.record(kept).state, State::kIdle);
  EXPECT_EQ(w.record(kept).reuse_scope_key, "repository:acme/app");
  ASSERT_EQ(w.queue.bodies("small").size(), 1u);

  w.github.url = "https://github.com/acme/other";
  provision(w, 1, "run-2");
  ASSERT_EQ(w.compute.launched.size(), 2u) << "another repository does not get the kept instance";
  EXPECT_EQ(w.record(kept).state, State::kIdle);
  EXPECT_EQ(w.record(w.compute.launched.at(1)).label, "run-2");
  EXPECT_EQ(w.queue.bodies("small").size(), 1u) << "its message is left for its own repository";

  // The untagged fresh instance of acme/other comes back tagged with acme/other.
  ASSERT_EQ(run_release(w.ctx, {"run-2", true, std::nullopt, false, {}}), kExitOk) << w.out.str();
  EXPECT_EQ(w.record(w.compute.launched.at(1)).reuse_scope_key, "repository:acme/other");

  w.github.url = "https://github.com/acme/app";
  provision(w, 1, "run-3");
  EXPECT_EQ(w.compute.launched.size(), 2u) << "its own repository claims it";
  EXPECT_EQ(w.record(kept).label, "run-3");
}

TEST(Release, BadLabel) {
  World w;
  EXPECT_THROW(run_release(w.ctx, {"a b", true, std::nullopt, false, {}}), UsageError);
}

}  // namespace
}  // namespace runpool::controller
