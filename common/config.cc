#include "common/config.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "common/log.h"
#include "common/text.h"

namespace runpool {
namespace {

// A config line's blanks: a file written on Windows keeps its CR.
std::string trim(std::string_view s) { return std::string(text::trim(s, " \t\r")); }

std::string env_name(const std::string& key) {
  std::string out = "RUNPOOL_";
  for (char c : key) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::optional<bool> parse_bool(const std::string& text) {
  const std::string t = text::lower(text);
  if (t == "true" || t == "yes" || t == "on" || t == "1") return true;
  if (t == "false" || t == "no" || t == "off" || t == "0") return false;
  return std::nullopt;
}

bool has_control_characters(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

const char* type_name(KeyType t) {
  switch (t) {
    case KeyType::kString: return "string";
    case KeyType::kInt: return "integer";
    case KeyType::kDuration: return "duration";
    case KeyType::kBool: return "boolean";
    case KeyType::kList: return "list";
    case KeyType::kSecret: return "secret";
  }
  return "?";
}

}  // namespace

std::optional<Duration> parse_duration(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0 || i > 12) return std::nullopt;
  int64_t n = std::stoll(text.substr(0, i));
  std::string unit = text.substr(i);
  int64_t ms_per;
  if (unit == "ms") ms_per = 1;
  else if (unit == "s" || unit.empty()) ms_per = 1000;
  else if (unit == "m") ms_per = 60'000;
  else if (unit == "h") ms_per = 3'600'000;
  else if (unit == "d") ms_per = 86'400'000;
  else return std::nullopt;
  return Duration{n * ms_per};
}

std::string format_duration(Duration d) {
  int64_t ms = d.count();
  if (ms != 0 && ms % 86'400'000 == 0) return std::to_string(ms / 86'400'000) + "d";
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

Config::Config(std::vector<KeySpec> schema) : schema_(std::move(schema)) {
  for (const auto& s : schema_) {
    if (!s.default_value.empty()) validate(s, s.default_value, "default");
  }
}

const KeySpec& Config::spec(const std::string& key) const {
  for (const auto& s : schema_) {
    if (s.key == key) return s;
  }
  throw ConfigError("unknown configuration key '" + printable(key, 80) + "'");
}

void Config::validate(const KeySpec& s, const std::string& value, const std::string& origin) const {
  auto fail = [&](const std::string& why) {
    std::string shown = s.type == KeyType::kSecret ? std::string(Secret::kMask) : value.substr(0, 80);
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20) c = '?';
    }
    throw ConfigError("invalid value for " + s.key + " (from " + origin + "): '" + shown + "' " + why);
  };
  if (value.size() > 4096) fail("is too long");
  if (s.type != KeyType::kSecret && has_control_characters(value)) fail("contains control characters");
  switch (s.type) {
    case KeyType::kInt: {
      auto n = text::parse_int(value);
      if (!n) fail("is not an integer");
      if (*n < s.min || *n > s.max) {
        fail("is out of range [" + std::to_string(s.min) + ", " + std::to_string(s.max) + "]");
      }
      break;
    }
    case KeyType::kDuration: {
      auto d = parse_duration(value);
      if (!d) fail("is not a duration (like 500ms, 30s, 5m, 2h, 1d)");
      if (d->count() < s.min || d->count() > s.max) {
        fail("is out of range [" + format_duration(Duration{s.min}) + ", " +
             (s.max == INT64_MAX ? std::string("∞") : format_duration(Duration{s.max})) + "]");
      }
      break;
    }
    case KeyType::kBool:
      if (!parse_bool(value)) fail("is not a boolean (true/false)");
      break;
    default:
      break;
  }
}

void Config::set(const std::string& key, const std::string& value, const std::string& origin) {
  const KeySpec& s = spec(key);
  validate(s, value, origin);
  values_[key] = {value, origin};
}

void Config::merge_text(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::string where = origin + ":" + std::to_string(n);
    std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    auto eq = t.find('=');
    if (eq == std::string::npos) throw ConfigError(where + ": expected 'key = value'");
    std::string key = trim(t.substr(0, eq));
    std::string value = trim(t.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    try {
      set(key, value, where);
    } catch (const ConfigError& e) {
      if (std::string(e.what()).rfind("unknown", 0) == 0) throw ConfigError(where + ": " + e.what());
      throw;
    }
  }
}

void Config::merge_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot read configuration file " + printable(path));
  std::stringstream ss;
  ss << in.rdbuf();
  merge_text(ss.str(), path);
}

void Config::merge_env(const std::function<const char*(const char*)>& getenv) {
  for (const auto& s : schema_) {
    std::string name = env_name(s.key);
    if (const char* v = getenv(name.c_str()); v && *v) set(s.key, v, name);
  }
}

bool Config::has(const std::string& key) const {
  return values_.count(key) || !spec(key).default_value.empty();
}

std::string Config::origin(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? "default" : it->second.second;
}

void Config::reject(const std::string& key, const std::string& why) const {
  throw ConfigError("invalid value for " + key + " (from " + printable(origin(key)) + "): " + printable(why, 400));
}

std::string Config::get_string(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? spec(key).default_value : it->second.first;
}

int64_t Config::get_int(const std::string& key) const {
  std::string v = get_string(key);
  if (v.empty()) throw ConfigError(key + " is not set");
  return *text::parse_int(v);
}

Duration Config::get_duration(const std::string& key) const {
  std::string v = get_string(key);
  if (v.empty()) throw ConfigError(key + " is not set");
  return *parse_duration(v);
}

bool Config::get_bool(const std::string& key) const {
  std::string v = get_string(key);
  if (v.empty()) return false;
  return *parse_bool(v);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text + ",") {
    if (c == ',' || c == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

std::vector<std::string> Config::get_list(const std::string& key) const { return split_list(get_string(key)); }

Secret Config::get_secret(const std::string& key) const { return Secret(get_string(key)); }

std::string Config::reference_markdown() const {
  std::string out = "| key | environment | type | default | meaning |\n|---|---|---|---|---|\n";
  for (const auto& s : schema_) {
    out += "| `" + s.key + "` | `" + env_name(s.key) + "` | " + type_name(s.type) + " | " +
           (s.default_value.empty() ? "" : "`" + s.default_value + "`") + " | " + s.help + " |\n";
  }
  return out;
}

}  // namespace runpool
