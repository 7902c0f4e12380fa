#include "agent/install_manifest.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <vector>

#include "agent/safe_path.h"

namespace runpool::agent {

namespace {

int64_t ns(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

// Relative to the directory `dir`, never through a link: an entry a job owns is skipped before it
// is opened, and one replaced by a link meanwhile is not opened either.
void walk(int dir, const std::string& prefix, const std::function<bool(const std::string&, uid_t)>& skip,
          InstallManifest& out, int depth) {
  int dup_fd = fcntl(dir, F_DUPFD_CLOEXEC, 0);
  DIR* d = dup_fd >= 0 ? fdopendir(dup_fd) : nullptr;
  if (!d) {
    if (dup_fd >= 0) close(dup_fd);
    return;
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  }
  closedir(d);
  for (const auto& name : names) {
    const std::string rel = prefix + name;
    struct stat st {};
    if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (skip && skip(rel, st.st_uid)) continue;
    out[rel] = ManifestEntry{st.st_mode, st.st_uid, st.st_gid, static_cast<int64_t>(st.st_size), ns(st.st_ctim),
                             ns(st.st_mtim)};
    if (!S_ISDIR(st.st_mode) || depth >= 64) continue;
    Fd sub(openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub.ok()) walk(sub.get(), rel + "/", skip, out, depth + 1);
  }
}

constexpr char kHex[] = "0123456789abcdef";

std::optional<std::string> unhex(const std::string& h) {
  if (h.empty() || h.size() % 2 != 0) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < h.size(); i += 2) {
    const char* hi = std::strchr(kHex, h[i]);
    const char* lo = std::strchr(kHex, h[i + 1]);
    if (!hi || !lo || !*hi || !*lo) return std::nullopt;
    out.push_back(static_cast<char>((hi - kHex) * 16 + (lo - kHex)));
  }
  return out;
}

}  // namespace

InstallManifest take_manifest(const std::string& root, const std::function<bool(const std::string&, uid_t)>& skip) {
  InstallManifest out;
  Fd fd(open_trusted_dir(root));
  if (fd.ok()) walk(fd.get(), "", skip, out, 0);
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

std::string encode_manifest(const InstallManifest& m) {
  std::ostringstream out;
  for (const auto& [path, e] : m) {
    for (unsigned char c : path) out << kHex[c >> 4] << kHex[c & 15];
    out << ' ' << e.mode << ' ' << e.uid << ' ' << e.gid << ' ' << e.size << ' ' << e.ctime_ns << ' ' << e.mtime_ns
        << '\n';
  }
  return out.str();
}

std::optional<InstallManifest> decode_manifest(const std::string& text) {
  InstallManifest m;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string hex, rest;
    ManifestEntry e;
    if (!(in >> hex >> e.mode >> e.uid >> e.gid >> e.size >> e.ctime_ns >> e.mtime_ns) || (in >> rest)) {
      return std::nullopt;
    }
    auto path = unhex(hex);
    if (!path || !m.emplace(*path, e).second) return std::nullopt;
  }
  if (m.empty() || !text.ends_with('\n')) return std::nullopt;
  return m;
}

}  // namespace runpool::agent
