#include "agent/mount_baseline.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "agent/state_file.h"

namespace runpool::agent {

namespace {

// "/a/b" is at or under "/a"; "/ab" is not.
bool at_or_under_root(const std::string& path, std::string root) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root == "/") return !path.empty() && path[0] == '/';
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/');
}

auto key(const MountEntry& m) { return std::tie(m.id, m.device, m.fs_type, m.source_root, m.point); }

}  // namespace

std::vector<MountEntry> mounts_added(const std::vector<MountEntry>& start, const std::vector<MountEntry>& now,
                                     const std::vector<std::string>& roots, uid_t uid) {
  std::set<std::tuple<const int&, const std::string&, const std::string&, const std::string&, const std::string&>> had;
  for (const auto& m : start) had.insert(key(m));
  std::vector<MountEntry> out;
  for (const auto& m : now) {
    if (had.contains(key(m)) || (m.fuse_owner && *m.fuse_owner == uid)) continue;
    bool swept = false;
    for (const auto& r : roots) swept = swept || at_or_under_root(m.point, r);
    if (swept) out.push_back(m);
  }
  return out;
}

std::string describe_mounts(const std::vector<MountEntry>& mounts) {
  std::string out;
  for (const auto& m : mounts) out += (out.empty() ? "" : ", ") + std::string("a ") + m.fs_type + " at " + m.point;
  return out;
}

void record_mount_baseline(const std::string& file, const std::string& mountinfo) {
  if (file.empty()) return;
  std::ifstream in(mountinfo, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in || parse_mountinfo(ss.str()).empty()) throw std::runtime_error("cannot read the mount table " + mountinfo);
  // Beside the runner root, whose parent a first assignment may not have made yet.
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
  write_state_file(file, ss.str());
}

}  // namespace runpool::agent
