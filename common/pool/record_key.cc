#include "common/pool/record_key.h"

#include <algorithm>
#include <stdexcept>

namespace runpool::pool {
namespace {

bool upper_alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'); }

}  // namespace

// Nothing a log line, a shell or an EC2 filter could read as more than an id.
bool is_plausible_instance_id(std::string_view id) {
  if (id.size() < 3 || id.size() > 64 || id.substr(0, 2) != "i-") return false;
  return std::all_of(id.begin() + 2, id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  });
}

bool is_role_unique_id(std::string_view s) {
  return s.size() >= 16 && s.size() <= 128 && s.substr(0, 4) == "AROA" && std::all_of(s.begin(), s.end(), upper_alnum);
}

std::string record_key(std::string_view instance_role_id, std::string_view instance_id) {
  if (!is_role_unique_id(instance_role_id)) {
    throw std::invalid_argument("'" + std::string(instance_role_id.substr(0, 64)) +
                                "' is not an IAM role's unique id (AROA followed by capital letters and digits)");
  }
  if (!is_plausible_instance_id(instance_id)) {
    throw std::invalid_argument("'" + std::string(instance_id.substr(0, 64)) + "' is not an instance id");
  }
  return std::string(instance_role_id) + ":" + std::string(instance_id);
}

std::optional<ParsedRecordKey> parse_record_key(std::string_view key) {
  size_t colon = key.find(':');
  if (colon == std::string_view::npos) {
    if (!is_plausible_instance_id(key)) return std::nullopt;
    return ParsedRecordKey{"", std::string(key)};
  }
  std::string_view role = key.substr(0, colon), id = key.substr(colon + 1);
  if (!is_role_unique_id(role) || !is_plausible_instance_id(id)) return std::nullopt;
  return ParsedRecordKey{std::string(role), std::string(id)};
}

}  // namespace runpool::pool
