// run_release against in-memory fakes: drain, wait for drained, back to the pool; stragglers
// terminated; idempotent and safe when a second release runs alongside.
#include "controller/release.h"

#include <gtest/gtest.h>

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
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", std::nullopt, false}), kExitOk) << w.out.str();
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
}

TEST(Release, TheNextProvisionClaimsWhatWasReleased) {
  World w;
  provision(w, 2, "run-1");
  ASSERT_EQ(run_release(w.ctx, {"run-1", std::nullopt, false}), kExitOk);
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
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", std::nullopt, false}), kExitOk);
  w.out.str("");
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", std::nullopt, false}), kExitOk);
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
    EXPECT_EQ(run_release(other, {"ci-1-1-build", std::nullopt, false}), kExitOk);
  };
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", std::nullopt, false}), kExitOk) << w.out.str();
  EXPECT_EQ(w.queue.bodies("small").size(), 2u);  // one message each, not two
  for (const auto& id : w.compute.launched) EXPECT_EQ(w.record(id).state, State::kIdle);
}

TEST(Release, NotDrainedInTimeIsTerminated) {
  World w;
  provision(w, 2);
  w.agents.drain_ok = false;
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", std::chrono::seconds(10), true}), kExitOk);
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
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", std::chrono::minutes(10), false}), kExitOk);
  EXPECT_EQ(w.record(w.compute.launched[0]).state, State::kTerminated);
  EXPECT_LT(w.clock.sleeps, 10);
}

TEST(Release, APoolMessageThatFailsLeavesAdvertisePendingForRefresh) {
  World w;
  provision(w, 1);
  w.queue.fail_advertise = true;
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", std::nullopt, false}), kExitOk);
  auto r = w.record(w.compute.launched[0]);
  EXPECT_EQ(r.state, State::kIdle);
  EXPECT_TRUE(r.advertise_pending);
}

TEST(Release, CancellationLeavesTheRestDrainingAndFails) {
  World w;
  provision(w, 1);
  w.agents.drain_ok = false;
  w.on_tick = [&] { w.cancelled = true; };
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", std::nullopt, false}), kExitFailed);
  EXPECT_EQ(w.record(w.compute.launched[0]).state, State::kDraining);
  EXPECT_TRUE(w.compute.terminated.empty());
}

TEST(Release, OtherPoolsAreNotTouched) {
  World w;
  provision(w, 1);
  w.settings.pool = "other";
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", std::nullopt, false}), kExitOk);
  EXPECT_EQ(w.record(w.compute.launched[0]).state, State::kRunning);
}

TEST(Release, BadLabel) {
  World w;
  EXPECT_THROW(run_release(w.ctx, {"a b", std::nullopt, false}), UsageError);
}

}  // namespace
}  // namespace runpool::controller
