#include "agent/install_manifest.h"

#include <sys/stat.h>

#include <filesystem>

namespace runpool::agent {

namespace fs = std::filesystem;

namespace {

int64_t ns(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

void walk(const fs::path& dir, const std::string& prefix, const std::function<bool(const std::string&, uid_t)>& skip,
          InstallManifest& out, int depth) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string rel = prefix + it->path().filename().string();
    struct stat st {};
    if (lstat(it->path().c_str(), &st) != 0) continue;
    if (skip && skip(rel, st.st_uid)) continue;
    out[rel] = ManifestEntry{st.st_mode, st.st_uid, st.st_gid, static_cast<int64_t>(st.st_size), ns(st.st_ctim),
                             ns(st.st_mtim)};
    if (S_ISDIR(st.st_mode) && depth < 64) walk(it->path(), rel + "/", skip, out, depth + 1);
  }
}

}  // namespace

InstallManifest take_manifest(const std::string& root, const std::function<bool(const std::string&, uid_t)>& skip) {
  InstallManifest out;
  walk(root, "", skip, out, 0);
  return out;
}

std::optional<std::string> manifest_difference(const InstallManifest& before, const InstallManifest& now) {
  for (const auto& [path, was] : before) {
    auto it = now.find(path);
    if (it == now.end()) return path + ": gone";
    const ManifestEntry& is = it->second;
    if (was == is) continue;
    std::string what;
    auto add = [&](bool differs, const char* name) {
      if (differs) what += (what.empty() ? "" : ", ") + std::string(name);
    };
    add(was.mode != is.mode, "mode");
    add(was.uid != is.uid || was.gid != is.gid, "owner");
    add(was.size != is.size, "size");
    add(was.mtime_ns != is.mtime_ns, "modified");
    add(was.ctime_ns != is.ctime_ns, "changed");
    return path + ": changed (" + what + ")";
  }
  for (const auto& [path, is] : now) {
    if (!before.contains(path)) return path + ": new";
  }
  return std::nullopt;
}

}  // namespace runpool::agent
