// Compute on EC2: CreateFleet, TerminateInstances in batches (ids EC2 no longer knows are not an
// error; one with termination protection is reported without keeping the others up), and
// DescribeInstances by filters — never by InstanceId.N, which fails the whole call when one id is
// unknown.
#pragma once

#include "common/aws/ec2.h"
#include "controller/compute.h"
#include "controller/settings.h"

namespace runpool::controller {

class Ec2Compute final : public Compute {
 public:
  Ec2Compute(aws::Ec2Client& ec2, const Settings& settings) : ec2_(ec2), settings_(settings) {}

  // Before its first fleet, checks that the launch template exists and launches what the
  // configuration says (controller/launch_template.h): a ConfigError naming each difference
  // otherwise, at once rather than after a registration timeout.
  aws::CreateFleetResult create_fleet(const aws::CreateFleetRequest& request) override;
  void terminate(const std::vector<std::string>& instance_ids) override;
  void tag_label(const std::vector<std::string>& instance_ids, const std::string& label) override;
  std::vector<aws::Instance> describe(const std::vector<std::string>& instance_ids) override;
  std::vector<aws::Instance> pool_instances() override;
  std::vector<aws::Instance> label_instances(const std::string& label) override;

 private:
  void check_launch_template();

  aws::Ec2Client& ec2_;
  const Settings& settings_;
  bool template_checked_ = false;
};

}  // namespace runpool::controller
