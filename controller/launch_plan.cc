#include "controller/launch_plan.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cstdio>

#include "common/pool/claim.h"
#include "controller/compute.h"

namespace runpool::controller {

std::vector<pool::UsageClass> launch_usages(pool::UsageClass requested, bool on_demand_fallback) {
  if (requested == pool::UsageClass::kSpot && on_demand_fallback) {
    return {pool::UsageClass::kSpot, pool::UsageClass::kOnDemand};
  }
  return {requested};
}

std::optional<pool::UsageClass> claim_usage_filter(pool::UsageClass requested, bool on_demand_fallback) {
  if (requested == pool::UsageClass::kSpot && on_demand_fallback) return std::nullopt;
  return requested;
}

std::vector<std::string> launch_types(const ResourceClass& rc, const std::vector<std::string>& globs) {
  std::vector<std::string> out;
  for (const auto& t : rc.instance_types) {
    if (pool::instance_type_allowed(t, globs)) out.push_back(t);
  }
  return out;
}

std::string fleet_client_token(const std::string& pool, const std::string& label, pool::UsageClass usage, int round,
                               int count) {
  std::string what = pool + '\n' + label + '\n' + std::string(pool::usage_class_name(usage)) + '\n' +
                     std::to_string(round) + '\n' + std::to_string(count);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(what.data()), what.size(), digest);
  std::string out = "runpool-";
  char buf[3];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", digest[i]);
    out += buf;
  }
  return out;
}

aws::CreateFleetRequest fleet_request(const Settings& s, const std::string& resource_class,
                                      const std::vector<std::string>& types, pool::UsageClass usage, int count,
                                      const std::string& label, const std::string& client_token) {
  aws::CreateFleetRequest r;
  aws::FleetLaunchTemplateConfig config;
  config.launch_template.name = s.launch_template;
  config.launch_template.version = "$Default";
  // A class may run its own AMI (an arm64 or GPU image): each of its overrides names it.
  auto image = s.resource_class_images.find(resource_class);
  const std::string image_id = image == s.resource_class_images.end() ? "" : image->second;
  for (const auto& type : types) {
    if (s.subnets.empty()) {
      config.overrides.push_back(aws::FleetOverride{type, "", std::nullopt, image_id});
    } else {
      for (const auto& subnet : s.subnets) {
        config.overrides.push_back(aws::FleetOverride{type, subnet, std::nullopt, image_id});
      }
    }
  }
  r.launch_template_configs.push_back(std::move(config));
  r.total_target_capacity = count;
  if (usage == pool::UsageClass::kSpot) {
    r.default_target_capacity_type = aws::kLifecycleSpot;
    r.spot_target_capacity = count;
    r.spot_allocation_strategy = s.spot_allocation_strategy;
  } else {
    r.default_target_capacity_type = aws::kLifecycleOnDemand;
    r.on_demand_target_capacity = count;
    r.on_demand_allocation_strategy = "lowest-price";
  }
  std::vector<aws::Tag> tags = {{kTagPool, s.pool}, {kTagTable, s.table}, {kTagLabel, label}};
  std::vector<aws::Tag> instance_tags = tags;
  instance_tags.push_back({kTagResourceClass, resource_class});
  r.tag_specifications = {{"instance", instance_tags}, {"fleet", tags}};
  r.client_token = client_token;
  return r;
}

bool is_capacity_error(const std::string& code) {
  static const char* const kCodes[] = {"InsufficientInstanceCapacity", "InsufficientCapacity",
                                       "UnfulfillableCapacity",        "MaxSpotInstanceCountExceeded",
                                       "SpotMaxPriceTooLow",           "InsufficientFreeAddressesInSubnet",
                                       "InsufficientHostCapacity",     "InsufficientReservedInstanceCapacity"};
  return std::any_of(std::begin(kCodes), std::end(kCodes), [&](const char* c) { return code == c; });
}

std::string launch_image(const Settings& s, const std::string& resource_class) {
  auto image = s.resource_class_images.find(resource_class);
  return image == s.resource_class_images.end() ? s.image_id : image->second;
}

std::vector<LaunchedInstance> fleet_instances(const aws::CreateFleetResult& result, pool::UsageClass requested) {
  std::vector<LaunchedInstance> out;
  for (const auto& group : result.instances) {
    pool::UsageClass usage = requested;
    if (auto u = pool::parse_usage_class(group.lifecycle)) usage = *u;
    for (const auto& id : group.instance_ids) out.push_back({id, group.instance_type, usage});
  }
  return out;
}

bool retry_same_usage(size_t launched_this_round, int still_needed) {
  return still_needed > 0 && launched_this_round > 0;
}

}  // namespace runpool::controller
