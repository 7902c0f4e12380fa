#include "agent/safe_path.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace runpool::agent {

std::optional<std::vector<std::string>> relative_components(std::string_view path) {
  if (path.empty() || path.front() == '/') return std::nullopt;
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    if (part == "..") return std::nullopt;
    if (!part.empty() && part != ".") out.emplace_back(part);
    start = end + 1;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

int Fd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

int open_beneath(int base, std::string_view rel, int flags, Resolve how) {
  auto parts = relative_components(rel);
  if (!parts) {
    errno = EINVAL;
    return -1;
  }
  flags |= O_CLOEXEC | O_NOFOLLOW;
  if (how == Resolve::kAuto) {
    std::string joined;
    for (const auto& p : *parts) joined += (joined.empty() ? "" : "/") + p;
    struct open_how oh {};
    oh.flags = static_cast<uint64_t>(flags);
    oh.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, base, joined.c_str(), &oh, sizeof oh);
    if (fd >= 0 || errno != ENOSYS) return static_cast<int>(fd);
  }
  // Before Linux 5.6: one directory at a time, none of them a link ("." and ".." never given).
  Fd cur(fcntl(base, F_DUPFD_CLOEXEC, 0));
  if (!cur.ok()) return -1;
  for (size_t i = 0; i + 1 < parts->size(); ++i) {
    Fd next(openat(cur.get(), (*parts)[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.ok()) return -1;
    cur = std::move(next);
  }
  return openat(cur.get(), parts->back().c_str(), flags);
}

std::optional<std::vector<std::string>> names_in(int fd) {
  int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return std::nullopt;
  DIR* d = fdopendir(dup_fd);
  if (!d) {
    const int err = errno;
    close(dup_fd);
    errno = err;
    return std::nullopt;
  }
  rewinddir(d);
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  }
  closedir(d);
  return names;
}

int open_trusted_dir(const std::string& path) {
  return open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

std::optional<EntryStat> stat_at(int dir, const std::string& name) {
  struct statx sx {};
  const int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (name.empty() ? AT_EMPTY_PATH : 0);
  if (statx(dir, name.c_str(), flags, STATX_BASIC_STATS | STATX_MNT_ID, &sx) != 0) return std::nullopt;
  EntryStat st;
  st.mode = sx.stx_mode;
  st.uid = sx.stx_uid;
  st.gid = sx.stx_gid;
  st.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  st.ino = sx.stx_ino;
  st.nlink = sx.stx_nlink;
  if (sx.stx_mask & STATX_MNT_ID) st.mount_id = sx.stx_mnt_id;
  st.mount_root = (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
  return st;
}

bool crosses_boundary(const EntryStat& parent, const EntryStat& child) {
  // A bind mount of the same file system keeps st_dev: the mount id tells it.
  if (child.mount_root || (parent.mount_id && child.mount_id && *parent.mount_id != *child.mount_id)) return true;
  // On one mount, a file may report its layer's device (overlay); a directory with a device of
  // its own is a subvolume, or a mount a kernel without mount ids does not show.
  return S_ISDIR(child.mode) && child.dev != parent.dev;
}

namespace {

// Directories nested deeper than this are moved up to the top before they are emptied: the
// removal keeps one descriptor per level, and a job may nest a million.
constexpr int kRemoveParkDepth = 48;

class Remover {
 public:
  Remover(int top, const EntryStat& top_stat) : top_(top), top_stat_(top_stat) {}

  void remove(int parent, const EntryStat& parent_stat, const std::string& name, const std::string& path, int depth) {
    auto st = stat_at(parent, name);
    if (!st) {
      if (errno != ENOENT) fail(path, "stat");
      return;
    }
    if (crosses_boundary(parent_stat, *st)) {
      errno = EXDEV;
      fail(path, "another file system or mount: left alone");
      return;
    }
    if (!S_ISDIR(st->mode)) {
      if (unlinkat(parent, name.c_str(), 0) != 0 && errno != ENOENT) fail(path, "unlink");
      return;
    }
    if (depth >= kRemoveParkDepth) {
      const std::string parked = ".runpool-remove-" + std::to_string(getpid()) + "-" + std::to_string(++parked_count_);
      if (renameat(parent, name.c_str(), top_, parked.c_str()) == 0) parked_.push_back(parked);
      else fail(path, "move up");
      return;
    }
    Fd fd(openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.ok()) {
      if (errno != ENOENT) fail(path, "open");
      return;
    }
    auto opened = stat_at(fd.get(), "");
    if (!opened || opened->ino != st->ino || opened->dev != st->dev) {
      errno = ESTALE;
      fail(path, "changed while being removed");
      return;
    }
    for (const auto& child : names_in(fd.get()).value_or(std::vector<std::string>{})) {
      remove(fd.get(), *opened, child, path + "/" + child, depth + 1);
    }
    if (unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) fail(path, "rmdir");
  }

  // Trees moved up from too deep, each removed from the top again (and moved up again if deeper).
  void finish() {
    while (!parked_.empty()) {
      std::string name = parked_.back();
      parked_.pop_back();
      remove(top_, top_stat_, name, name, 0);
    }
  }

  std::vector<std::string> errors;

 private:
  void fail(const std::string& path, const char* what) {
    if (errors.size() < 20) errors.push_back(path + ": " + what + ": " + std::strerror(errno));
  }

  int top_;
  EntryStat top_stat_;
  std::vector<std::string> parked_;
  size_t parked_count_ = 0;
};

}  // namespace

std::vector<std::string> remove_at(int dir, const std::string& name) {
  auto top = stat_at(dir, "");
  if (!top) return {name + ": stat of its directory: " + std::strerror(errno)};
  Remover r(dir, *top);
  r.remove(dir, *top, name, name, 0);
  r.finish();
  return r.errors;
}

void remove_at_or_throw(int dir, const std::string& name, const std::string& what) {
  auto errors = remove_at(dir, name);
  if (!errors.empty()) {
    throw std::runtime_error("cannot remove " + what + " (" + std::to_string(errors.size()) + " errors; first: " +
                             errors.front() + ")");
  }
}

void make_owned_dir_at(int dir, const std::string& name, uid_t uid, gid_t gid, mode_t mode) {
  auto st = stat_at(dir, name);
  if (st && !S_ISDIR(st->mode)) remove_at_or_throw(dir, name, name);
  if (mkdirat(dir, name.c_str(), mode) != 0 && errno != EEXIST) {
    throw std::runtime_error("mkdir " + name + ": " + std::strerror(errno));
  }
  Fd fd(openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.ok()) throw std::runtime_error("open " + name + ": " + std::strerror(errno));
  if (fchown(fd.get(), uid, gid) != 0) throw std::runtime_error("chown " + name + ": " + std::strerror(errno));
  if (fchmod(fd.get(), mode) != 0) throw std::runtime_error("chmod " + name + ": " + std::strerror(errno));
}

}  // namespace runpool::agent
