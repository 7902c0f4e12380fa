#include "agent/runner_root_ops.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "agent/safe_path.h"

namespace runpool::agent::root_ops {

namespace fs = std::filesystem;

void must(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what + ": " + std::strerror(errno));
}

void remove_path(const fs::path& p) {
  Fd dir(open_trusted_dir(p.parent_path().string()));
  if (!dir.ok() && errno == ENOENT) return;
  must(dir.ok(), "open " + p.parent_path().string());
  remove_at_or_throw(dir.get(), p.filename().string(), p.string());
}

void user_dir(const fs::path& p, const UserIdentity& u, mode_t mode) {
  Fd dir(open_trusted_dir(p.parent_path().string()));
  must(dir.ok(), "open " + p.parent_path().string());
  make_owned_dir_at(dir.get(), p.filename().string(), u.uid, u.gid, mode);
}

std::optional<std::string> unsearchable_ancestor(const fs::path& dir, const UserIdentity& u) {
  fs::path cur = "/";
  for (const auto& part : dir.parent_path().relative_path()) {
    cur /= part;
    struct stat st {};
    if (stat(cur.c_str(), &st) != 0) return std::nullopt;  // created later with 0755
    bool in_group = false;
    for (gid_t g : u.groups) in_group = in_group || g == st.st_gid;
    bool ok = (st.st_uid == u.uid && (st.st_mode & S_IXUSR)) || (in_group && (st.st_mode & S_IXGRP)) ||
              (st.st_mode & S_IXOTH);
    if (!ok) return cur.string();
  }
  return std::nullopt;
}

}  // namespace runpool::agent::root_ops
