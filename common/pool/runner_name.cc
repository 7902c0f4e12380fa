#include "common/pool/runner_name.h"

namespace runpool::pool {

std::string runner_name(std::string_view pool, std::string_view instance_id, int64_t generation) {
  std::string name(pool);
  name += '-';
  name += instance_id;
  name += "-g";
  name += std::to_string(generation);
  return name;
}

bool is_instance_id(std::string_view id) {
  if (id.size() != 10 && id.size() != 19) return false;
  if (id.substr(0, 2) != "i-") return false;
  for (char c : id.substr(2)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

namespace {

// A positive decimal without sign or leading zeros that fits int64.
std::optional<int64_t> parse_generation(std::string_view text) {
  if (text.empty() || text.size() > 19 || text[0] == '0') return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    int digit = c - '0';
    if (value > (INT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

}  // namespace

std::optional<RunnerNameParts> parse_runner_name(std::string_view pool, std::string_view name) {
  if (pool.empty() || name.size() <= pool.size() + 1) return std::nullopt;
  if (name.substr(0, pool.size()) != pool || name[pool.size()] != '-') return std::nullopt;
  std::string_view rest = name.substr(pool.size() + 1);
  // The instance id's length is one of two; the "-g" after it settles which.
  for (size_t id_len : {size_t{10}, size_t{19}}) {
    if (rest.size() < id_len + 3) continue;
    std::string_view id = rest.substr(0, id_len);
    if (!is_instance_id(id) || rest.substr(id_len, 2) != "-g") continue;
    auto generation = parse_generation(rest.substr(id_len + 2));
    if (!generation) continue;
    return RunnerNameParts{std::string(id), *generation};
  }
  return std::nullopt;
}

}  // namespace runpool::pool
