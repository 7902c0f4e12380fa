// The runner's `.runner` file, as configuration leaves it: JSON written as UTF-8 with a BOM, keys
// in camelCase (`agentId`, `agentName`) in current runners and PascalCase in older documentation.
// The agent reads the runner's id and name from it, and, from the name it chose
// (common/pool/runner_name.h), which assignment the configured runner belongs to.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace runpool::agent {

class RunnerFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RunnerIdentity {
  int64_t id = 0;
  std::string name;
  std::string server_url;  // "" when absent
  bool ephemeral = false;  // one job, then the runner deletes its configuration and exits 0 (JIT runners)
  // The runner never updates itself: config.sh's --disableupdate, or what GitHub wrote into a JIT
  // configuration (it decides that for a just-in-time runner).
  bool disable_update = false;
};

// Parses the file's text. Throws RunnerFileError (never anything else) on bad JSON, a missing
// or mistyped id or name, or a non-positive id.
RunnerIdentity parse_runner_file(const std::string& text);

}  // namespace runpool::agent
