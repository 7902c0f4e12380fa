// The settings table's rows by concept (settings.cc joins them in this order, which is the order of
// `config --reference`), and the checks several rows share. Internal to runpoolctl's settings.
#pragma once

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/settings_table.h"
#include "common/text.h"
#include "controller/settings.h"

namespace runpool::controller::settings_rows {

using Row = SettingsRow<Settings>;

inline constexpr Duration kMs{1};
inline constexpr Duration kSec{1000};
inline constexpr Duration kMin = 60 * kSec;
inline constexpr Duration kHour = 60 * kMin;
inline constexpr Duration kDay = 24 * kHour;

inline bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

// Resource class names end up in queue names (≤ 80: alphanumerics, '-', '_') and in labels.
inline bool valid_class_name(const std::string& s) {
  return !s.empty() && s.size() <= 32 && std::all_of(s.begin(), s.end(), is_name_char);
}

// EC2 instance type names: "c7i.large", "m7i-flex.xlarge", "u-6tb1.metal".
inline bool valid_instance_type(const std::string& s) {
  if (s.size() < 3 || s.size() > 40) return false;
  auto dot = s.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == s.size() || s.find('.', dot + 1) != std::string::npos) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
           c == '-';
  });
}

inline std::string trim(std::string_view s) { return std::string(text::trim(s, " \t")); }

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + sep) {
    if (c == sep) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

inline bool valid_aws_id(const std::string& s, const std::string& prefix) {
  if (s.rfind(prefix, 0) != 0 || s.size() == prefix.size() || s.size() > prefix.size() + 17) return false;
  return std::all_of(s.begin() + static_cast<long>(prefix.size()), s.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}



// Checks of a value's form, shared by several rows.
inline void check_endpoint(const Config& c, const std::string& key) {
  std::string v = c.get_string(key);
  if (!v.empty() && v.rfind("http://", 0) != 0 && v.rfind("https://", 0) != 0) {
    c.reject(key, "'" + v + "' is not an http(s) URL");
  }
}

inline Row endpoint_row(const char* key, std::string Settings::*member, std::string help) {
  return checked<Settings>(string_row(key, member, std::move(help)),
                           [key](const Config& c, Settings&) { check_endpoint(c, key); });
}

// "class=value[;class=value]" for classes of resource_classes, once per class: each value parsed.
template <class Parse, class Apply>
void per_class_entries(const Config& c, const Settings& s, const char* key, const std::string& what, Parse parse,
                       Apply apply) {
  std::set<std::string> seen;
  for (const std::string& entry : split(c.get_string(key), ';')) {
    if (trim(entry).empty()) continue;
    auto eq = entry.find('=');
    std::string cls = eq == std::string::npos ? "" : trim(entry.substr(0, eq));
    auto parsed = eq == std::string::npos ? decltype(parse(""))() : parse(trim(entry.substr(eq + 1)));
    if (!s.find_class(cls) || !parsed || !seen.insert(cls).second) {
      c.reject(key, "'" + trim(entry) + "' is not " + what + " for a class of resource_classes, once per class");
    }
    apply(cls, *parsed);
  }
}

// The reuse keys' values, for their messages.
inline std::string reuse_values_of(std::string_view key) {
  if (key.find("job_privileges") != std::string_view::npos) return "user, docker or sudo";
  if (key.find("reuse_scope") != std::string_view::npos) return "repository or owner";
  if (key.find("reuse") != std::string_view::npos) return "always, same-scope or never";
  return "pool or none";
}

std::vector<Row> where_rows();      // the AWS account and GitHub (settings_rows_where.cc)
std::vector<Row> instance_rows();   // the pool's instances and the agent's keys (settings_rows_instances.cc)
std::vector<Row> timing_rows();     // lifecycle deadlines and how runpoolctl waits (settings_rows_timing.cc)
std::vector<Row> reuse_rows();      // reuse and job privileges (settings_rows_reuse.cc)
std::vector<Row> fleet_rows();      // shared pools, scale sets, metrics, logging (settings_rows_fleet.cc)

}  // namespace runpool::controller::settings_rows
