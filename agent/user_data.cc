#include "agent/user_data.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

namespace runpool::agent {
namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
}

}  // namespace

std::string render_user_data(const std::string& tmpl, const std::string& config, const std::string& binary) {
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

}  // namespace runpool::agent
