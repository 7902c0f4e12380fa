#include "agent/aws_services.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <spdlog/spdlog.h>

#include "agent/process.h"

namespace runpool::agent {

void Ec2SelfTerminator::terminate_self() {
  auto changes = ec2_.terminate_instances({instance_id_});
  for (const auto& c : changes) {
    spdlog::info("TerminateInstances {}: {} → {}", c.instance_id, c.previous_state.name, c.current_state.name);
  }
}

namespace {

std::string which(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path && *path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace

bool shutdown_os() {
  const std::vector<std::vector<std::string>> commands = {{"poweroff"}, {"shutdown", "-h", "now"}};
  for (const auto& cmd : commands) {
    std::string exe = which(cmd[0]);
    if (exe.empty()) continue;
    SpawnOptions o;
    o.argv = cmd;
    o.argv[0] = exe;
    for (const char* v : {"PATH", "HOME", "AWS_EC2_METADATA_SERVICE_ENDPOINT", "RUNPOOL_LOCALCLOUD_INSTANCE_DIR"}) {
      if (const char* val = std::getenv(v)) o.env.push_back(std::string(v) + "=" + val);
    }
    try {
      CommandOutcome r = run_command(o, std::chrono::seconds(30), nullptr);
      spdlog::info("{}: exit {} {}", exe, r.exit_code, r.output);
      if (r.exit_code == 0) return true;
    } catch (const std::exception& e) {
      spdlog::error("{}: {}", exe, e.what());
    }
  }
  return false;
}

std::optional<Notice> ImdsNotices::poll() {
  if (auto action = imds_.spot_instance_action()) {
    return Notice{Notice::kSpotInterruption, "spot instance-action " + action->action + " at " + action->time};
  }
  if (auto when = imds_.rebalance_notice_time()) {
    return Notice{Notice::kRebalance, "rebalance recommended at " + *when};
  }
  return std::nullopt;
}

}  // namespace runpool::agent
