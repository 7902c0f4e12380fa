#include "controller/launch_plan.h"

#include <gtest/gtest.h>

#include <set>

#include "controller/compute.h"

namespace runpool::controller {
namespace {

using pool::UsageClass;

Settings settings() {
  Settings s;
  s.pool = "ci";
  s.table = "runpool";
  s.launch_template = "runpool-ci";
  s.spot_allocation_strategy = "price-capacity-optimized";
  return s;
}

TEST(LaunchPlan, Usages) {
  EXPECT_EQ(launch_usages(UsageClass::kSpot, true), (std::vector<UsageClass>{UsageClass::kSpot, UsageClass::kOnDemand}));
  EXPECT_EQ(launch_usages(UsageClass::kSpot, false), (std::vector<UsageClass>{UsageClass::kSpot}));
  EXPECT_EQ(launch_usages(UsageClass::kOnDemand, true), (std::vector<UsageClass>{UsageClass::kOnDemand}));
  EXPECT_EQ(launch_usages(UsageClass::kOnDemand, false), (std::vector<UsageClass>{UsageClass::kOnDemand}));
}

TEST(LaunchPlan, ClaimFilter) {
  EXPECT_EQ(claim_usage_filter(UsageClass::kSpot, true), std::nullopt);
  EXPECT_EQ(claim_usage_filter(UsageClass::kSpot, false), UsageClass::kSpot);
  EXPECT_EQ(claim_usage_filter(UsageClass::kOnDemand, true), UsageClass::kOnDemand);
  EXPECT_EQ(claim_usage_filter(UsageClass::kOnDemand, false), UsageClass::kOnDemand);
}

TEST(LaunchPlan, TypesFilteredByGlobsInClassOrder) {
  ResourceClass rc{"small", {"m7i.large", "c7i.large", "c6i.large", "t3.small"}};
  EXPECT_EQ(launch_types(rc, {}), rc.instance_types);
  EXPECT_EQ(launch_types(rc, {"c*"}), (std::vector<std::string>{"c7i.large", "c6i.large"}));
  EXPECT_EQ(launch_types(rc, {"t3.*", "m7i.large"}), (std::vector<std::string>{"m7i.large", "t3.small"}));
  EXPECT_TRUE(launch_types(rc, {"r5.*"}).empty());
}

TEST(LaunchPlan, ClientTokenIsStableAndDistinguishesEveryInput) {
  std::string t = fleet_client_token("ci", "ci-1-1-a", UsageClass::kSpot, 1, 3);
  EXPECT_EQ(t, fleet_client_token("ci", "ci-1-1-a", UsageClass::kSpot, 1, 3));
  EXPECT_LE(t.size(), 64u);
  EXPECT_EQ(t.rfind("runpool-", 0), 0u);
  std::set<std::string> all = {t,
                               fleet_client_token("cj", "ci-1-1-a", UsageClass::kSpot, 1, 3),
                               fleet_client_token("ci", "ci-1-1-b", UsageClass::kSpot, 1, 3),
                               fleet_client_token("ci", "ci-1-1-a", UsageClass::kOnDemand, 1, 3),
                               fleet_client_token("ci", "ci-1-1-a", UsageClass::kSpot, 2, 3),
                               fleet_client_token("ci", "ci-1-1-a", UsageClass::kSpot, 1, 2),
                               // no ambiguity from concatenation
                               fleet_client_token("ci-1", "1-a", UsageClass::kSpot, 1, 3)};
  EXPECT_EQ(all.size(), 7u);
}

std::string tag(const std::vector<aws::Tag>& tags, const std::string& key) {
  for (const auto& t : tags) {
    if (t.key == key) return t.value;
  }
  return "<none>";
}

TEST(LaunchPlan, SpotFleetRequest) {
  Settings s = settings();
  s.subnets = {"subnet-a1", "subnet-b2"};
  auto r = fleet_request(s, "small", {"c7i.large", "m7i.large"}, UsageClass::kSpot, 3, "L", "tok");
  ASSERT_EQ(r.launch_template_configs.size(), 1u);
  const auto& c = r.launch_template_configs[0];
  EXPECT_EQ(c.launch_template.name, "runpool-ci");
  EXPECT_EQ(c.launch_template.version, "$Default");
  ASSERT_EQ(c.overrides.size(), 4u);
  EXPECT_EQ(c.overrides[0].instance_type, "c7i.large");
  EXPECT_EQ(c.overrides[0].subnet_id, "subnet-a1");
  EXPECT_EQ(c.overrides[1].instance_type, "c7i.large");
  EXPECT_EQ(c.overrides[1].subnet_id, "subnet-b2");
  EXPECT_EQ(c.overrides[3].instance_type, "m7i.large");
  EXPECT_EQ(r.total_target_capacity, 3);
  EXPECT_EQ(r.spot_target_capacity, 3);
  EXPECT_FALSE(r.on_demand_target_capacity);
  EXPECT_EQ(r.default_target_capacity_type, "spot");
  EXPECT_EQ(r.spot_allocation_strategy, "price-capacity-optimized");
  EXPECT_EQ(r.client_token, "tok");
  ASSERT_EQ(r.tag_specifications.size(), 2u);
  EXPECT_EQ(r.tag_specifications[0].resource_type, "instance");
  const auto& it = r.tag_specifications[0].tags;
  EXPECT_EQ(tag(it, kTagPool), "ci");
  EXPECT_EQ(tag(it, kTagTable), "runpool");
  EXPECT_EQ(tag(it, kTagLabel), "L");
  EXPECT_EQ(tag(it, kTagResourceClass), "small");
  EXPECT_EQ(r.tag_specifications[1].resource_type, "fleet");
}

TEST(LaunchPlan, OnDemandFleetRequestWithoutSubnets) {
  auto r = fleet_request(settings(), "large", {"m7i.2xlarge"}, UsageClass::kOnDemand, 2, "L", "tok");
  ASSERT_EQ(r.launch_template_configs[0].overrides.size(), 1u);
  EXPECT_EQ(r.launch_template_configs[0].overrides[0].subnet_id, "");
  EXPECT_EQ(r.default_target_capacity_type, "on-demand");
  EXPECT_EQ(r.on_demand_target_capacity, 2);
  EXPECT_FALSE(r.spot_target_capacity);
}

TEST(LaunchPlan, AClassWithItsOwnImageNamesItInEveryOverride) {
  Settings s = settings();
  s.subnets = {"subnet-a1", "subnet-b2"};
  s.resource_class_images = {{"large", "ami-0arm0000000000001"}};
  auto large = fleet_request(s, "large", {"m7i.2xlarge"}, UsageClass::kOnDemand, 1, "L", "tok");
  ASSERT_EQ(large.launch_template_configs[0].overrides.size(), 2u);
  for (const auto& o : large.launch_template_configs[0].overrides) EXPECT_EQ(o.image_id, "ami-0arm0000000000001");
  auto small = fleet_request(s, "small", {"c7i.large"}, UsageClass::kOnDemand, 1, "L", "tok");
  for (const auto& o : small.launch_template_configs[0].overrides) EXPECT_EQ(o.image_id, "") << "the template's AMI";
}

TEST(LaunchPlan, CapacityErrors) {
  for (const char* c : {"InsufficientInstanceCapacity", "UnfulfillableCapacity", "MaxSpotInstanceCountExceeded",
                        "SpotMaxPriceTooLow", "InsufficientCapacity"}) {
    EXPECT_TRUE(is_capacity_error(c)) << c;
  }
  for (const char* c : {"", "InternalError", "UnauthorizedOperation", "InvalidParameterValue", "RequestLimitExceeded"}) {
    EXPECT_FALSE(is_capacity_error(c)) << c;
  }
}

TEST(LaunchPlan, FleetInstancesTakeTheirUsageFromTheAnswer) {
  aws::CreateFleetResult r;
  r.instances = {{{"i-1", "i-2"}, "c7i.large", "spot", ""}, {{"i-3"}, "m7i.large", "on-demand", ""},
                 {{"i-4"}, "m7i.large", "", ""}};
  auto got = fleet_instances(r, UsageClass::kSpot);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].instance_id, "i-1");
  EXPECT_EQ(got[0].usage, UsageClass::kSpot);
  EXPECT_EQ(got[2].instance_type, "m7i.large");
  EXPECT_EQ(got[2].usage, UsageClass::kOnDemand);
  EXPECT_EQ(got[3].usage, UsageClass::kSpot);  // not reported: as requested
  EXPECT_TRUE(fleet_instances({}, UsageClass::kSpot).empty());
}

TEST(LaunchPlan, RetrySameUsageOnlyAfterPartialProgress) {
  EXPECT_TRUE(retry_same_usage(1, 2));
  EXPECT_FALSE(retry_same_usage(0, 2));
  EXPECT_FALSE(retry_same_usage(3, 0));
}

}  // namespace
}  // namespace runpool::controller
