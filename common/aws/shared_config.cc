#include "common/aws/shared_config.h"
#include "common/text.h"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace runpool::aws {
namespace {

// Python's str.isspace() over ASCII: what str.strip() and the regular expressions' \s take away.
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= '\x1c' && c <= '\x1f');
}

std::string_view strip(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Lines as Python's universal newlines read them: \n, \r\n and a lone \r each end one.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || text[i] == '\r') {
      lines.push_back(text.substr(start, i - start));
      if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < text.size()) lines.push_back(text.substr(start));
  return lines;
}

struct Values {
  std::vector<std::string> lines;  // joined with '\n' at the end, as configparser does
};

std::string join_value(const Values& v) {
  std::string out;
  for (size_t i = 0; i < v.lines.size(); ++i) {
    if (i) out += '\n';
    out += v.lines[i];
  }
  while (!out.empty() && is_space(out.back())) out.pop_back();
  return out;
}

// botocore parses a value that starts on the line after its key as nested `key = value` lines
// and refuses the file when one has no '='.
bool nested_value_ok(const std::string& value) {
  if (value.empty() || value.front() != '\n') return true;
  for (std::string_view line : split_lines(value)) {
    line = strip(line);
    if (!line.empty() && line.find('=') == std::string_view::npos) return false;
  }
  return true;
}

}  // namespace

std::vector<IniSection> parse_ini(std::string_view text, const std::string& origin) {
  using Section = std::vector<std::pair<std::string, Values>>;  // in order, keys unique
  std::vector<std::pair<std::string, Section>> sections;
  Section defaults;
  Section* current = nullptr;
  Values* value = nullptr;  // the option that continuation lines extend
  std::string current_name;
  std::set<std::string> sections_seen;
  std::set<std::pair<std::string, std::string>> options_seen;
  size_t indent_level = 0;
  std::optional<size_t> first_bad_line;
  auto fail = [&](size_t line, const std::string& why) -> SharedConfigError {
    return SharedConfigError(origin + " line " + std::to_string(line) + ": " + why);
  };

  const std::vector<std::string_view> lines = split_lines(text);
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string_view line = lines[n];
    const size_t lineno = n + 1;
    const std::string_view stripped = strip(line);
    const bool comment = !stripped.empty() && (stripped.front() == '#' || stripped.front() == ';');
    if (stripped.empty() || comment) {
      // A blank line inside a value is part of it (trailing ones go at the join); a comment is not.
      if (!comment && value != nullptr) value->lines.emplace_back();
      continue;
    }
    size_t indent = 0;
    while (indent < line.size() && is_space(line[indent])) ++indent;
    if (current != nullptr && value != nullptr && indent > indent_level) {
      value->lines.emplace_back(stripped);
      continue;
    }
    indent_level = indent;
    // A header: '[' then at least one character, up to the line's last ']'.
    if (stripped.front() == '[') {
      size_t close = stripped.rfind(']');
      if (close != std::string_view::npos && close >= 2) {
        std::string name(stripped.substr(1, close - 1));
        value = nullptr;
        if (name == "DEFAULT") {
          current = &defaults;
          current_name = name;
          continue;
        }
        if (!sections_seen.insert(name).second) throw fail(lineno, "section [" + name + "] appears twice");
        sections.emplace_back(name, Section{});
        current = &sections.back().second;
        current_name = name;
        continue;
      }
    }
    if (current == nullptr) throw fail(lineno, "a line before the first [section]");
    size_t delim = stripped.find_first_of("=:");
    if (delim == std::string_view::npos) {
      if (!first_bad_line) first_bad_line = lineno;
      value = nullptr;
      continue;
    }
    std::string key = text::lower(strip(stripped.substr(0, delim)));
    if (key.empty() && !first_bad_line) first_bad_line = lineno;
    if (!options_seen.emplace(current_name, key).second) {
      throw fail(lineno, "key " + key + " appears twice in section [" + current_name + "]");
    }
    current->emplace_back(key, Values{{std::string(strip(stripped.substr(delim + 1)))}});
    value = &current->back().second;
  }
  if (first_bad_line) throw fail(*first_bad_line, "neither a [section] nor a key = value line");

  std::map<std::string, std::string> default_options;
  for (const auto& [key, v] : defaults) default_options[key] = join_value(v);
  std::vector<IniSection> out;
  for (const auto& [name, options] : sections) {
    IniSection s{name, default_options};
    for (const auto& [key, v] : options) s.options[key] = join_value(v);
    out.push_back(std::move(s));
  }
  for (const auto& s : out) {
    for (const auto& [key, v] : s.options) {
      if (!nested_value_ok(v)) {
        throw SharedConfigError(origin + ": key " + key + " of [" + s.name +
                                "] holds indented lines that are not key = value");
      }
    }
  }
  return out;
}

Profiles config_file_profiles(const std::vector<IniSection>& sections) {
  Profiles out;
  for (const auto& s : sections) {
    if (s.name.rfind("profile", 0) == 0) {
      auto words = shell_split(s.name);
      if (words && words->size() == 2) out[(*words)[1]] = s.options;
    } else if (s.name == "default") {
      out["default"] = s.options;
    }
  }
  return out;
}

Profiles credentials_file_profiles(const std::vector<IniSection>& sections) {
  Profiles out;
  for (const auto& s : sections) out[s.name] = s.options;
  return out;
}

Profiles merge_profiles(const Profiles& config, const Profiles& credentials) {
  Profiles out = config;
  for (const auto& [name, keys] : credentials) {
    for (const auto& [key, value] : keys) out[name][key] = value;
  }
  return out;
}

std::optional<std::vector<std::string>> shell_split(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) return std::nullopt;
      word += text[++i];
      in_word = true;
    } else if (c == '\'') {
      size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos) return std::nullopt;
      word.append(text.substr(i + 1, end - i - 1));
      i = end;
      in_word = true;
    } else if (c == '"') {
      size_t j = i + 1;
      for (;; ++j) {
        if (j >= text.size()) return std::nullopt;
        if (text[j] == '"') break;
        if (text[j] == '\\' && j + 1 < text.size() && (text[j + 1] == '"' || text[j + 1] == '\\')) ++j;
        word += text[j];
      }
      i = j;
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

namespace {

std::string home_directory(const GetEnv& getenv) {
  if (const char* home = getenv("HOME"); home && *home) return home;
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "";
}

std::string expand_home(std::string path, const GetEnv& getenv) {
  if (path == "~" || path.rfind("~/", 0) == 0) path = home_directory(getenv) + path.substr(1);
  return path;
}

// The file's text; nullopt when there is no such file.
std::optional<std::string> read_if_present(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    throw SharedConfigError(path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw SharedConfigError(path + ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SharedConfigError(path + ": cannot be read: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

SharedConfigPaths shared_config_paths(const GetEnv& getenv) {
  SharedConfigPaths p;
  const char* config = getenv("AWS_CONFIG_FILE");
  const char* credentials = getenv("AWS_SHARED_CREDENTIALS_FILE");
  p.config = expand_home(config && *config ? config : "~/.aws/config", getenv);
  p.credentials = expand_home(credentials && *credentials ? credentials : "~/.aws/credentials", getenv);
  return p;
}

SharedConfig load_shared_config(const SharedConfigPaths& paths) {
  SharedConfig c;
  c.paths = paths;
  Profiles config, credentials;
  if (auto text = read_if_present(paths.config)) {
    c.config_found = true;
    config = config_file_profiles(parse_ini(*text, paths.config));
  }
  if (auto text = read_if_present(paths.credentials)) {
    c.credentials_found = true;
    credentials = credentials_file_profiles(parse_ini(*text, paths.credentials));
  }
  c.profiles = merge_profiles(config, credentials);
  return c;
}

std::string selected_profile(const GetEnv& getenv, bool* explicit_choice) {
  const char* name = getenv("AWS_PROFILE");
  if (explicit_choice) *explicit_choice = name && *name;
  return name && *name ? name : "default";
}

}  // namespace runpool::aws
