// Cuts the runner's jobs off from IMDS (job_imds_access = false, the default): the instance
// role's credentials are one HTTP request away from any job otherwise. An nftables table of the
// agent's own rejects every packet a process of any uid but root's sends to IMDS (169.254.169.254
// and fd00:ec2::254): the runner's and the job users', and every other local uid a job could get
// to make the request for it; the agent (root) keeps its access. Installed before each runner starts,
// replaced atomically (so applying it twice changes nothing), removed when access is allowed.
//
// The plan is a pure function; apply_job_imds_guard runs `nft` with it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace runpool::agent {

inline constexpr const char* kImdsGuardTable = "runpool_imds";
inline constexpr const char* kImdsAddressV4 = "169.254.169.254";
inline constexpr const char* kImdsAddressV6 = "fd00:ec2::254";

struct ImdsGuardInput {
  bool job_imds_access = false;  // the setting: true lets jobs reach IMDS
  uid_t runner_uid = 0;       // the runner's uid, or the first of the job users' range
  std::string imds_endpoint;  // the agent's effective IMDS URL (ImdsClient::endpoint())
  uid_t runner_uid_last = 0;  // the last of the job users' range; 0: just runner_uid
};

struct ImdsGuardPlan {
  enum class Kind {
    kBlock,  // install the table: the runner user cannot reach IMDS
    kAllow,  // remove the table if present: access allowed by the setting
    kSkip,   // nothing to do: not EC2's IMDS (a local stand-in), rules could guard nothing
  };
  Kind kind = Kind::kSkip;
  std::string ruleset;  // the nft commands (one transaction); "" for kSkip
  std::string reason;   // for the log
};

// True when `url`'s host is EC2's IMDS address (v4 or v6), whatever the scheme and port.
bool is_ec2_imds_endpoint(const std::string& url);

// What to install. Throws std::invalid_argument for uid 0 with access blocked: a rule for root
// would cut the agent off.
ImdsGuardPlan plan_job_imds_guard(const ImdsGuardInput& input);

// The nft executable in the system directories; "" when not installed.
std::string find_nft();

// Runs `nft <ruleset>` (kBlock, kAllow); throws std::runtime_error with nft's output when it
// fails or is missing. The ruleset names no secret, so argv is fine.
void apply_job_imds_guard(const ImdsGuardPlan& plan, const std::function<void()>& alive,
                          const std::string& nft = find_nft());

}  // namespace runpool::agent
