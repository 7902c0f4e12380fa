#include "controller/launch_template.h"

#include <gtest/gtest.h>

#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

Settings template_settings() {
  Settings s = testing::test_settings();
  s.image_id = "ami-12345678";
  s.instance_profile = "arn:aws:iam::1:instance-profile/runpool";
  s.security_groups = {"sg-0123abcd"};
  s.user_data_template = std::string(RUNPOOL_SOURCE_DIR) + "/controller/testdata/user-data.sh.in";
  s.agent_config = {{"table", "runpool"}, {"pool", "ci"}};
  s.agent_binary = "/usr/bin/runpool-agent";
  s.root_volume_device = "/dev/xvda";
  return s;
}

std::vector<aws::Tag> tags_of(const aws::LaunchTemplateData& d, const std::string& type) {
  for (const auto& spec : d.tag_specifications) {
    if (spec.resource_type == type) return spec.tags;
  }
  return {};
}

TEST(LaunchTemplate, DataAndFingerprint) {
  Settings s = template_settings();
  aws::LaunchTemplateData d = launch_template_data(s);
  EXPECT_EQ(d.iam_instance_profile_arn, s.instance_profile);
  EXPECT_TRUE(d.iam_instance_profile_name.empty());
  EXPECT_TRUE(d.require_imdsv2);
  EXPECT_TRUE(d.instance_metadata_tags);
  EXPECT_EQ(d.metadata_hop_limit, 1) << "a job's containers must not reach IMDS";
  EXPECT_EQ(d.instance_initiated_shutdown_behavior, "terminate");
  EXPECT_TRUE(d.block_devices.empty()) << "the AMI's root volume unless configured";
  EXPECT_EQ(d.tag_specifications.size(), 1u) << "no volume tags unless configured";
  EXPECT_NE(d.user_data.find("      table = runpool\n      pool = ci\n"), std::string::npos) << d.user_data;
  std::string fp = launch_template_fingerprint(d);
  EXPECT_EQ(fp.size(), 32u);
  EXPECT_EQ(fp, launch_template_fingerprint(launch_template_data(s)));
  s.agent_config.push_back({"drain_capable", "true"});
  EXPECT_NE(fp, launch_template_fingerprint(launch_template_data(s)));
  s.user_data_template = "/nonexistent";
  EXPECT_THROW(launch_template_data(s), std::runtime_error);
}

TEST(LaunchTemplate, ExtraTagsGoOnInstancesAndVolumesAndTheRootVolumeIsSized) {
  Settings s = template_settings();
  s.instance_tags = {{"Name", "ci-runner"}, {"CostCenter", "42"}};
  s.root_volume_size = 100;
  s.root_volume_type = "gp3";
  aws::LaunchTemplateData d = launch_template_data(s);
  auto instance = tags_of(d, "instance");
  ASSERT_EQ(instance.size(), 4u) << "the operator's Name, not the default one besides";
  EXPECT_EQ(instance[0].key, kTagPool);
  EXPECT_EQ(instance[2].key, "Name");
  EXPECT_EQ(instance[2].value, "ci-runner");
  auto volume = tags_of(d, "volume");
  ASSERT_EQ(volume.size(), 2u);
  EXPECT_EQ(volume[1].key, "CostCenter");
  ASSERT_EQ(d.block_devices.size(), 1u);
  EXPECT_EQ(d.block_devices[0], (aws::BlockDevice{"/dev/xvda", 100, "gp3", true}));
  EXPECT_NE(launch_template_fingerprint(d), launch_template_fingerprint(launch_template_data(template_settings())));
}

// What the operator put in the template (another tag, another block device, IPv6 metadata) stays;
// runpool's fields win where both set them.
TEST(LaunchTemplate, AVersionFromTheCurrentOneKeepsTheOperatorsFields) {
  Settings s = template_settings();
  s.instance_tags = {{"Name", "ci-runner"}};
  s.root_volume_size = 64;
  aws::LaunchTemplateData owned = launch_template_data(s);
  aws::LaunchTemplateData current;
  current.tag_specifications = {{"instance", {{"Team", "platform"}, {"Name", "old-name"}, {kTagPool, "other"}}},
                                {"network-interface", {{"Team", "platform"}}}};
  current.block_devices = {{"/dev/xvda", 8, "gp2", true}, {"/dev/sdf", 200, "st1", false}};
  current.metadata_http_protocol_ipv6 = "enabled";
  current.metadata_http_endpoint = "enabled";
  current.require_imdsv2 = false;
  current.metadata_hop_limit = 2;

  aws::LaunchTemplateData d = merge_into_current(owned, current);
  auto instance = tags_of(d, "instance");
  std::map<std::string, std::string> got;
  for (const auto& t : instance) got[t.key] = t.value;
  EXPECT_EQ(got.at("Team"), "platform");
  EXPECT_EQ(got.at("Name"), "ci-runner");
  EXPECT_EQ(got.at(kTagPool), "ci");
  EXPECT_EQ(got.at(kTagTable), "runpool");
  EXPECT_EQ(tags_of(d, "network-interface").size(), 1u);
  EXPECT_EQ(tags_of(d, "volume").size(), 1u);
  ASSERT_EQ(d.block_devices.size(), 2u);
  EXPECT_EQ(d.block_devices[0], (aws::BlockDevice{"/dev/xvda", 64, "gp2", true})) << "size set, the type kept";
  EXPECT_EQ(d.block_devices[1], (aws::BlockDevice{"/dev/sdf", 200, "st1", false}));
  EXPECT_EQ(d.metadata_http_protocol_ipv6, "enabled");
  EXPECT_EQ(d.metadata_http_endpoint, "enabled");
  EXPECT_TRUE(d.require_imdsv2);
  EXPECT_EQ(d.metadata_hop_limit, 1);
  EXPECT_TRUE(launch_template_drift(owned, d).empty());

  // Nothing configured for block devices: the field is not given, so the source's is inherited.
  aws::LaunchTemplateData plain = merge_into_current(launch_template_data(template_settings()), current);
  EXPECT_TRUE(plain.block_devices.empty());
}

TEST(LaunchTemplate, DriftNamesEachFieldThatDiffers) {
  Settings s = template_settings();
  s.root_volume_size = 64;
  aws::LaunchTemplateData owned = launch_template_data(s);
  EXPECT_TRUE(launch_template_drift(owned, owned).empty());

  aws::LaunchTemplateData other = owned;
  other.user_data += "\n# edited";
  other.image_id = "ami-99999999";
  other.iam_instance_profile_arn = "arn:aws:iam::1:instance-profile/admin";
  other.require_imdsv2 = false;
  other.metadata_hop_limit = 2;
  other.instance_initiated_shutdown_behavior = "stop";
  other.tag_specifications = {};
  other.block_devices = {};
  auto drift = launch_template_drift(owned, other);
  std::string all;
  for (const auto& d : drift) all += d + "\n";
  for (const char* what : {"user data", "instance profile", "AMI is ami-99999999", "IMDSv2", "hop limit is 2",
                           "OS shutdown", "instance tag runpool:pool", "root volume /dev/xvda"}) {
    EXPECT_NE(all.find(what), std::string::npos) << what << " missing from:\n" << all;
  }
  // The operator's own tags and devices are no drift.
  aws::LaunchTemplateData extra = owned;
  extra.tag_specifications[0].tags.push_back({"Team", "platform"});
  extra.block_devices.push_back({"/dev/sdf", 10, "gp3", true});
  extra.metadata_http_protocol_ipv6 = "enabled";
  EXPECT_TRUE(launch_template_drift(owned, extra).empty());
}

// Instances are named runpool-<pool> unless the operator names them; the default never replaces
// a name the template has, and a template without it (the stack's, or renamed) is no drift.
TEST(LaunchTemplate, InstancesAreNamedByDefaultAndTheOperatorsNameWins) {
  Settings s = template_settings();
  EXPECT_EQ(default_instance_name(s), "runpool-ci");
  auto name_of = [](const aws::LaunchTemplateData& d) {
    std::vector<std::string> names;
    for (const auto& t : tags_of(d, "instance")) {
      if (t.key == "Name") names.push_back(t.value);
    }
    return names;
  };
  aws::LaunchTemplateData owned = launch_template_data(s);
  EXPECT_EQ(name_of(owned), std::vector<std::string>{"runpool-ci"});
  EXPECT_TRUE(tags_of(owned, "volume").empty()) << "the default name is the instance's only";

  aws::LaunchTemplateData blank;
  EXPECT_EQ(name_of(merge_into_current(owned, blank)), std::vector<std::string>{"runpool-ci"});
  aws::LaunchTemplateData named;
  named.tag_specifications = {{"instance", {{"Name", "build-box"}}}};
  EXPECT_EQ(name_of(merge_into_current(owned, named)), std::vector<std::string>{"build-box"});

  aws::LaunchTemplateData unnamed = owned;
  std::erase_if(unnamed.tag_specifications[0].tags, [](const aws::Tag& t) { return t.key == "Name"; });
  EXPECT_TRUE(launch_template_drift(owned, unnamed).empty());
  EXPECT_TRUE(launch_template_drift(owned, merge_into_current(owned, named)).empty()) << "renamed in the template";

  // A name the configuration gives is the operator's: set over the template's, and required.
  s.instance_tags = {{"Name", "ci-runner"}};
  aws::LaunchTemplateData configured = launch_template_data(s);
  EXPECT_EQ(name_of(configured), std::vector<std::string>{"ci-runner"});
  EXPECT_EQ(name_of(merge_into_current(configured, named)), std::vector<std::string>{"ci-runner"});
  std::string drift;
  for (const auto& d : launch_template_drift(configured, merge_into_current(owned, named))) drift += d + "\n";
  EXPECT_EQ(drift, "its instance tag Name is not ci-runner\nits volume tag Name is not ci-runner\n");
}

}  // namespace
}  // namespace runpool::controller
