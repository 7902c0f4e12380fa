// The AWS shared config and credentials files (~/.aws/config, ~/.aws/credentials), read as the
// AWS CLI reads them: Python's configparser.RawConfigParser (strict), then botocore's mapping of
// sections to profiles. The parsing is pure and tested exhaustively (shared_config_test.cc);
// only load_shared_config touches the file system.
//
// The format, as that parser has it:
// - `[section]` headers: everything between the first `[` and the last `]` of the line, spaces
//   kept; anything after the last `]` is ignored;
// - `key = value` or `key: value` lines (the first `=` or `:` splits); keys are lower-cased and
//   trimmed, values trimmed; a line indented deeper than its key's line continues the value
//   (joined with newlines), which is how nested settings (`s3 =` then indented `k = v` lines) are
//   written;
// - whole-line comments start with `#` or `;` (after any indentation); there are no inline
//   comments: `key = value # note` is the value "value # note";
// - a `[DEFAULT]` section's keys apply to every section that does not set them;
// - a line before any section, a line that is neither header nor key, a key without a name, a
//   section or key given twice in one file: the whole file is refused.
// The config file names profiles `[default]` and `[profile NAME]` (NAME may be quoted as a shell
// word: `[profile "my name"]`); the credentials file names them `[NAME]`. A profile in both files
// takes each key from the credentials file first.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/aws/endpoints.h"

namespace runpool::aws {

class SharedConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct IniSection {
  std::string name;                              // as written between the brackets
  std::map<std::string, std::string> options;    // lower-cased keys; [DEFAULT]'s keys merged in
  bool operator==(const IniSection&) const = default;
};

// The sections of one file in the order they first appear ([DEFAULT] itself is not listed).
// Throws SharedConfigError "<origin> line N: …" for what configparser refuses; the message never
// quotes a value (the file holds secrets).
std::vector<IniSection> parse_ini(std::string_view text, const std::string& origin);

using Profile = std::map<std::string, std::string>;
using Profiles = std::map<std::string, Profile>;

// The profiles of a config file: [default] and [profile NAME]; when both [default] and
// [profile default] appear, the later section wins whole. Other sections (sso-session, services,
// anything else) are not profiles.
Profiles config_file_profiles(const std::vector<IniSection>& sections);
// The profiles of a credentials file: every section, by its name.
Profiles credentials_file_profiles(const std::vector<IniSection>& sections);
// Both files' profiles; a key set in both comes from the credentials file.
Profiles merge_profiles(const Profiles& config, const Profiles& credentials);

// A string split into words as Python's shlex.split (POSIX mode) does: whitespace separates,
// '…' is literal, "…" keeps backslash escapes of " and \ only, a backslash outside quotes escapes
// the next character. nullopt for an unclosed quote or a trailing backslash.
std::optional<std::vector<std::string>> shell_split(std::string_view text);

struct SharedConfigPaths {
  std::string config;       // AWS_CONFIG_FILE, else ~/.aws/config
  std::string credentials;  // AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials
};
// A leading "~/" is the home directory (HOME, else the password database).
SharedConfigPaths shared_config_paths(const GetEnv& getenv = real_getenv);

struct SharedConfig {
  SharedConfigPaths paths;
  bool config_found = false;
  bool credentials_found = false;
  Profiles profiles;  // merged
};
// Reads both files; one that does not exist holds no profiles. Throws SharedConfigError for a file
// that exists but cannot be read or parsed.
SharedConfig load_shared_config(const SharedConfigPaths& paths);

// The profile named by AWS_PROFILE, else "default"; `explicit_choice` tells which.
std::string selected_profile(const GetEnv& getenv, bool* explicit_choice = nullptr);

}  // namespace runpool::aws
