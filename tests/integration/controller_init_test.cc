// runpoolctl init against the local cloud: idempotent, safe concurrently, adds a missing label
// index, and keeps the launch template's default version in step with the rendered user data.
#include <gtest/gtest.h>

#include "common/aws/ec2_query.h"
#include "common/json.h"
#include "common/pool/dynamo_state_table.h"
#include "common/pool/record_codec.h"
#include "common/pool/record_key.h"
#include "tests/support/runpoolctl_harness.h"

namespace runpool::controller {
namespace {

using testing::CtlPool;
using testing::describe;

class ControllerInit : public ::testing::Test {
 protected:
  runpool::testing::LocalCloud& cloud_ = runpool::testing::LocalCloud::shared();
  testing::CloudClients aws_{cloud_};
};

TEST_F(ControllerInit, CreatesTableQueuesAndTemplateThenChangesNothing) {
  CtlPool p(cloud_, "init1", "ctl-init-1");
  auto first = p.run({"--json", "init"});
  ASSERT_EQ(first.exit_code, 0) << describe(first);
  Json::Value j = parse_json(first.out, "init");
  EXPECT_TRUE(j["table_created"].asBool());
  EXPECT_EQ(j["launch_template"].asString(), "created");
  EXPECT_TRUE(j["queues"].isMember("init1-small"));
  EXPECT_TRUE(j["queues"].isMember("init1-large"));

  auto t = aws_.db.describe_table("ctl-init-1");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->index(pool::kLabelIndex));
  EXPECT_NO_THROW(aws_.sqs.get_queue_url("init1-small"));

  auto versions = aws_.ec2.describe_launch_template_versions({"", "runpool-init1", ""}, {"$Default"});
  ASSERT_EQ(versions.size(), 1u);
  const auto& d = versions[0].data;
  EXPECT_EQ(d.image_id, "ami-12345678");
  EXPECT_TRUE(d.require_imdsv2);
  EXPECT_TRUE(d.instance_metadata_tags);
  EXPECT_EQ(d.instance_initiated_shutdown_behavior, "terminate");
  EXPECT_EQ(d.iam_instance_profile_name, "runpool-agent");
  EXPECT_NE(d.user_data.find("table = ctl-init-1\n"), std::string::npos) << d.user_data;
  EXPECT_NE(d.user_data.find("pool = init1\n"), std::string::npos);
  EXPECT_NE(d.user_data.find("endpoint_dynamodb = " + cloud_.dynamodb()), std::string::npos);
  EXPECT_NE(d.user_data.find(": '/usr/bin/runpool-agent'"), std::string::npos) << "the agent binary filled in";
  EXPECT_EQ(d.user_data.find("ghp_"), std::string::npos);  // no GitHub credential in user data
  // The agent spells its record's key from the instance role's id, as IAM binds it.
  EXPECT_NE(d.user_data.find("instance_role_id = " + cloud_.instance_role_id() + "\n"), std::string::npos);

  auto second = p.run({"--json", "init"});
  ASSERT_EQ(second.exit_code, 0) << describe(second);
  Json::Value j2 = parse_json(second.out, "init");
  EXPECT_FALSE(j2["table_created"].asBool());
  EXPECT_EQ(j2["launch_template"].asString(), "unchanged");
  EXPECT_EQ(j2["launch_template_version"].asInt(), j["launch_template_version"].asInt());
}

// A table written before records were keyed "<instance role id>:<instance id>": init moves this
// pool's records to their role-bound keys (another pool's are left alone), once.
TEST_F(ControllerInit, MovesRecordsOfBareInstanceIdsToRoleBoundKeys) {
  CtlPool p(cloud_, "init7", "ctl-init-7");
  ASSERT_EQ(p.run({"init"}).exit_code, 0);
  auto bare = [&](const std::string& id, const std::string& pool_name, int64_t generation) {
    pool::InstanceRecord r;
    r.instance_id = id;
    r.pool = pool_name;
    r.state = pool::State::kIdle;
    r.generation = generation;
    r.resource_class = "small";
    r.deadline_ms = 1'900'000'000'000;
    r.heartbeat_ms = 1'800'000'000'000;
    ASSERT_TRUE(aws_.db.put_item({.table = "ctl-init-7", .item = pool::encode_record(r)}).applied);
  };
  bare("i-0a000000000000001", "init7", 3);
  bare("i-0a000000000000002", "init7", 1);
  bare("i-0a000000000000003", "other-pool", 2);

  auto run = p.run({"--json", "init"});
  ASSERT_EQ(run.exit_code, 0) << describe(run);
  EXPECT_EQ(parse_json(run.out, "init")["records_rekeyed"].asInt(), 2);

  pool::DynamoStateTable table(aws_.db, "ctl-init-7", cloud_.instance_role_id());
  auto moved = table.get("i-0a000000000000001");
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->generation, 3);
  EXPECT_EQ(moved->state, pool::State::kIdle);
  EXPECT_EQ(moved->heartbeat_ms, 1'800'000'000'000);
  EXPECT_TRUE(table.get("i-0a000000000000002"));
  EXPECT_FALSE(table.get("i-0a000000000000003")) << "another pool's record is not this init's to move";
  auto raw = [&](const std::string& key) {
    return aws_.db.get_item({.table = "ctl-init-7", .key = {{pool::attr::kInstanceId, aws::AttributeValue::string(key)}},
                             .consistent_read = true});
  };
  EXPECT_FALSE(raw("i-0a000000000000001")) << "the bare-keyed item is gone";
  EXPECT_TRUE(raw("i-0a000000000000003"));

  auto again = p.run({"--json", "init"});
  ASSERT_EQ(again.exit_code, 0) << describe(again);
  EXPECT_EQ(parse_json(again.out, "init")["records_rekeyed"].asInt(), 0);
}

TEST_F(ControllerInit, RefusesToRunWithoutTheInstanceRoleId) {
  CtlPool p(cloud_, "init8", "ctl-init-8", "instance_role_id =\n");  // the last line of a key wins
  auto run = p.run({"init"});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("instance_role_id is not set"), std::string::npos) << describe(run);
}

TEST_F(ControllerInit, ConcurrentInitsAllSucceed) {
  CtlPool p(cloud_, "init2", "ctl-init-2");
  std::vector<std::unique_ptr<testing::CtlProcess>> runs;
  for (int i = 0; i < 3; ++i) runs.push_back(p.start({"init"}));
  for (auto& r : runs) {
    auto res = r->wait();
    EXPECT_EQ(res.exit_code, 0) << describe(res);
  }
  auto t = aws_.db.describe_table("ctl-init-2");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->index(pool::kLabelIndex));
  auto again = p.run({"--json", "init"});
  ASSERT_EQ(again.exit_code, 0) << describe(again);
  EXPECT_EQ(parse_json(again.out, "init")["launch_template"].asString(), "unchanged");
}

TEST_F(ControllerInit, ChangedUserDataMakesANewDefaultVersion) {
  CtlPool p(cloud_, "init4", "ctl-init-4");
  auto a = p.run({"--json", "init"});
  ASSERT_EQ(a.exit_code, 0) << describe(a);
  auto b = p.run({"--json", "--set", "agent_drain_capable=true", "init"});
  ASSERT_EQ(b.exit_code, 0) << describe(b);
  Json::Value jb = parse_json(b.out, "init");
  EXPECT_EQ(jb["launch_template"].asString(), "updated");
  EXPECT_GT(jb["launch_template_version"].asInt(), parse_json(a.out, "init")["launch_template_version"].asInt());
  auto v = aws_.ec2.describe_launch_template_versions({"", "runpool-init4", ""}, {"$Default"});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].data.user_data.find("drain_capable = true"), std::string::npos);
}

TEST_F(ControllerInit, ABadTemplateIsAConfigurationError) {
  CtlPool p(cloud_, "init5", "ctl-init-5", "user_data_template = /nonexistent/user-data.sh.in\n");
  auto res = p.run({"init"});
  EXPECT_EQ(res.exit_code, 2) << describe(res);
  EXPECT_NE(res.err.find("user_data_template"), std::string::npos) << res.err;
  EXPECT_FALSE(aws_.db.describe_table("ctl-init-5"));  // nothing created
}

// An operator's own template — a key pair, two block devices, network interface and volume tags,
// IPv6 metadata — made before init: init's version keeps all of it and sets only runpool's fields.
TEST_F(ControllerInit, KeepsWhatTheOperatorPutInTheLaunchTemplate) {
  CtlPool p(cloud_, "init9", "ctl-init-9", "instance_tags = Name=ci-runner CostCenter=42\nroot_volume_size = 64\n");
  aws::Ec2Form form("CreateLaunchTemplate");
  form.add("LaunchTemplateName", "runpool-init9");
  const std::string d = "LaunchTemplateData";
  form.add(d + ".KeyName", "ops-key");
  form.add(d + ".BlockDeviceMapping.1.DeviceName", "/dev/xvda");
  form.add(d + ".BlockDeviceMapping.1.Ebs.VolumeSize", "20");
  form.add(d + ".BlockDeviceMapping.1.Ebs.VolumeType", "gp3");
  form.add(d + ".BlockDeviceMapping.2.DeviceName", "/dev/sdf");
  form.add(d + ".BlockDeviceMapping.2.Ebs.VolumeSize", "200");
  form.add(d + ".TagSpecification.1.ResourceType", "instance");
  form.add(d + ".TagSpecification.1.Tag.1.Key", "Team");
  form.add(d + ".TagSpecification.1.Tag.1.Value", "platform");
  form.add(d + ".TagSpecification.1.Tag.2.Key", "Name");
  form.add(d + ".TagSpecification.1.Tag.2.Value", "hand-made");
  form.add(d + ".TagSpecification.2.ResourceType", "network-interface");
  form.add(d + ".TagSpecification.2.Tag.1.Key", "Team");
  form.add(d + ".TagSpecification.2.Tag.1.Value", "platform");
  form.add(d + ".MetadataOptions.HttpProtocolIpv6", "enabled");
  form.add(d + ".MetadataOptions.HttpTokens", "optional");
  aws::ec2_call(aws_.ec2_caller, form);

  auto run = p.run({"--json", "init"});
  ASSERT_EQ(run.exit_code, 0) << describe(run);
  EXPECT_EQ(parse_json(run.out, "init")["launch_template"].asString(), "updated");

  // The default version as EC2 answers it, raw: fields runpool's client does not model included.
  aws::Ec2Form look("DescribeLaunchTemplateVersions");
  look.add("LaunchTemplateName", "runpool-init9");
  look.add("LaunchTemplateVersion.1", "$Default");
  aws::Ec2Response answer = aws::ec2_call(aws_.ec2_caller, look);
  pugi::xml_node data = answer.root.child("launchTemplateVersionSet").child("item").child("launchTemplateData");
  EXPECT_STREQ(data.child_value("keyName"), "ops-key");
  EXPECT_STREQ(data.child("metadataOptions").child_value("httpProtocolIpv6"), "enabled");
  EXPECT_STREQ(data.child("metadataOptions").child_value("httpTokens"), "required");
  EXPECT_STREQ(data.child("metadataOptions").child_value("httpPutResponseHopLimit"), "1");

  auto v = aws_.ec2.describe_launch_template_versions({"", "runpool-init9", ""}, {"$Default"});
  ASSERT_EQ(v.size(), 1u);
  std::map<std::string, std::map<std::string, std::string>> tags;
  for (const auto& spec : v[0].data.tag_specifications) {
    for (const auto& t : spec.tags) tags[spec.resource_type][t.key] = t.value;
  }
  EXPECT_EQ(tags["instance"]["Team"], "platform");
  EXPECT_EQ(tags["instance"]["Name"], "ci-runner") << "the configured Name wins";
  EXPECT_EQ(tags["instance"]["runpool:pool"], "init9");
  EXPECT_EQ(tags["network-interface"]["Team"], "platform");
  EXPECT_EQ(tags["volume"]["CostCenter"], "42");
  ASSERT_EQ(v[0].data.block_devices.size(), 2u);
  EXPECT_EQ(v[0].data.block_devices[0], (aws::BlockDevice{"/dev/xvda", 64, "gp3", true}));
  EXPECT_EQ(v[0].data.block_devices[1].device_name, "/dev/sdf");
  EXPECT_EQ(v[0].data.block_devices[1].volume_size_gib, 200);
  EXPECT_NE(v[0].data.user_data.find("pool = init9"), std::string::npos);

  auto again = p.run({"--json", "init"});
  ASSERT_EQ(again.exit_code, 0) << describe(again);
  EXPECT_EQ(parse_json(again.out, "init")["launch_template"].asString(), "unchanged");
}

// Provision launches nothing from a template that init never made, or one that no longer matches
// the configuration: it fails at once, saying why, instead of waiting out a registration timeout.
TEST_F(ControllerInit, ProvisionFailsFastWithoutAMatchingTemplate) {
  CtlPool p(cloud_, "init10", "ctl-init-10");
  ASSERT_EQ(p.run({"init"}).exit_code, 0);
  auto none = p.run({"--set", "launch_template=runpool-never-made", "provision", "--timeout", "60s"});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("launch template runpool-never-made does not exist"), std::string::npos) << describe(none);

  auto drifted = p.run({"--set", "agent_drain_capable=true", "provision", "--timeout", "60s"});
  EXPECT_NE(drifted.exit_code, 0);
  EXPECT_NE(drifted.err.find("does not match this configuration"), std::string::npos) << describe(drifted);
  EXPECT_NE(drifted.err.find("user data"), std::string::npos) << describe(drifted);
  auto ec2 = cloud_.control("GET", "/_control/ec2/instances");
  for (const auto& i : ec2["instances"]) EXPECT_NE(i["tags"]["runpool:pool"].asString(), "init10");
}

}  // namespace
}  // namespace runpool::controller
