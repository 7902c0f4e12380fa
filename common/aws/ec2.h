// The EC2 calls runpool makes, typed, on top of AwsCaller (signing, retries, AwsError) and the
// query protocol (ec2_query.h). Errors are AwsError with EC2's code and message: throttling
// (RequestLimitExceeded) is retried by the shared policy; capacity errors are not, the controller
// decides what to try next. A CreateFleet that launches only part of its target returns normally
// with its errors listed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/aws/aws_caller.h"
#include "common/aws/ec2_types.h"

namespace runpool::aws {

class Ec2Client {
 public:
  explicit Ec2Client(AwsCaller& caller) : caller_(caller) {}

  // ---- instances
  RunInstancesResult run_instances(const RunInstancesRequest& request);
  DescribeInstancesPage describe_instances_page(const DescribeInstancesRequest& request);
  // Visits every instance of every page (request.next_token is the starting point); stops early
  // when `visit` returns false. Throws AwsError "PaginationLimitExceeded" past `max_pages`.
  void for_each_instance(DescribeInstancesRequest request, const std::function<bool(const Instance&)>& visit,
                         int max_pages = 100);
  // All pages collected.
  std::vector<Instance> describe_instances(const DescribeInstancesRequest& request, int max_pages = 100);
  std::vector<InstanceStateChange> terminate_instances(const std::vector<std::string>& instance_ids);
  // EBS-backed instances only; `force` skips the OS shutdown (EC2's Force). EC2 refuses a pending or
  // terminated instance (IncorrectInstanceState) and a one-time spot instance (UnsupportedOperation).
  std::vector<InstanceStateChange> stop_instances(const std::vector<std::string>& instance_ids, bool force = false);
  // A stopped instance goes pending, then running, with the same instance id.
  std::vector<InstanceStateChange> start_instances(const std::vector<std::string>& instance_ids);

  // ---- tags
  void create_tags(const std::vector<std::string>& resource_ids, const std::vector<Tag>& tags);
  // Deletes the tags with these keys, whatever their values.
  void delete_tags(const std::vector<std::string>& resource_ids, const std::vector<std::string>& keys);

  // ---- fleets
  CreateFleetResult create_fleet(const CreateFleetRequest& request);  // Type=instant

  // ---- launch templates
  LaunchTemplate create_launch_template(const CreateLaunchTemplateRequest& request);
  LaunchTemplateVersion create_launch_template_version(const CreateLaunchTemplateVersionRequest& request);
  // ModifyLaunchTemplate SetDefaultVersion. `launch_template.version` is the new default.
  LaunchTemplate set_default_launch_template_version(const LaunchTemplateRef& launch_template);
  // One template by id or name; nullopt when EC2 says it does not exist.
  std::optional<LaunchTemplate> describe_launch_template(const LaunchTemplateRef& launch_template);
  // Several by names and/or ids (all pages). A missing one fails the whole call, as in EC2.
  std::vector<LaunchTemplate> describe_launch_templates(const std::vector<std::string>& names,
                                                        const std::vector<std::string>& ids, int max_pages = 20);
  // Versions ("3", "$Latest", "$Default"; empty: all versions, all pages).
  std::vector<LaunchTemplateVersion> describe_launch_template_versions(const LaunchTemplateRef& launch_template,
                                                                       const std::vector<std::string>& versions,
                                                                       int max_pages = 20);

  AwsCaller& caller() { return caller_; }

 private:
  AwsCaller& caller_;
};

// The launch-template-not-found codes (InvalidLaunchTemplateName.NotFoundException,
// InvalidLaunchTemplateId.NotFound, …).
bool is_launch_template_not_found(const std::string& code);
// InvalidInstanceID.NotFound / .Malformed.
bool is_instance_not_found(const std::string& code);

}  // namespace runpool::aws
