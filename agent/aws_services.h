// The agent's real SelfTerminator and NoticeSource: TerminateInstances on its own id with the instance
// role's credentials (the role may terminate only itself), the OS shutdown as the fallback, and
// IMDS's spot instance-action and rebalance recommendation.
#pragma once

#include <string>

#include "agent/runner_host.h"
#include "common/aws/ec2.h"
#include "common/aws/imds.h"

namespace runpool::agent {

// `poweroff`, else `shutdown -h now`, found on the agent's PATH (on the local cloud the
// instance's bin/ comes first and holds its poweroff). On EC2 the instance is launched with
// instance-initiated shutdown behaviour = terminate, so either ends it for good. False when
// neither could be run successfully.
bool shutdown_os();

class Ec2SelfTerminator final : public SelfTerminator {
 public:
  Ec2SelfTerminator(aws::Ec2Client& ec2, std::string instance_id) : ec2_(ec2), instance_id_(std::move(instance_id)) {}
  void terminate_self() override;
  bool shutdown_os() override { return agent::shutdown_os(); }

 private:
  aws::Ec2Client& ec2_;
  std::string instance_id_;
};

class ImdsNotices final : public NoticeSource {
 public:
  explicit ImdsNotices(aws::ImdsClient& imds) : imds_(imds) {}
  std::optional<Notice> poll() override;

 private:
  aws::ImdsClient& imds_;
};

}  // namespace runpool::agent
