// scale-down's idle quota when nobody set one: with no scale_down_schedule and no --idle the pass
// keeps every idle instance (idle_ttl retires them), while a configured schedule — even one with
// no entry for this class at this minute — and --idle still decide.
#include <gtest/gtest.h>

#include "common/json.h"
#include "common/schedule/idle_schedule.h"
#include "controller/scale_down.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::State;
using testing::FakeRunners;
using testing::World;

class ScaleDownDefaultTest : public ::testing::Test {
 protected:
  ScaleDownDefaultTest() {
    w.settings.shared = false;
    w.settings.resource_classes = {{"small", {"c7i.large"}}};
    for (const char* id : {"i-0de0000000000a01", "i-0de0000000000a02", "i-0de0000000000a03"}) ids.push_back(w.add_idle(id).instance_id);
  }
  int scale_down(ScaleDownOptions o = {}) {
    o.json = true;
    out.str("");
    int code = run_scale_down(ctx, o);
    doc = parse_json(out.str(), "scale-down --json");
    return code;
  }
  int count(State s) {
    int n = 0;
    for (const auto& id : ids) n += w.record(id).state == s;
    return n;
  }
  std::string reasons() {
    std::string all;
    for (const auto& d : doc["decisions"]) all += d["rule"].asString() + ": " + d["reason"].asString() + "\n";
    return all;
  }

  World w;
  FakeRunners gh;
  std::ostringstream out;
  Context ctx{w.settings, w.clock, w.table, w.queue, w.compute, gh, out, w.cancelled};
  Json::Value doc;
  std::vector<std::string> ids;
};

TEST_F(ScaleDownDefaultTest, NoScheduleAndNoIdleKeepsEveryIdleInstance) {
  ASSERT_TRUE(w.settings.scale_down_schedule.empty()) << "the default schedule is empty";
  ASSERT_EQ(scale_down(), kExitOk) << out.str();
  EXPECT_EQ(count(State::kIdle), 3) << out.str();
  EXPECT_TRUE(w.compute.terminated.empty());
  ASSERT_EQ(doc["decisions"].size(), 3u) << out.str();
  for (const auto& d : doc["decisions"]) {
    EXPECT_EQ(d["rule"].asString(), "idle.quota") << out.str();
    EXPECT_NE(d["reason"].asString().find("no idle limit for small (no scale_down_schedule"), std::string::npos)
        << d["reason"].asString();
  }
}

TEST_F(ScaleDownDefaultTest, IdleStillSetsTheQuotaWithoutASchedule) {
  ASSERT_EQ(scale_down({.idle = 1}), kExitOk) << out.str();
  EXPECT_EQ(count(State::kIdle), 1) << reasons();
  EXPECT_EQ(w.compute.terminated.size(), 2u) << reasons();
}

TEST_F(ScaleDownDefaultTest, AScheduleWithNoEntryForTheClassMeansZero) {
  // The operator wrote a schedule: outside its entries (here: another class's only) the quota is 0,
  // as in terraform-aws-github-runner's idle_config.
  w.settings.scale_down_schedule = schedule::parse_idle_schedule(R"([{"cron": "* * * * *", "idle": 2, "resource_class": "large"}])");
  ASSERT_EQ(scale_down(), kExitOk) << out.str();
  EXPECT_EQ(count(State::kIdle), 0) << reasons();
  EXPECT_EQ(w.compute.terminated.size(), 3u) << reasons();
}

TEST_F(ScaleDownDefaultTest, AMatchingScheduleEntryDecides) {
  w.settings.scale_down_schedule = schedule::parse_idle_schedule(R"([{"cron": "* * * * *", "idle": 2}])");
  ASSERT_EQ(scale_down(), kExitOk) << out.str();
  EXPECT_EQ(count(State::kIdle), 2) << reasons();
  EXPECT_EQ(w.compute.terminated.size(), 1u) << reasons();
}

}  // namespace
}  // namespace runpool::controller
