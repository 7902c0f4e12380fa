#include "controller/github_actions.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "common/log.h"

namespace runpool::controller {

std::string github_output_text(const Outputs& outputs, const std::function<std::string()>& random) {
  std::string out;
  for (const auto& [name, value] : outputs) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
        })) {
      throw std::invalid_argument("bad output name '" + name + "'");
    }
    std::string delimiter;
    for (int i = 0; i < 100 && (delimiter.empty() || value.find(delimiter) != std::string::npos); ++i) {
      delimiter = "ghadelimiter_" + random();
    }
    if (value.find(delimiter) != std::string::npos) throw std::runtime_error("no delimiter for output " + name);
    out += name + "<<" + delimiter + "\n" + value + "\n" + delimiter + "\n";
  }
  return out;
}

void append_to_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::app | std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  f << text;
  f.flush();
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c != '`') {
      out += c;
    }
  }
  return out;
}

std::string markdown_code(const std::string& text) {
  std::string out = printable(text, 600);  // control characters as '?', whole UTF-8 sequences
  std::replace(out.begin(), out.end(), '`', '\'');
  return "`" + out + "`";
}

ActionsFiles actions_files(const std::function<const char*(const char*)>& getenv) {
  ActionsFiles f;
  if (const char* v = getenv("GITHUB_OUTPUT"); v && *v) f.output = v;
  if (const char* v = getenv("GITHUB_STEP_SUMMARY"); v && *v) f.summary = v;
  return f;
}

}  // namespace runpool::controller
