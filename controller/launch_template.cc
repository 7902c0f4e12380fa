#include "controller/launch_template.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <algorithm>
#include <map>

#include "controller/compute.h"
#include "controller/user_data.h"

namespace runpool::controller {
namespace {

// Tags of `current` and `owned`, per resource type, with owned values winning key by key; owned
// types first, in their order, then the operator's other types.
std::vector<aws::TagSpecification> merge_tags(const std::vector<aws::TagSpecification>& owned,
                                              const std::vector<aws::TagSpecification>& current) {
  std::vector<aws::TagSpecification> out;
  auto merged_type = [&](const std::string& type) -> aws::TagSpecification& {
    for (auto& spec : out) {
      if (spec.resource_type == type) return spec;
    }
    out.push_back({type, {}});
    return out.back();
  };
  auto put = [](aws::TagSpecification& spec, const aws::Tag& tag) {
    for (auto& t : spec.tags) {
      if (t.key == tag.key) {
        t.value = tag.value;
        return;
      }
    }
    spec.tags.push_back(tag);
  };
  for (const auto& spec : owned) merged_type(spec.resource_type);
  for (const auto& spec : current) {
    for (const auto& t : spec.tags) put(merged_type(spec.resource_type), t);
  }
  for (const auto& spec : owned) {
    for (const auto& t : spec.tags) put(merged_type(spec.resource_type), t);
  }
  return out;
}

const aws::BlockDevice* find_device(const std::vector<aws::BlockDevice>& devices, const std::string& name) {
  for (const auto& d : devices) {
    if (d.device_name == name) return &d;
  }
  return nullptr;
}

std::string tag_value(const std::vector<aws::TagSpecification>& specs, const std::string& type, const std::string& key) {
  for (const auto& spec : specs) {
    if (spec.resource_type != type) continue;
    for (const auto& t : spec.tags) {
      if (t.key == key) return t.value;
    }
  }
  return "\x01";  // absent: never a value
}

std::string default_name_of_pool(const std::string& pool) { return "runpool-" + pool; }
// The default Name of the pool whose tags `owned` carries.
std::string default_name(const std::vector<aws::TagSpecification>& owned) {
  return default_name_of_pool(tag_value(owned, "instance", kTagPool));
}

}  // namespace

std::string default_instance_name(const Settings& s) { return default_name_of_pool(s.pool); }

aws::LaunchTemplateData launch_template_data(const Settings& s) {
  aws::LaunchTemplateData d;
  d.image_id = s.image_id;
  d.user_data = render_user_data(read_template(s.user_data_template), agent_config_text(s.agent_config), s.agent_binary);
  if (s.instance_profile.rfind("arn:", 0) == 0) {
    d.iam_instance_profile_arn = s.instance_profile;
  } else {
    d.iam_instance_profile_name = s.instance_profile;
  }
  d.require_imdsv2 = true;
  d.instance_metadata_tags = true;  // the agent reads its pool tags from IMDS
  d.metadata_hop_limit = 1;         // a job's containers (one hop further) cannot reach IMDS
  d.instance_initiated_shutdown_behavior = "terminate";  // the agent's last resort is an OS shutdown
  d.security_group_ids = s.security_groups;
  aws::TagSpecification instance{"instance", {{kTagPool, s.pool}, {kTagTable, s.table}}};
  aws::TagSpecification volume{"volume", {}};
  bool named = false;
  for (const auto& [k, v] : s.instance_tags) {
    instance.tags.push_back({k, v});
    volume.tags.push_back({k, v});
    named |= k == "Name";
  }
  // The console's instance list shows Name: without one, a pool's instances are blank rows.
  if (!named) instance.tags.push_back({"Name", default_instance_name(s)});
  d.tag_specifications.push_back(std::move(instance));
  if (!volume.tags.empty()) d.tag_specifications.push_back(std::move(volume));
  if (s.root_volume_size > 0 || !s.root_volume_type.empty()) {
    d.block_devices.push_back({s.root_volume_device, s.root_volume_size, s.root_volume_type, true});
  }
  return d;
}

std::string launch_template_fingerprint(const aws::LaunchTemplateData& d) {
  std::string all = d.image_id + '\0' + d.instance_type + '\0' + d.user_data + '\0' + d.iam_instance_profile_name +
                    '\0' + d.iam_instance_profile_arn + '\0' + (d.require_imdsv2 ? "1" : "0") +
                    (d.instance_metadata_tags ? "1" : "0") + std::to_string(d.metadata_hop_limit) + '\0' +
                    d.instance_initiated_shutdown_behavior + '\0';
  for (const auto& sg : d.security_group_ids) all += sg + ',';
  all += '\0';
  for (const auto& ts : d.tag_specifications) {
    all += ts.resource_type + ':';
    for (const auto& t : ts.tags) all += t.key + '=' + t.value + ',';
    all += ';';
  }
  all += '\0';
  for (const auto& b : d.block_devices) {
    all += b.device_name + ':' + std::to_string(b.volume_size_gib) + ':' + b.volume_type + ';';
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(all.data()), all.size(), digest);
  std::string out;
  for (int i = 0; i < 16; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

aws::LaunchTemplateData merge_into_current(const aws::LaunchTemplateData& owned, const aws::LaunchTemplateData& current) {
  aws::LaunchTemplateData d = owned;
  // Metadata options are one field: keep the operator's endpoint and IPv6 choices.
  d.metadata_http_endpoint = current.metadata_http_endpoint;
  d.metadata_http_protocol_ipv6 = current.metadata_http_protocol_ipv6;
  // The default name does not replace one the operator gave the template.
  std::vector<aws::TagSpecification> mine = owned.tag_specifications;
  if (tag_value(current.tag_specifications, "instance", "Name") != "\x01") {
    const std::string given = default_name(mine);
    for (auto& spec : mine) {
      if (spec.resource_type != "instance") continue;
      std::erase_if(spec.tags, [&](const aws::Tag& t) { return t.key == "Name" && t.value == given; });
    }
  }
  d.tag_specifications = merge_tags(mine, current.tag_specifications);
  // Block devices are one field too: given only to size the root volume, then over the operator's.
  if (!owned.block_devices.empty()) {
    d.block_devices = current.block_devices;
    for (const auto& mine : owned.block_devices) {
      auto it = std::find_if(d.block_devices.begin(), d.block_devices.end(),
                             [&](const aws::BlockDevice& b) { return b.device_name == mine.device_name; });
      if (it == d.block_devices.end()) {
        d.block_devices.push_back(mine);
        continue;
      }
      if (mine.volume_size_gib > 0) it->volume_size_gib = mine.volume_size_gib;
      if (!mine.volume_type.empty()) it->volume_type = mine.volume_type;
    }
  }
  return d;
}

std::vector<std::string> launch_template_drift(const aws::LaunchTemplateData& owned, const aws::LaunchTemplateData& actual) {
  std::vector<std::string> out;
  if (actual.user_data != owned.user_data) out.push_back("its user data is not this configuration's agent set-up");
  if (actual.iam_instance_profile_name != owned.iam_instance_profile_name ||
      actual.iam_instance_profile_arn != owned.iam_instance_profile_arn) {
    out.push_back("its instance profile is not " + owned.iam_instance_profile_name + owned.iam_instance_profile_arn);
  }
  if (!owned.image_id.empty() && actual.image_id != owned.image_id) {
    out.push_back("its AMI is " + (actual.image_id.empty() ? std::string("not set") : actual.image_id) + ", not " +
                  owned.image_id);
  }
  if (!actual.require_imdsv2) out.push_back("it does not require IMDSv2 (MetadataOptions.HttpTokens)");
  if (!actual.instance_metadata_tags) out.push_back("it does not enable tags in instance metadata");
  if (actual.metadata_hop_limit != owned.metadata_hop_limit) {
    out.push_back("its IMDS hop limit is " + (actual.metadata_hop_limit ? std::to_string(actual.metadata_hop_limit) : "not set") +
                  ", not " + std::to_string(owned.metadata_hop_limit));
  }
  if (actual.instance_initiated_shutdown_behavior != owned.instance_initiated_shutdown_behavior) {
    out.push_back("an OS shutdown does not terminate its instances");
  }
  if (!owned.security_group_ids.empty() && actual.security_group_ids != owned.security_group_ids) {
    out.push_back("its security groups are not the configured ones");
  }
  // The default name is given, never required (launch_template.h).
  const std::string given = default_name(owned.tag_specifications);
  for (const auto& spec : owned.tag_specifications) {
    for (const auto& t : spec.tags) {
      if (spec.resource_type == "instance" && t.key == "Name" && t.value == given) continue;
      if (tag_value(actual.tag_specifications, spec.resource_type, t.key) != t.value) {
        out.push_back("its " + spec.resource_type + " tag " + t.key + " is not " + t.value);
      }
    }
  }
  for (const auto& mine : owned.block_devices) {
    const aws::BlockDevice* theirs = find_device(actual.block_devices, mine.device_name);
    if (!theirs || (mine.volume_size_gib > 0 && theirs->volume_size_gib != mine.volume_size_gib) ||
        (!mine.volume_type.empty() && theirs->volume_type != mine.volume_type)) {
      out.push_back("its root volume " + mine.device_name + " is not the configured size and type");
    }
  }
  return out;
}

}  // namespace runpool::controller
