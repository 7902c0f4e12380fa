#include "controller/user_data.h"

#include "common/cloud_init/user_data.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace runpool::controller {
namespace {

bool has_control(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

}  // namespace

std::string agent_config_text(const std::vector<std::pair<std::string, std::string>>& config) {
  std::string out;
  for (const auto& [key, value] : config) {
    bool key_ok = !key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) {
      return std::islower(c) || std::isdigit(c) || c == '_';
    });
    if (!key_ok) throw std::invalid_argument("agent config key '" + key + "' is not lower_snake_case");
    if (has_control(value)) throw std::invalid_argument("agent config value of " + key + " has control characters");
    out += key + " = " + value + "\n";
  }
  return out;
}

std::string render_user_data(const std::string& template_text, const std::string& agent_config,
                             const std::string& agent_binary) {
  // The template's own renderer (cloud-init's side) knows which characters may go where; the limit
  // is on the whole document.
  std::string out = cloud_init::render_user_data(template_text, agent_config, agent_binary);
  if (out.size() > 16 * 1024) {
    throw std::invalid_argument("the rendered user-data is " + std::to_string(out.size()) +
                                " bytes, more than EC2's 16 KiB");
  }
  return out;
}

std::string read_template(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the user-data template " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string locate_template(const std::string& configured, const std::string& packaged, const std::string& self_exe) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (configured != packaged || fs::exists(configured, ec) || self_exe.empty()) return configured;
  const fs::path beside = fs::path(self_exe).parent_path().parent_path() / "share" / "runpool" / "user-data.sh.in";
  return fs::exists(beside, ec) ? beside.string() : configured;
}

}  // namespace runpool::controller
