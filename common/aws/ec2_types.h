// Requests and answers of the EC2 calls runpool makes. Field names follow EC2's; an empty string
// or nullopt means "not given" (the parameter is left out of the request).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/aws/ec2_xml.h"
#include "common/clock.h"

namespace runpool::aws {

inline constexpr const char* kLifecycleSpot = "spot";
inline constexpr const char* kLifecycleOnDemand = "on-demand";

struct TagSpecification {
  std::string resource_type;  // "instance", "fleet", "volume", "launch-template", …
  std::vector<Tag> tags;
};

// A launch template by id or by name (exactly one), and a version: "3", "$Latest", "$Default";
// empty means the default version.
struct LaunchTemplateRef {
  std::string id;
  std::string name;
  std::string version;
};

struct InstanceState {
  int code = 0;      // 0 pending, 16 running, 32 shutting-down, 48 terminated, 64 stopping, 80 stopped
  std::string name;  // "pending", "running", …
};

// An instance state name that means no agent runs there any more: on its way out or gone
// (shutting-down, terminated), or stopped (stopping, stopped).
inline bool instance_gone(const std::string& state) { return state == "shutting-down" || state == "terminated"; }
inline bool instance_stopped(const std::string& state) { return state == "stopping" || state == "stopped"; }

struct Instance {
  std::string instance_id;
  std::string instance_type;
  std::string image_id;
  InstanceState state;
  std::optional<WallTime> launch_time;
  std::string lifecycle = kLifecycleOnDemand;  // "spot" when EC2 says so, else "on-demand"
  std::string subnet_id;
  std::string private_ip_address;
  std::string availability_zone;
  std::vector<Tag> tags;

  std::optional<std::string> tag(const std::string& key) const;
};

// ---- RunInstances
struct RunInstancesRequest {
  std::string image_id;                          // or from the launch template
  std::optional<LaunchTemplateRef> launch_template;
  std::string instance_type;
  int min_count = 1;
  int max_count = 1;
  std::string user_data;                         // clear text; sent base64-encoded
  std::string subnet_id;
  std::vector<std::string> security_group_ids;
  std::string iam_instance_profile_name;
  std::string iam_instance_profile_arn;
  std::vector<TagSpecification> tag_specifications;
  bool spot = false;                             // InstanceMarketOptions: one-time spot
  std::string instance_initiated_shutdown_behavior;  // "terminate" / "stop"
  bool require_imdsv2 = true;                    // MetadataOptions.HttpTokens=required
  bool instance_metadata_tags = false;           // MetadataOptions.InstanceMetadataTags=enabled
  std::string client_token;                      // idempotency; derive it from the operation
};

struct RunInstancesResult {
  std::string reservation_id;
  std::vector<Instance> instances;
};

// ---- DescribeInstances
struct Ec2Filter {
  std::string name;  // "instance-state-name", "tag:runpool:pool", "tag-key", …
  std::vector<std::string> values;
};

struct DescribeInstancesRequest {
  std::vector<std::string> instance_ids;  // EC2 refuses MaxResults together with InstanceId
  std::vector<Ec2Filter> filters;
  std::optional<int> max_results;         // 5..1000
  std::string next_token;
};

struct DescribeInstancesPage {
  std::vector<Instance> instances;
  std::string next_token;  // empty on the last page
};

// ---- TerminateInstances
struct InstanceStateChange {
  std::string instance_id;
  InstanceState previous_state;
  InstanceState current_state;
};

// ---- CreateFleet (Type=instant)
struct InstanceRequirements {
  int64_t vcpu_min = 0;
  std::optional<int64_t> vcpu_max;
  int64_t memory_mib_min = 0;
  std::optional<int64_t> memory_mib_max;
  std::vector<std::string> allowed_instance_types;  // "m5.*", "c6i.large", …
};

struct FleetOverride {
  std::string instance_type;  // leave empty when giving instance_requirements
  std::string subnet_id;
  std::optional<InstanceRequirements> instance_requirements;
  std::string image_id;  // "": the launch template's
};

struct FleetLaunchTemplateConfig {
  LaunchTemplateRef launch_template;
  std::vector<FleetOverride> overrides;
};

struct CreateFleetRequest {
  std::vector<FleetLaunchTemplateConfig> launch_template_configs;
  int64_t total_target_capacity = 1;
  std::optional<int64_t> on_demand_target_capacity;
  std::optional<int64_t> spot_target_capacity;
  std::string default_target_capacity_type = kLifecycleOnDemand;  // "spot" | "on-demand"
  std::string spot_allocation_strategy;       // e.g. "price-capacity-optimized"
  std::string on_demand_allocation_strategy;  // "lowest-price" | "prioritized"
  std::vector<TagSpecification> tag_specifications;  // "instance" and/or "fleet"
  std::string client_token;
};

struct FleetInstances {
  std::vector<std::string> instance_ids;
  std::string instance_type;
  std::string lifecycle;  // "spot" | "on-demand"
  std::string subnet_id;  // when EC2 reports it (directly or in the overrides used)
};

struct FleetError {
  std::string code;  // "InsufficientInstanceCapacity", "UnfulfillableCapacity", …
  std::string message;
  std::string lifecycle;
  std::string instance_type;  // from the overrides that failed, when given
  std::string subnet_id;
};

// Partial fulfilment is a result: some instances and some errors.
struct CreateFleetResult {
  std::string fleet_id;
  std::vector<FleetInstances> instances;
  std::vector<FleetError> errors;

  std::vector<std::string> instance_ids() const;
};

// ---- Launch templates
// One EBS block device of a launch template (BlockDeviceMapping with Ebs); 0 / "" = not set.
struct BlockDevice {
  std::string device_name;  // e.g. "/dev/xvda"
  int64_t volume_size_gib = 0;
  std::string volume_type;  // gp3, gp2, io2, …
  bool delete_on_termination = true;
  bool operator==(const BlockDevice&) const = default;
};

// A launch template's data as runpool writes and reads it. Fields runpool does not set (a key pair,
// network interfaces, …) are not modelled: a version made from a source version inherits them.
struct LaunchTemplateData {
  std::string image_id;
  std::string instance_type;
  std::string user_data;  // clear text; sent base64-encoded
  std::string iam_instance_profile_name;
  std::string iam_instance_profile_arn;
  bool require_imdsv2 = true;          // MetadataOptions.HttpTokens=required
  bool instance_metadata_tags = true;  // MetadataOptions.InstanceMetadataTags=enabled
  int64_t metadata_hop_limit = 0;      // MetadataOptions.HttpPutResponseHopLimit; 0: not set
  std::string metadata_http_endpoint;  // MetadataOptions.HttpEndpoint ("enabled"/"disabled"); "": not set
  std::string metadata_http_protocol_ipv6;  // MetadataOptions.HttpProtocolIpv6; "": not set
  std::vector<TagSpecification> tag_specifications;
  std::vector<std::string> security_group_ids;
  std::string instance_initiated_shutdown_behavior;
  std::vector<BlockDevice> block_devices;
};

struct LaunchTemplate {
  std::string id;
  std::string name;
  int64_t default_version = 0;
  int64_t latest_version = 0;
  std::optional<WallTime> create_time;
  std::vector<Tag> tags;
};

struct CreateLaunchTemplateRequest {
  std::string name;
  LaunchTemplateData data;
  std::string version_description;
  std::vector<Tag> tags;  // on the launch template itself
  std::string client_token;
};

struct CreateLaunchTemplateVersionRequest {
  LaunchTemplateRef launch_template;  // id or name; version ignored
  std::string source_version;         // inherit from this version, then apply `data`
  LaunchTemplateData data;
  std::string version_description;
  std::string client_token;
};

// What a version holds, as EC2 reports it back (user data decoded).
struct LaunchTemplateVersion {
  std::string launch_template_id;
  std::string launch_template_name;
  int64_t version_number = 0;
  bool default_version = false;
  std::string version_description;
  std::optional<WallTime> create_time;
  LaunchTemplateData data;  // fields EC2 did not report stay empty/false
};

}  // namespace runpool::aws
