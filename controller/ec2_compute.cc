#include "controller/ec2_compute.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "controller/launch_template.h"

namespace runpool::controller {
namespace {

// EC2's answer when an instance may not be terminated: its disableApiTermination attribute is set.
bool is_termination_refused(const std::string& code) { return code == "OperationNotPermitted"; }

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

void Ec2Compute::tag_label(const std::vector<std::string>& instance_ids, const std::string& label) {
  if (instance_ids.empty()) return;
  ec2_.create_tags(instance_ids, {aws::Tag{kTagLabel, label}});
}

void Ec2Compute::terminate(const std::vector<std::string>& instance_ids) {
  // TerminateInstances is all or nothing: one unknown id, or one instance with termination
  // protection (OperationNotPermitted), fails the whole call. Then each id goes alone: unknown ones
  // are gone already, protected ones are reported (TerminateError) and the rest terminated.
  std::map<std::string, std::string> refused;
  const auto batches = chunks(instance_ids, 500);
  for (size_t b = 0; b < batches.size(); ++b) {
    try {
      ec2_.terminate_instances(batches[b]);
      continue;
    } catch (const aws::AwsError& e) {
      if (!aws::is_instance_not_found(e.code()) && !is_termination_refused(e.code())) {
        if (refused.empty()) throw;  // the call's own failure, as ever
        for (size_t rest = b; rest < batches.size(); ++rest) {
          for (const auto& id : batches[rest]) refused[id] = e.what();
        }
        break;
      }
    }
    bool stopped = false;
    for (size_t i = 0; i < batches[b].size() && !stopped; ++i) {
      const std::string& id = batches[b][i];
      try {
        ec2_.terminate_instances({id});
      } catch (const aws::AwsError& one) {
        if (aws::is_instance_not_found(one.code())) {
          spdlog::debug("instance {} is unknown to EC2: nothing to terminate", id);
        } else if (is_termination_refused(one.code())) {
          spdlog::warn("instance {}: EC2 will not terminate it: {}", id, one.message());
          refused[id] = one.what();
        } else {
          // Not about this instance (an outage, throttling after retries): stop calling; what is
          // left is not terminated (with nothing refused yet, the error itself, as ever).
          if (refused.empty()) throw;
          for (size_t rest = b; rest < batches.size(); ++rest) {
            for (size_t j = rest == b ? i : 0; j < batches[rest].size(); ++j) refused[batches[rest][j]] = one.what();
          }
          stopped = true;
        }
      }
    }
    if (stopped) break;
  }
  if (!refused.empty()) throw TerminateError(std::move(refused));
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
