#include "common/pool/runner_name.h"

#include <gtest/gtest.h>

#include <vector>

namespace runpool::pool {
namespace {

constexpr const char* kId = "i-0123456789abcdef0";

TEST(RunnerName, RoundTrips) {
  std::string name = runner_name("ci", kId, 7);
  EXPECT_EQ(name, "ci-i-0123456789abcdef0-g7");
  auto parts = parse_runner_name("ci", name);
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->instance_id, kId);
  EXPECT_EQ(parts->generation, 7);
}

TEST(RunnerName, ShortInstanceIdsAndDashedPools) {
  auto parts = parse_runner_name("my-pool", "my-pool-i-0123abcd-g12");
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->instance_id, "i-0123abcd");
  EXPECT_EQ(parts->generation, 12);
  // A pool whose name looks like another pool's runner prefix is not confused with it.
  EXPECT_FALSE(parse_runner_name("my", "my-pool-i-0123abcd-g12"));
  EXPECT_FALSE(parse_runner_name("my-pool-i-0123abcd", "my-pool-i-0123abcd-g12"));
  auto nested = parse_runner_name("a-i-0123abcd", "a-i-0123abcd-i-89abcdef-g1");
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->instance_id, "i-89abcdef");
  EXPECT_FALSE(parse_runner_name("a", "a-i-0123abcd-i-89abcdef-g1"));
}

// The agent's side (agent_loop.cc): its own name for an assignment, and, from a configured
// runner's name, the generation it was chosen for — or not its own (another pool or instance).
TEST(RunnerName, AnInstancesNamesAndTheirGenerations) {
  const std::string id = "i-0123abcd";
  EXPECT_EQ(runner_name("pool", id, 12), "pool-i-0123abcd-g12");
  EXPECT_EQ(parse_runner_name("pool", "pool-i-0123abcd-g12")->generation, 12);
  EXPECT_EQ(parse_runner_name("pool", "pool-i-0123abcd-g1")->generation, 1);
  auto other_instance = parse_runner_name("pool", "pool-i-0123abce-g3");
  ASSERT_TRUE(other_instance);
  EXPECT_NE(other_instance->instance_id, id);
  for (const std::string other : {"pool-i-0123abcd-g", "pool-i-0123abcd-g0", "pool-i-0123abcd-g012",
                                  "pool-i-0123abcd-gx", "other-i-0123abcd-g3", "pool-i-0123abcd-g3x",
                                  "pool-i-0123abcd-3", "", "pool-i-0123abcd-g9999999999999999999"}) {
    EXPECT_FALSE(parse_runner_name("pool", other)) << other;
  }
}

TEST(RunnerName, LargestGenerationFits) {
  auto parts = parse_runner_name("p", std::string("p-") + kId + "-g9223372036854775807");
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->generation, INT64_MAX);
}

TEST(RunnerName, HostileAndForeignNamesAreNotOurs) {
  const std::string id = kId;
  const std::vector<std::string> names = {
           std::string(""), std::string("ci"), std::string("ci-"), "ci-" + id, "ci-" + id + "-g", "ci-" + id + "-g0",
           "ci-" + id + "-g01", "ci-" + id + "-g-1", "ci-" + id + "-g+1", "ci-" + id + "-g1x", "ci-" + id + "-g1 ",
           " ci-" + id + "-g1", "CI-" + id + "-g1", "ci-I-0123456789abcdef0-g1", "ci-i-0123456789ABCDEF0-g1",
           "ci-i-0123456789abcdefg-g1", "ci-i-0123456789abcdef-g1", "ci-i-0123456789abcdef01-g1",
           "ci-i-0123abc-g1", "ci-" + id + "-G1", "ci-" + id + "g1", "ci-" + id + "--g1", "ci-" + id + "-g1-g2",
           "ci-" + id + "-g9223372036854775808", "ci-" + id + "-g99999999999999999999", "ci-" + id + "-g1\n",
           "ci-" + id + std::string("-g1\0", 4), "cix" + id + "-g1", "ci-x-" + id + "-g1", "other-" + id + "-g1",
           "ci-i-" + std::string(17, '0') + "-g1" + std::string(1000, '1')};
  for (const std::string& name : names) {
    EXPECT_FALSE(parse_runner_name("ci", name)) << "'" << name << "'";
  }
  EXPECT_FALSE(parse_runner_name("", "-" + id + "-g1")) << "an empty pool name matches nothing";
}

TEST(InstanceId, Forms) {
  EXPECT_TRUE(is_instance_id("i-0123abcd"));
  EXPECT_TRUE(is_instance_id(kId));
  EXPECT_FALSE(is_instance_id("i-0123abc"));
  EXPECT_FALSE(is_instance_id("i-0123ABCD"));
  EXPECT_FALSE(is_instance_id("x-0123abcd"));
  EXPECT_FALSE(is_instance_id(""));
}

}  // namespace
}  // namespace runpool::pool
