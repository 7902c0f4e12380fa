#include "controller/config_file.h"

#include <filesystem>
#include <system_error>

namespace runpool::controller {

std::string config_file_to_read(const std::string& explicit_file, const std::string& default_file) {
  if (!explicit_file.empty()) return explicit_file;
  std::error_code ec;
  // symlink_status: a dangling symlink at the default path is still the operator's file (and an error).
  auto st = std::filesystem::symlink_status(default_file, ec);
  if (ec || st.type() == std::filesystem::file_type::not_found) return "";
  return default_file;
}

}  // namespace runpool::controller
