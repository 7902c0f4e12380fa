// The runner API's values, as typed C++: runners, labels, registration credentials, downloads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/secret.h"

namespace runpool::github {

struct RunnerLabel {
  int64_t id = 0;
  std::string name;
  std::string type;  // "read-only" (system labels) or "custom"
  bool operator==(const RunnerLabel&) const = default;
};

struct Runner {
  int64_t id = 0;  // equals AgentId in the runner's .runner file
  std::string name;
  std::string os;
  std::string status;  // "online" | "offline"
  bool busy = false;   // a hint only: lags job start and can linger on vanished runners
  bool ephemeral = false;
  int64_t runner_group_id = 0;  // 0 when the server does not say (older GHES)
  std::vector<RunnerLabel> labels;

  bool online() const { return status == "online"; }
  std::vector<std::string> label_names() const;
};

// A registration or remove token for config.sh (1 hour on GitHub).
struct RunnerToken {
  Secret token;
  WallTime expires_at;
};

struct JitConfigRequest {
  std::string name;
  int64_t runner_group_id = 1;      // the Default group
  std::vector<std::string> labels;  // 1..100
  std::string work_folder;          // empty: the runner's default ("_work")
};

struct JitConfig {
  Runner runner;
  Secret encoded_jit_config;  // for `run.sh --jitconfig`
};

// DELETE answers a caller has to branch on.
enum class DeleteOutcome { kDeleted, kAlreadyGone, kBusy };
std::string_view to_string(DeleteOutcome outcome);

struct RunnerDownload {
  std::string os;            // "linux", "osx", "win"
  std::string architecture;  // "x64", "arm64", "arm"
  std::string download_url;
  std::string filename;
  std::string sha256_checksum;  // "" when the server gives none (older GHES)
};

}  // namespace runpool::github
