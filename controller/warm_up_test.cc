// scale-up on a run-scoped pool against in-memory fakes: instances launched, registered under a
// warm-up label and released into the pool, idle and advertised, up to the quota.
#include "controller/warm_up.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::State;
using testing::World;

TEST(WarmUp, FillsARunScopedPoolToItsQuotaThroughRegistrationAndRelease) {
  World w;
  w.settings.usage_class = pool::UsageClass::kOnDemand;
  w.add_idle("i-00000000000000aa1", 2);
  ASSERT_EQ(run_scale_up(w.ctx, {.to = 3, .resource_class = "small", .json = true}), kExitOk) << w.out.str();
  Json::Value doc = parse_json(w.out.str(), "scale-up --json");
  EXPECT_EQ(doc["mode"].asString(), "warm-up");
  EXPECT_EQ(doc["classes"][0]["shortfall"].asInt(), 2) << "one idle already";
  EXPECT_EQ(doc["classes"][0]["returned"].asInt(), 2);
  const std::string label = doc["classes"][0]["label"].asString();
  EXPECT_EQ(label.rfind(warm_up_prefix("ci"), 0), 0u) << label;
  ASSERT_EQ(w.compute.launched.size(), 2u) << "launched, never claimed from the pool";
  EXPECT_EQ(w.record("i-00000000000000aa1").generation, 2) << "the idle one was not touched";
  for (const auto& id : w.compute.launched) {
    pool::InstanceRecord r = w.record(id);
    EXPECT_EQ(r.state, State::kIdle) << id;
    EXPECT_EQ(r.label, "");
    EXPECT_TRUE(pool::agent_reported(r, pool::AgentSignal::kDrained)) << "it registered and drained like any other";
  }
  EXPECT_EQ(w.in_state(State::kIdle).size(), 3u);
  EXPECT_EQ(w.queue.bodies("small").size(), 3u) << "each advertised in the class's queue";
  EXPECT_EQ(w.github.registration_tokens, 1);

  // The quota met: nothing more.
  w.out.str("");
  ASSERT_EQ(run_scale_up(w.ctx, {.to = 3, .resource_class = "small"}), kExitOk) << w.out.str();
  EXPECT_EQ(w.compute.launched.size(), 2u);
  EXPECT_NE(w.out.str().find("small: quota 3 (--to 3), 0 short, 0 warmed"), std::string::npos) << w.out.str();
}

// A warm-up killed between its provision and its release left its runners running: the next one
// releases them into the pool and counts them.
TEST(WarmUp, RunnersADeadWarmUpLeftRunningAreReleasedIntoThePoolFirst) {
  World w;
  w.settings.usage_class = pool::UsageClass::kOnDemand;
  auto o = testing::provision_options(1, warm_up_prefix("ci") + "0123456789abcdef");
  ASSERT_EQ(run_provision(w.ctx, o), kExitOk) << w.out.str();
  ASSERT_EQ(w.in_state(State::kRunning).size(), 1u);
  w.out.str("");
  ASSERT_EQ(run_scale_up(w.ctx, {.to = 1, .resource_class = "small"}), kExitOk) << w.out.str();
  EXPECT_EQ(w.compute.launched.size(), 1u) << "nothing more launched";
  EXPECT_EQ(w.in_state(State::kIdle).size(), 1u);
  EXPECT_TRUE(w.in_state(State::kRunning).empty());
}

TEST(WarmUp, AClassThatDoesNotReuseIsNotWarmed) {
  World w;
  w.settings.reuse_policy.reuse = pool::Reuse::kNever;
  ASSERT_EQ(run_scale_up(w.ctx, {.to = 2, .resource_class = "small"}), kExitOk) << w.out.str();
  EXPECT_TRUE(w.compute.launched.empty());
  EXPECT_NE(w.out.str().find("not warmed"), std::string::npos) << w.out.str();
}

TEST(WarmUp, WhatFailsToRegisterIsLetGoAndTheRunFails) {
  World w;
  w.settings.usage_class = pool::UsageClass::kOnDemand;
  w.agents.register_ok = false;
  ASSERT_EQ(run_scale_up(w.ctx, {.to = 1, .resource_class = "small", .timeout = std::chrono::seconds(30)}), kExitFailed)
      << w.out.str();
  EXPECT_TRUE(w.in_state(State::kIdle).empty());
  for (const auto& id : w.compute.launched) EXPECT_EQ(w.compute.terminated.count(id), 1u) << id;
  EXPECT_NE(w.out.str().find("0 warmed into the pool"), std::string::npos) << w.out.str();
}

}  // namespace
}  // namespace runpool::controller
