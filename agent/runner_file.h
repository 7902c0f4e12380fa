// The runner's `.runner` file, as configuration leaves it: JSON written as UTF-8 with a BOM, keys
// in camelCase (`agentId`, `agentName`) in current runners and PascalCase in older documentation.
// The agent reads the runner's id and name from it, and, from the name it chose
// (<pool>-<instance>-g<generation>), which assignment the configured runner belongs to.
#pragma once

#include <cstdint>
#include <optional>
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
};

// Parses the file's text. Throws RunnerFileError (never anything else) on bad JSON, a missing
// or mistyped id or name, or a non-positive id.
RunnerIdentity parse_runner_file(const std::string& text);

// The runner name the agent registers for an assignment, and back: the generation a name was
// chosen for, or nullopt when it is not one of this pool's and instance's names.
std::string runner_name(const std::string& pool, const std::string& instance_id, int64_t generation);
std::optional<int64_t> generation_of_runner_name(const std::string& name, const std::string& pool,
                                                 const std::string& instance_id);

}  // namespace runpool::agent
