#include "agent/pre_run_boot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "agent/state_file.h"

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRunningDetail =
    "the agent stopped while the script ran on this boot (it is not started twice on one boot)";

}  // namespace

std::string current_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::string pre_run_state_file(const std::string& instance_id) { return "/run/runpool/pre-run-" + instance_id; }

std::optional<PreRunResult> load_boot_result(const std::string& path, const std::string& boot_id) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line, file_boot, status, detail;
  bool has_boot = false;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "boot_id") {
      file_boot = value;
      has_boot = true;
    } else if (key == "pre_run") {
      status = value;
    } else if (key == "detail") {
      detail = value;
    }
  }
  if (!has_boot || file_boot != boot_id) return std::nullopt;
  PreRunResult r;
  if (status == "running") {
    r.status = pool::PreRun::kFailed;
    r.detail = kRunningDetail;
    return r;
  }
  auto parsed = pool::parse_pre_run(status);
  if (!parsed) {
    spdlog::warn("{}: unreadable pre-run state; ignoring it", path);
    return std::nullopt;
  }
  r.status = *parsed;
  r.detail = clean_text(detail, kPreRunDetailMax);
  return r;
}

void save_boot_result(const std::string& path, const std::string& boot_id, const std::string& status,
                      const std::string& detail) {
  const fs::path target(path);
  std::error_code ec;
  if (!fs::exists(target.parent_path(), ec)) {
    fs::create_directories(target.parent_path(), ec);
    if (ec) throw std::runtime_error("cannot create " + target.parent_path().string() + ": " + ec.message());
    fs::permissions(target.parent_path(), fs::perms::owner_all, ec);
  }
  std::ostringstream text;
  text << "boot_id " << boot_id << "\npre_run " << status << "\ndetail " << clean_text(detail, kPreRunDetailMax)
       << "\n";
  const std::string body = text.str();
  write_state_file(path, body);
}

PreRunResult run_pre_run_once(const PreRunOptions& o, const std::string& state_file, const std::string& boot_id,
                              const std::function<void()>& alive, const std::function<bool()>& cancelled) {
  if (auto earlier = load_boot_result(state_file, boot_id)) {
    spdlog::info("pre-run script: already run on this boot: {} ({})", pool::pre_run_name(earlier->status),
                 earlier->detail);
    return *earlier;
  }
  // Without the state file the script still runs; only a restarted agent would run it again.
  auto keep = [&](const std::string& status, const std::string& detail) {
    try {
      save_boot_result(state_file, boot_id, status, detail);
    } catch (const std::exception& e) {
      spdlog::warn("pre-run state: {}", e.what());
    }
  };
  keep("running", "");
  PreRunResult r = run_pre_run_script(o, alive, cancelled);
  if (r.cancelled) {
    std::error_code ec;
    fs::remove(state_file, ec);
    return r;
  }
  keep(std::string(pool::pre_run_name(r.status)), r.detail);
  return r;
}

}  // namespace runpool::agent
