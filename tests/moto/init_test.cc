// runpoolctl init's AWS calls on both backends: CreateTable/DescribeTable (and UpdateTable for a
// table without the label index), CreateQueue per resource class, and the launch template —
// created, left alone when unchanged, given a new default version when the rendering changed.
#include "controller/init.h"

#include <gtest/gtest.h>

#include "common/pool/dynamo_state_table.h"
#include "common/pool/record_codec.h"
#include "tests/moto/backends.h"

namespace runpool::testing {
namespace {

class InitTest : public BackendTest {
 protected:
  InitTest() : s_(pool_settings(backend_, unique_name("mi"))) {}

  controller::InitReport init() {
    return controller::init_pool(s_, aws_.db(), aws_.sqs(), aws_.ec2(), std::chrono::seconds(30));
  }

  controller::Settings s_;
};

TEST_P(InitTest, CreatesEverythingThenChangesNothingThenUpdatesTheTemplate) {
  controller::InitReport first = init();
  EXPECT_TRUE(first.table_created);
  EXPECT_FALSE(first.index_added);
  ASSERT_EQ(first.queues.size(), 2u);
  for (const auto& [name, url] : first.queues) {
    EXPECT_EQ(aws_.sqs().get_queue_url(name), url);
    EXPECT_EQ(aws_.sqs().get_queue_attributes(url, {"MessageRetentionPeriod"}).message_retention_period, 1209600);
  }
  EXPECT_EQ(first.template_action, "created");
  EXPECT_EQ(first.template_version, 1);
  EXPECT_EQ(first.template_id.rfind("lt-", 0), 0u);

  auto table = aws_.db().describe_table(s_.table);
  ASSERT_TRUE(table);
  EXPECT_TRUE(table->all_active());
  EXPECT_TRUE(table->index(pool::kLabelIndex));

  auto versions = aws_.ec2().describe_launch_template_versions({"", s_.launch_template, ""}, {"$Default"});
  ASSERT_EQ(versions.size(), 1u);
  const aws::LaunchTemplateData& d = versions[0].data;
  EXPECT_EQ(d.image_id, s_.image_id);
  EXPECT_TRUE(d.require_imdsv2);
  EXPECT_TRUE(d.instance_metadata_tags);
  EXPECT_EQ(d.instance_initiated_shutdown_behavior, "terminate");
  EXPECT_EQ(d.iam_instance_profile_name, "runpool-agent");
  EXPECT_NE(d.user_data.find("pool = " + s_.pool + "\n"), std::string::npos) << d.user_data;
  // moto copies the template's own tags into its versions' data (tests/moto/README.md).
  ASSERT_EQ(d.tag_specifications.size(), on_moto() ? 2u : 1u);
  EXPECT_EQ(d.tag_specifications[0].resource_type, "instance");
  auto t = aws_.ec2().describe_launch_template({"", s_.launch_template, ""});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->id, first.template_id);
  EXPECT_EQ(t->tags.size(), 2u) << "the pool and table tags on the template itself";

  controller::InitReport second = init();
  EXPECT_FALSE(second.table_created);
  EXPECT_EQ(second.queues, first.queues);
  EXPECT_EQ(second.template_action, "unchanged");
  EXPECT_EQ(second.template_version, 1);

  s_.image_id = "ami-0fedcba9876543210";
  controller::InitReport third = init();
  EXPECT_EQ(third.template_action, "updated");
  EXPECT_EQ(third.template_version, 2);
  EXPECT_EQ(third.template_id, first.template_id);
  versions = aws_.ec2().describe_launch_template_versions({"", s_.launch_template, ""}, {"$Default"});
  ASSERT_EQ(versions.size(), 1u);
  EXPECT_EQ(versions[0].version_number, 2);
  EXPECT_EQ(versions[0].data.image_id, s_.image_id);
  EXPECT_EQ(init().template_action, "unchanged");
}

// A table made before the label index existed gets it from init (UpdateTable), waited for until
// ACTIVE. dynalite cannot add an index to an existing table; moto can.
TEST_P(InitTest, AddsTheLabelIndexToATableWithout) {
  if (!on_moto()) GTEST_SKIP() << "dynalite does not add a global secondary index to an existing table";
  aws::CreateTableRequest bare = pool::DynamoStateTable::create_table_request(s_.table);
  bare.indexes.clear();
  bare.attributes = {{pool::attr::kInstanceId, aws::ScalarType::kString}};
  ASSERT_TRUE(aws_.db().create_table(bare));
  controller::InitReport r = init();
  EXPECT_FALSE(r.table_created);
  EXPECT_TRUE(r.index_added);
  auto table = aws_.db().describe_table(s_.table);
  ASSERT_TRUE(table && table->index(pool::kLabelIndex));
  EXPECT_TRUE(table->all_active());
  EXPECT_FALSE(init().index_added);
}

INSTANTIATE_TEST_SUITE_P(Backends, InitTest, ::testing::ValuesIn(backend_names()), backend_test_name);

}  // namespace
}  // namespace runpool::testing
