#include "common/cloud_init/user_data.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

namespace runpool::cloud_init {
namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
}

// What a literal block carries verbatim: tab, newline, printable ASCII, and well-formed UTF-8 outside
// the C1 controls (NEL is a YAML 1.1 line break), surrogates, U+2028/U+2029 (line breaks too),
// U+FEFF (a BOM) and U+FFFE/U+FFFF.
bool yaml_printable(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) return false;
      ++i;
      continue;
    }
    const size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    if (n == 0 || c > 0xf4 || i + n > s.size()) return false;
    char32_t cp = c & (0x7f >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    const char32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10ffff || cp < 0xa0 || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0x2028 ||
        cp == 0x2029 || cp == 0xfeff || cp == 0xfffe || cp == 0xffff) {
      return false;
    }
    i += n;
  }
  return true;
}

}  // namespace

std::string render_boot_script(const std::string& tmpl, const std::string& config, const std::string& binary) {
  if (tmpl.find("@AGENT_CONFIG@") == std::string::npos || tmpl.find("@AGENT_BINARY@") == std::string::npos) {
    throw std::invalid_argument("user-data template lacks @AGENT_CONFIG@ or @AGENT_BINARY@");
  }
  if (config.find('\0') != std::string::npos) throw std::invalid_argument("agent config holds a NUL byte");
  std::istringstream lines(config);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == kConfigDelimiter) throw std::invalid_argument("agent config holds the heredoc delimiter line");
  }
  // Goes between single quotes: a plain absolute path only.
  if (!binary.empty() &&
      (binary[0] != '/' || !std::all_of(binary.begin(), binary.end(), [](char c) {
         return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' || c == '-' || c == '+';
       }))) {
    throw std::invalid_argument("agent binary path must be absolute, of letters, digits and / . _ - +");
  }
  std::string text = config;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  std::string out = tmpl;
  replace_all(out, "@AGENT_BINARY@", binary);
  replace_all(out, "@AGENT_CONFIG@", text);
  return out;
}

std::string cloud_config(const std::string& script) {
  if (!yaml_printable(script)) {
    throw std::invalid_argument("the boot script holds control characters or bytes that are not UTF-8");
  }
  std::string out =
      "#cloud-config\n"
      "# runpool: writes the agent's boot script (cloud-init/user-data.sh.in, rendered) and runs it; docs/install.md.\n"
      "write_files:\n"
      "  - path: " + std::string(kBootScriptPath) + "\n"
      "    owner: root:root\n"
      "    permissions: \"0700\"\n";
  // A literal block with an explicit indentation (4 + 2 = column 6: a first line starting with
  // spaces cannot shift it) and keep/strip chomping: the content is the script, byte for byte.
  const bool ends_in_newline = !script.empty() && script.back() == '\n';
  out += std::string("    content: |2") + (ends_in_newline ? "+" : "-") + "\n";
  std::istringstream lines(script);
  std::string line;
  while (std::getline(lines, line)) out += line.empty() ? "\n" : "      " + line + "\n";
  // runcmd's string items are run by sh: the prefix is empty on EC2, the instance's directory on the local cloud.
  out += "runcmd:\n"
         "  - '\"${RUNPOOL_LOCALCLOUD_INSTANCE_DIR:-}" + std::string(kBootScriptPath) + "\"'\n";
  return out;
}

std::string render_user_data(const std::string& tmpl, const std::string& config, const std::string& binary) {
  return cloud_config(render_boot_script(tmpl, config, binary));
}

}  // namespace runpool::cloud_init
