// A provision retried after its first attempt died between CreateFleet's answer and its record
// writes (found by tests/e2e/races_test.cc): the retry records and waits for what the first
// attempt launched, found by its label tag, instead of claiming warm instances and launching a
// second fleet under another ClientToken.
#include <gtest/gtest.h>

#include "controller/launch_plan.h"
#include "controller/provision.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::State;
using pool::UsageClass;
using testing::World;

// The world's EC2 with the launch tags and states a describe shows (its fake leaves tags out).
class TaggedCompute final : public Compute {
 public:
  explicit TaggedCompute(testing::FakeCompute& inner) : inner_(inner) {}
  aws::CreateFleetResult create_fleet(const aws::CreateFleetRequest& r) override { return inner_.create_fleet(r); }
  void terminate(const std::vector<std::string>& ids) override { inner_.terminate(ids); }
  void tag_label(const std::vector<std::string>& ids, const std::string& l) override { inner_.tag_label(ids, l); }
  std::vector<aws::Instance> describe(const std::vector<std::string>& ids) override {
    std::vector<aws::Instance> out = inner_.describe(ids);
    for (auto& i : out) {
      i.tags = inner_.tags[i.instance_id];
      i.instance_type = "c7i.large";
    }
    return out;
  }
  std::vector<aws::Instance> pool_instances() override { return describe(inner_.launched); }

 private:
  testing::FakeCompute& inner_;
};

ProvisionOptions retry_options(int count) { return testing::provision_options(count, "ci-7-1-build"); }

// What the first attempt did before it died: a fleet of `count` for the label, no record.
std::vector<std::string> crashed_after_fleet(World& w, int count) {
  aws::CreateFleetRequest r = fleet_request(w.settings, "small", {"c7i.large"}, UsageClass::kOnDemand, count,
                                            "ci-7-1-build",
                                            fleet_client_token(w.settings.pool, "ci-7-1-build", UsageClass::kOnDemand, 1, count));
  aws::CreateFleetResult res = w.compute.create_fleet(r);
  std::vector<std::string> ids;
  for (const auto& f : res.instances) ids.insert(ids.end(), f.instance_ids.begin(), f.instance_ids.end());
  return ids;
}

TEST(ProvisionRetry, RunsOnWhatTheDeadAttemptLaunchedInsteadOfASecondFleet) {
  World w;
  TaggedCompute ec2(w.compute);
  Context ctx{w.settings, w.clock, w.table, w.queue, ec2, w.github, w.out, w.cancelled};
  const std::vector<std::string> first = crashed_after_fleet(w, 2);
  ASSERT_EQ(first.size(), 2u);
  w.add_idle("i-00000000000000aa1", 2, "small", UsageClass::kOnDemand);  // the pool changed meanwhile

  ASSERT_EQ(run_provision(ctx, retry_options(2)), kExitOk) << w.out.str();
  EXPECT_EQ(w.compute.requests.size(), 1u) << "a second fleet";
  EXPECT_EQ(w.compute.launched.size(), 2u);
  for (const auto& id : first) {
    pool::InstanceRecord r = w.record(id);
    EXPECT_EQ(r.state, State::kRunning) << id;
    EXPECT_EQ(r.label, "ci-7-1-build") << id;
    EXPECT_EQ(r.generation, 1) << id;
    EXPECT_EQ(r.instance_type, "c7i.large") << id;
  }
  EXPECT_EQ(w.record("i-00000000000000aa1").state, State::kIdle) << "left in the pool";
  for (const auto& id : first) {
    EXPECT_NE(std::find(w.queue.wake_urls.begin(), w.queue.wake_urls.end(), w.queue.wake_url(id)),
              w.queue.wake_urls.end())
        << id << " has no wake-up queue";
  }
}

TEST(ProvisionRetry, TakesOnlyWhatItStillNeeds) {
  World w;
  TaggedCompute ec2(w.compute);
  Context ctx{w.settings, w.clock, w.table, w.queue, ec2, w.github, w.out, w.cancelled};
  const std::vector<std::string> first = crashed_after_fleet(w, 3);
  ASSERT_EQ(first.size(), 3u);
  ASSERT_EQ(run_provision(ctx, retry_options(2)), kExitOk) << w.out.str();
  int recorded = 0;
  for (const auto& id : first) recorded += w.table.get(id).has_value();
  EXPECT_EQ(recorded, 2) << "only as many as the provision asks for";
  EXPECT_EQ(w.compute.requests.size(), 1u);
}

TEST(ProvisionRetry, AnotherLabelsOrARecordedInstanceIsNotTaken) {
  World w;
  TaggedCompute ec2(w.compute);
  Context ctx{w.settings, w.clock, w.table, w.queue, ec2, w.github, w.out, w.cancelled};
  const std::vector<std::string> first = crashed_after_fleet(w, 1);
  ASSERT_EQ(first.size(), 1u);
  ProvisionOptions other = retry_options(1);
  other.label = "someone-else";
  ASSERT_EQ(run_provision(ctx, other), kExitOk) << w.out.str();
  EXPECT_FALSE(w.table.get(first[0]).has_value()) << "taken by a provision of another label";
  EXPECT_EQ(w.compute.requests.size(), 2u);
}

}  // namespace
}  // namespace runpool::controller
