// The GitHub runner name of one assignment: `<pool>-<instance-id>-g<generation>`. Unique per
// instance and generation, so a re-registration never collides with an earlier one, and parseable,
// so `refresh` can tell this pool's runners from everyone else's and find the record behind each.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace runpool::pool {

std::string runner_name(std::string_view pool, std::string_view instance_id, int64_t generation);

struct RunnerNameParts {
  std::string instance_id;
  int64_t generation = 0;
};

// Strict: exactly `pool` (case-sensitive), "-", an EC2 instance id ("i-" and 8 or 17 lowercase
// hex digits), "-g", and a generation >= 1 in decimal without leading zeros or sign that fits
// int64. Anything else is not this pool's runner: nullopt.
std::optional<RunnerNameParts> parse_runner_name(std::string_view pool, std::string_view name);

// "i-" and 8 or 17 lowercase hex digits.
bool is_instance_id(std::string_view id);

}  // namespace runpool::pool
