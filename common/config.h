// Configuration from a file, the environment (RUNPOOL_<KEY>) and flags, later ones winning. Each
// binary declares its keys once (a schema: type, default, help), so that unknown keys are
// rejected, every value is validated up front with a message that names the key and where the
// value came from, and the reference in docs/ is generated from the same table.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/secret.h"

namespace runpool {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class KeyType { kString, kInt, kDuration, kBool, kList, kSecret };

struct KeySpec {
  std::string key;            // lower_snake_case; RUNPOOL_<KEY upper-cased> in the environment
  KeyType type = KeyType::kString;
  std::string default_value;  // as text; "" means unset
  std::string help;
  int64_t min = 0;            // for kInt and kDuration (milliseconds)
  int64_t max = INT64_MAX;
};

// "250ms", "30s", "5m", "2h", "1d" or a plain number of seconds. nullopt on anything else.
std::optional<Duration> parse_duration(const std::string& text);
std::string format_duration(Duration d);

// A list value: items separated by commas and/or spaces, empty items dropped ("a, b c" → a, b, c).
std::vector<std::string> split_list(const std::string& text);

class Config {
 public:
  explicit Config(std::vector<KeySpec> schema);

  // Sources, applied in the order called (later wins). Each throws ConfigError naming the key.
  // A file holds `key = value` lines; `#` starts a comment; blank lines are ignored.
  void merge_file(const std::string& path);
  void merge_text(const std::string& text, const std::string& origin);
  // Reads RUNPOOL_<KEY> for every key of the schema.
  void merge_env(const std::function<const char*(const char*)>& getenv);
  void set(const std::string& key, const std::string& value, const std::string& origin);

  std::string get_string(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  Duration get_duration(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::vector<std::string> get_list(const std::string& key) const;  // split_list
  Secret get_secret(const std::string& key) const;
  bool has(const std::string& key) const;  // set by a source or by a non-empty default
  std::string origin(const std::string& key) const;  // "default", "RUNPOOL_X", "file:3", "--flag"
  // A value of the right type that a binary's own checks refuse (a relation to another key, a
  // name's form): throws "invalid value for <key> (from <origin>): <why>". `why` must not quote a
  // secret.
  [[noreturn]] void reject(const std::string& key, const std::string& why) const;

  const std::vector<KeySpec>& schema() const { return schema_; }
  // The Markdown reference table of the schema.
  std::string reference_markdown() const;

 private:
  const KeySpec& spec(const std::string& key) const;
  void validate(const KeySpec& spec, const std::string& value, const std::string& origin) const;

  std::vector<KeySpec> schema_;
  std::map<std::string, std::pair<std::string, std::string>> values_;  // key -> (value, origin)
};

}  // namespace runpool
