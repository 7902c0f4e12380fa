#include "controller/ec2_compute.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "controller/launch_template.h"

namespace runpool::controller {
namespace {

std::vector<std::vector<std::string>> chunks(const std::vector<std::string>& ids, size_t n) {
  std::vector<std::vector<std::string>> out;
  for (size_t i = 0; i < ids.size(); i += n) {
    out.emplace_back(ids.begin() + static_cast<long>(i), ids.begin() + static_cast<long>(std::min(ids.size(), i + n)));
  }
  return out;
}

}  // namespace

aws::CreateFleetResult Ec2Compute::create_fleet(const aws::CreateFleetRequest& request) {
  if (!template_checked_) {
    check_launch_template();
    template_checked_ = true;
  }
  return ec2_.create_fleet(request);
}

void Ec2Compute::check_launch_template() {
  aws::LaunchTemplateRef ref{"", settings_.launch_template, ""};
  std::vector<aws::LaunchTemplateVersion> current;
  try {
    current = ec2_.describe_launch_template_versions(ref, {"$Default"});
  } catch (const aws::AwsError& e) {
    if (!aws::is_launch_template_not_found(e.code())) throw;
  }
  if (current.empty()) {
    throw ConfigError("launch template " + settings_.launch_template +
                      " does not exist: run `runpoolctl init` with this configuration first");
  }
  auto drift = launch_template_drift(launch_template_data(settings_), current.front().data);
  if (drift.empty()) return;
  std::string why;
  for (const auto& d : drift) why += (why.empty() ? "" : "; ") + d;
  throw ConfigError("launch template " + settings_.launch_template + " (default version " +
                    std::to_string(current.front().version_number) + ") does not match this configuration: " + why +
                    ". Run `runpoolctl init` to make a version from it");
}

void Ec2Compute::terminate(const std::vector<std::string>& instance_ids) {
  for (const auto& batch : chunks(instance_ids, 500)) {
    try {
      ec2_.terminate_instances(batch);
    } catch (const aws::AwsError& e) {
      if (!aws::is_instance_not_found(e.code())) throw;
      // One unknown id fails the whole call: go one by one, unknown ones being gone already.
      for (const auto& id : batch) {
        try {
          ec2_.terminate_instances({id});
        } catch (const aws::AwsError& one) {
          if (!aws::is_instance_not_found(one.code())) throw;
          spdlog::debug("instance {} is unknown to EC2: nothing to terminate", id);
        }
      }
    }
  }
}

std::vector<aws::Instance> Ec2Compute::describe(const std::vector<std::string>& instance_ids) {
  std::vector<aws::Instance> out;
  for (const auto& batch : chunks(instance_ids, 200)) {
    aws::DescribeInstancesRequest r;
    r.filters = {{"instance-id", batch}};
    auto got = ec2_.describe_instances(r);
    out.insert(out.end(), got.begin(), got.end());
  }
  return out;
}

std::vector<aws::Instance> Ec2Compute::pool_instances() {
  aws::DescribeInstancesRequest r;
  r.filters = {{std::string("tag:") + kTagPool, {settings_.pool}},
               {std::string("tag:") + kTagTable, {settings_.table}},
               {"instance-state-name", {"pending", "running", "shutting-down", "stopping", "stopped"}}};
  r.max_results = 1000;
  return ec2_.describe_instances(r);
}

std::vector<aws::Instance> Ec2Compute::label_instances(const std::string& label) {
  aws::DescribeInstancesRequest r;
  r.filters = {{std::string("tag:") + kTagPool, {settings_.pool}},
               {std::string("tag:") + kTagTable, {settings_.table}},
               {std::string("tag:") + kTagLabel, {label}},
               {"instance-state-name", {"pending", "running"}}};
  r.max_results = 1000;
  return ec2_.describe_instances(r);
}

}  // namespace runpool::controller
