#include "agent/job_imds_guard.h"

#include <unistd.h>

#include <stdexcept>

#include <spdlog/spdlog.h>

#include "agent/process.h"

namespace runpool::agent {

namespace {

// The host of an http(s) URL: "http://[fd00:ec2::254]:80/x" → "fd00:ec2::254".
std::string url_host(const std::string& url) {
  auto scheme = url.find("://");
  std::string rest = scheme == std::string::npos ? url : url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  if (!rest.empty() && rest[0] == '[') {
    auto close = rest.find(']');
    return close == std::string::npos ? "" : rest.substr(1, close - 1);
  }
  return rest.substr(0, rest.find(':'));
}

// Deleting a table that does not exist fails; adding one that does is a no-op — so add, then
// delete, in the same transaction removes it whether or not it was there.
std::string remove_table() {
  const std::string t = std::string("inet ") + kImdsGuardTable;
  return "add table " + t + "\ndelete table " + t + "\n";
}

}  // namespace

bool is_ec2_imds_endpoint(const std::string& url) {
  const std::string host = url_host(url);
  return host == kImdsAddressV4 || host == kImdsAddressV6;
}

ImdsGuardPlan plan_job_imds_guard(const ImdsGuardInput& in) {
  ImdsGuardPlan p;
  if (!is_ec2_imds_endpoint(in.imds_endpoint)) {
    p.kind = ImdsGuardPlan::Kind::kSkip;
    p.reason = "IMDS is " + in.imds_endpoint + ", not EC2's: no firewall rule for jobs";
    return p;
  }
  if (in.job_imds_access) {
    p.kind = ImdsGuardPlan::Kind::kAllow;
    p.ruleset = remove_table();
    p.reason = "job_imds_access = true: jobs may reach IMDS (and the instance role's credentials)";
    return p;
  }
  if (in.runner_uid == 0) throw std::invalid_argument("the IMDS guard needs the runner's uid, not 0");
  const std::string t = std::string("inet ") + kImdsGuardTable;
  if (in.runner_uid_last != 0 && in.runner_uid_last < in.runner_uid) {
    throw std::invalid_argument("the IMDS guard's uid range ends before it starts");
  }
  std::string uids = std::to_string(in.runner_uid);
  if (in.runner_uid_last > in.runner_uid) uids += "-" + std::to_string(in.runner_uid_last);
  // Every uid but root's, not only the runner's and the job users': a job can get its requests
  // made by a process of another uid (a local proxy or any service that fetches what it is
  // asked), and such a relay would hand it the instance role's credentials.
  const std::string who = "meta skuid != 0";
  p.kind = ImdsGuardPlan::Kind::kBlock;
  // Replaced as a whole in one transaction: never a moment without the rules once installed.
  p.ruleset = remove_table() + "add table " + t + "\n" + "add chain " + t +
              " output { type filter hook output priority 0; policy accept; }\n" + "add rule " + t + " output " +
              who + " ip daddr " + kImdsAddressV4 + " counter reject\n" + "add rule " + t + " output " + who +
              " ip6 daddr " + kImdsAddressV6 + " counter reject\n";
  p.reason = std::string("only root reaches IMDS: not the jobs (") + (in.runner_uid_last > in.runner_uid ? "uids " : "uid ") +
             uids + ") nor any other uid that could relay for them (job_imds_access = false)";
  return p;
}

std::string find_nft() {
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin", "/usr/local/sbin"}) {
    const std::string p = std::string(dir) + "/nft";
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

void apply_job_imds_guard(const ImdsGuardPlan& plan, const std::function<void()>& alive, const std::string& nft) {
  if (plan.kind == ImdsGuardPlan::Kind::kSkip) {
    spdlog::debug("{}", plan.reason);
    return;
  }
  if (nft.empty()) throw std::runtime_error("job IMDS guard: nft is not installed (install nftables)");
  SpawnOptions o;
  o.argv = {nft, plan.ruleset};
  o.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"};
  o.cwd = "/";
  CommandOutcome c = run_command(o, std::chrono::seconds(30), alive, 2048);
  if (c.exit_code != 0) {
    throw std::runtime_error("job IMDS guard: nft " + std::string(c.timed_out ? "timed out" : "failed") + " (exit " +
                             std::to_string(c.exit_code) + "): " + c.output);
  }
  spdlog::info("{}", plan.reason);
}

}  // namespace runpool::agent
