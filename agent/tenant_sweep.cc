#include "agent/tenant_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <grp.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/btrfs.h>
#include <linux/magic.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "agent/mount_baseline.h"
#include "agent/safe_path.h"
#include "agent/state_file.h"

namespace runpool::agent {

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_mount_field(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string_view oct = s.substr(i + 1, 3);
      if (oct.size() == 3 && std::all_of(oct.begin(), oct.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(static_cast<char>((oct[0] - '0') * 64 + (oct[1] - '0') * 8 + (oct[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    out.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool has_option(const std::string& options, const std::string& name) {
  for (const auto& o : split(options, ',')) {
    if (o == name) return true;
  }
  return false;
}

// "/a/b" is at or under "/a"; "/ab" is not.
bool at_or_under(const std::string& path, const std::string& root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/');
}

std::string normalize(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

}  // namespace

std::vector<MountEntry> parse_mountinfo(std::string_view text) {
  std::vector<MountEntry> out;
  for (const auto& line : split(text, '\n')) {
    // id parent major:minor root point options [optional…] - type source super-options
    std::vector<std::string> f;
    for (const auto& w : split(line, ' ')) {
      if (!w.empty()) f.push_back(w);
    }
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 7 || dash == f.end() || dash - f.begin() < 6 || f.end() - dash < 3) continue;
    MountEntry m;
    try {
      m.id = std::stoi(f[0]);
    } catch (const std::exception&) {
      continue;
    }
    m.device = f[2];
    m.source_root = unescape_mount_field(f[3]);
    m.point = unescape_mount_field(f[4]);
    if (m.point.empty() || m.point[0] != '/') continue;
    m.fs_type = *(dash + 1);
    const std::string& super = *(dash + 3);
    m.read_only = has_option(f[5], "ro") || has_option(super, "ro");
    if (m.fs_type == "fuse" || m.fs_type.rfind("fuse.", 0) == 0 || m.fs_type == "fuseblk") {
      for (const auto& o : split(super, ',')) {
        if (o.rfind("user_id=", 0) == 0) {
          try {
            m.fuse_owner = static_cast<uid_t>(std::stoul(o.substr(8)));
          } catch (const std::exception&) {
          }
        }
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

bool is_pseudo_or_remote(const std::string& t) {
  static const std::set<std::string> kSkip = {
      // Kernel views and control filesystems: nothing a process leaves lives there.
      "proc", "sysfs", "cgroup", "cgroup2", "devpts", "debugfs", "tracefs", "securityfs", "pstore", "bpf",
      "configfs", "fusectl", "binfmt_misc", "efivarfs", "nsfs", "autofs", "rpc_pipefs", "selinuxfs", "ramfs_kernel",
      // Another machine's files: sweeping them is not this instance's business (and could be slow).
      "nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "9p", "afs", "lustre"};
  if (kSkip.contains(t)) return true;
  // A FUSE mount is someone's daemon: the tenant's own are detached, others are not walked.
  return t == "fuse" || t == "fuseblk" || t.rfind("fuse.", 0) == 0;
}

SweepPlan plan_sweep(const std::vector<MountEntry>& mounts, const std::vector<std::string>& roots, uid_t uid) {
  // A point mounted twice is what was mounted last.
  std::map<std::string, MountEntry> visible;
  for (const auto& m : mounts) visible[m.point] = m;
  SweepPlan plan;
  for (const auto& [point, m] : visible) {
    if (m.fuse_owner && *m.fuse_owner == uid) plan.detach.push_back(point);
  }
  std::vector<std::string> rs;
  for (const auto& r : roots) rs.push_back(normalize(r));
  std::sort(rs.begin(), rs.end());
  rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
  std::vector<std::string> kept;
  for (const auto& r : rs) {
    bool covered = false;
    for (const auto& k : kept) covered = covered || at_or_under(r, k);
    if (!covered) kept.push_back(r);
  }
  auto walkable = [&](const MountEntry& m) {
    return !m.read_only && !is_pseudo_or_remote(m.fs_type) && !(m.fuse_owner && *m.fuse_owner == uid);
  };
  std::set<std::string> walk;
  for (const auto& r : kept) {
    // The filesystem the root itself is on: the mount with the longest point above it.
    const MountEntry* home = nullptr;
    for (const auto& [point, m] : visible) {
      if (at_or_under(r, point) && (!home || point.size() > home->point.size())) home = &m;
    }
    if (home && walkable(*home)) walk.insert(r);
    for (const auto& [point, m] : visible) {
      if (point != r && at_or_under(point, r) && walkable(m)) walk.insert(point);
    }
  }
  plan.walk.assign(walk.begin(), walk.end());
  return plan;
}

std::vector<SysvObject> sysv_objects_of(SysvObject::Kind kind, std::string_view text, uid_t uid) {
  std::vector<SysvObject> out;
  auto lines = split(text, '\n');
  if (lines.empty()) return out;
  auto words = [](const std::string& line) {
    std::vector<std::string> w;
    std::istringstream in(line);
    for (std::string s; in >> s;) w.push_back(s);
    return w;
  };
  const auto header = words(lines[0]);
  const char* id_name = kind == SysvObject::Kind::kShm ? "shmid" : kind == SysvObject::Kind::kSem ? "semid" : "msqid";
  auto column = [&](const std::string& name) -> std::optional<size_t> {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) return std::nullopt;
    return static_cast<size_t>(it - header.begin());
  };
  auto id_col = column(id_name), uid_col = column("uid"), cuid_col = column("cuid");
  if (!id_col || !uid_col || !cuid_col) return out;
  for (size_t i = 1; i < lines.size(); ++i) {
    auto w = words(lines[i]);
    if (w.size() <= std::max({*id_col, *uid_col, *cuid_col})) continue;
    try {
      const auto owner = std::stoul(w[*uid_col]), creator = std::stoul(w[*cuid_col]);
      if (owner == uid || creator == uid) out.push_back({kind, std::stoi(w[*id_col])});
    } catch (const std::exception&) {
    }
  }
  return out;
}

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Directories nested deeper than this below a walked root are moved up to it before they are
// emptied: the walk keeps one descriptor per level, and a job may nest a million levels.
constexpr int kParkDepth = 48;
// Directories not owned by the uid are searched to this depth; an image deeper than that is an
// error reported, not a crash.
constexpr int kMaxSearchDepth = 512;

// A btrfs subvolume's root directory: inode 256 (BTRFS_FIRST_FREE_OBJECTID) on a btrfs.
bool is_btrfs_subvolume(int fd) {
  struct statfs sf {};
  struct stat st {};
  return fstatfs(fd, &sf) == 0 && sf.f_type == BTRFS_SUPER_MAGIC && fstat(fd, &st) == 0 && st.st_ino == 256;
}

class Walker {
 public:
  // `mount_points`: the mount table's points, for a kernel that does not say an entry's mount.
  Walker(uid_t uid, SweepReport& report, const std::function<void()>& alive, std::set<std::string> mount_points = {})
      : uid_(uid), r_(report), alive_(alive), mount_points_(std::move(mount_points)) {}

  void walk(const std::string& root) {
    // The root's every component a plain directory: a mount point's path comes from the kernel,
    // a configured root is the operator's; a link on the way is refused, not followed.
    Fd slash(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    Fd fd(root == "/" ? fcntl(slash.get(), F_DUPFD_CLOEXEC, 0)
                      : open_beneath(slash.get(), root.substr(1), O_RDONLY | O_DIRECTORY));
    if (!fd.ok()) {
      if (errno != ENOENT) error(root, errno == ELOOP || errno == ENOTDIR ? "a symbolic link on its way" : "open");
      return;
    }
    auto st = stat_at(fd.get(), "");
    if (!st) {
      error(root, "stat");
      return;
    }
    top_fd_ = fd.get();
    top_ = root;
    if (st->uid == uid_ && root != "/") {
      // The root itself is the tenant's (a walked mount it made writable to itself): its contents go.
      empty_dir(fd.get(), root, 0);
    } else {
      search(fd.get(), root, 0);
    }
    // Trees moved up from too deep, each emptied from the top again (and moved up again if deeper).
    while (!parked_.empty()) {
      std::string name = parked_.back();
      parked_.pop_back();
      remove_dir(top_fd_, name, join(top_, name), 0, false);
    }
  }

 private:
  static std::string join(const std::string& dir, const std::string& name) {
    return dir == "/" ? "/" + name : dir + "/" + name;
  }
  void error(const std::string& path, const char* what) {
    if (r_.errors.size() < 50) r_.errors.push_back(path + ": " + what + ": " + std::strerror(errno));
  }
  void pulse() {
    if (++r_.walked % 4096 == 0 && alive_) alive_();
  }

  // Names in the directory `fd`; none, and an error, when it cannot be read.
  std::vector<std::string> list(int fd, const std::string& path) {
    auto names = names_in(fd);
    if (!names) {
      error(path, "read");
      return {};
    }
    return *names;
  }

  enum class Boundary { kNone, kMount, kSubvolume, kUnknown };

  // What separates the entry `name` (`st`) of the directory `fd` (`here`) from it.
  Boundary boundary(int fd, const std::string& name, const std::string& path, const EntryStat& here,
                    const EntryStat& st) {
    const bool known_mount = here.mount_id && st.mount_id;
    if (st.mount_root || (known_mount && *here.mount_id != *st.mount_id) ||
        (!known_mount && mount_points_.contains(path))) {
      return Boundary::kMount;
    }
    // The same mount: a file reports its own device on some file systems (overlay); a directory
    // with another device is a subvolume, or something this sweep does not know.
    if (st.dev == here.dev || !S_ISDIR(st.mode)) return Boundary::kNone;
    Fd sub(openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    return sub.ok() && is_btrfs_subvolume(sub.get()) ? Boundary::kSubvolume : Boundary::kUnknown;
  }

  // Calls `f(name, path, st, subvolume)` for each entry of the directory `fd` still there. A mount
  // point is skipped (the plan walks it, or says why not); inside the job user's own files
  // (`inside_tenant`) it is an error, as is a boundary the sweep cannot tell.
  template <typename F>
  void each_entry(int fd, const std::string& path, bool inside_tenant, F&& f) {
    auto here = stat_at(fd, "");
    if (!here) {
      error(path, "stat");
      return;
    }
    for (const auto& name : list(fd, path)) {
      pulse();
      const std::string child = join(path, name);
      auto st = stat_at(fd, name);
      if (!st) {
        if (errno != ENOENT) error(child, "stat");
        continue;
      }
      const Boundary b = boundary(fd, name, child, *here, *st);
      if (b == Boundary::kMount) {
        if (inside_tenant) {
          errno = EBUSY;
          error(child, "a mount point inside the job user's files");
        }
        continue;
      }
      if (b == Boundary::kUnknown) {
        errno = EXDEV;
        error(child, "another file system on the same mount, neither a mount point nor a btrfs subvolume");
        continue;
      }
      f(name, child, *st, b == Boundary::kSubvolume);
    }
  }

  void search(int fd, const std::string& path, int depth) {
    each_entry(fd, path, false, [&](const std::string& name, const std::string& child, const EntryStat& st, bool subvolume) {
      if (st.uid == uid_) {
        remove_entry(fd, name, child, st, depth, subvolume);
        return;
      }
      if (!S_ISDIR(st.mode)) return;
      if (depth >= kMaxSearchDepth) {
        errno = ELOOP;
        error(child, "too deep to search");
        return;
      }
      // Another's directory, a subvolume too: searched, never skipped.
      Fd sub(openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub.ok()) {
        if (errno != ENOENT) error(child, "open");
        return;
      }
      search(sub.get(), child, depth + 1);
    });
  }

  // Deletes everything in the directory `fd` (all of it is the tenant's: it owns the directory).
  void empty_dir(int fd, const std::string& path, int depth) {
    each_entry(fd, path, true, [&](const std::string& name, const std::string& child, const EntryStat& st, bool subvolume) {
      remove_entry(fd, name, child, st, depth, subvolume);
    });
  }

  // Removes the entry `name` of the directory `fd` (at `depth`), a whole tree if it is a directory.
  void remove_entry(int fd, const std::string& name, const std::string& path, const EntryStat& st, int depth,
                    bool subvolume) {
    if (S_ISDIR(st.mode)) {
      remove_dir(fd, name, path, depth + 1, subvolume);
    } else if (unlinkat(fd, name.c_str(), 0) == 0) {
      ++r_.files;
    } else if (errno != ENOENT) {
      error(path, "unlink");
    }
  }

  void remove_dir(int parent, const std::string& name, const std::string& path, int depth, bool subvolume) {
    if (subvolume) {
      // Deleted whole by its parent's descriptor (root's right, CAP_SYS_ADMIN), whatever is in it;
      // one holding another subvolume is emptied first, below.
      struct btrfs_ioctl_vol_args args {};
      if (name.size() < sizeof args.name) {
        std::memcpy(args.name, name.c_str(), name.size());
        if (ioctl(parent, BTRFS_IOC_SNAP_DESTROY, &args) == 0) {
          ++r_.files;
          return;
        }
      }
    }
    if (depth >= kParkDepth && !subvolume) {
      const std::string parked = ".runpool-sweep-" + std::to_string(getpid()) + "-" + std::to_string(++parked_count_);
      if (renameat(parent, name.c_str(), top_fd_, parked.c_str()) == 0) {
        parked_.push_back(parked);
        return;
      }
      error(path, "move up");
      return;
    }
    Fd fd(openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.ok()) {
      if (errno != ENOENT) error(path, "open");
      return;
    }
    empty_dir(fd.get(), path, depth);
    fd = Fd();
    // An empty subvolume goes with rmdir too (Linux 4.18).
    if (unlinkat(parent, name.c_str(), AT_REMOVEDIR) == 0) {
      ++r_.files;
    } else if (errno != ENOENT) {
      error(path, subvolume ? "delete the btrfs subvolume" : "rmdir");
    }
  }

  uid_t uid_;
  SweepReport& r_;
  const std::function<void()>& alive_;
  std::set<std::string> mount_points_;
  int top_fd_ = -1;
  std::string top_;
  std::vector<std::string> parked_;
  size_t parked_count_ = 0;
};

// POSIX message queues live in the IPC namespace's mqueue filesystem, mounted or not (systemd
// mounts it at /dev/mqueue). Not mounted: a child in a mount namespace of its own mounts it, walks
// it and reports over a pipe how many entries it removed (-1: it could not).
void sweep_unmounted_mqueue(uid_t uid, SweepReport& report, const std::function<void()>& alive) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    report.errors.push_back(std::string("POSIX message queues: pipe: ") + std::strerror(errno));
    return;
  }
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    long long removed = -1;
    char dir[] = "/tmp/runpool-mqueue-XXXXXX";
    if (unshare(CLONE_NEWNS) == 0 && mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 && mkdtemp(dir) &&
        mount("mqueue", dir, "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0) {
      SweepReport sub;
      std::function<void()> none;
      Walker(uid, sub, none).walk(dir);
      removed = sub.errors.empty() ? static_cast<long long>(sub.files) : -1;
      umount2(dir, MNT_DETACH);
    }
    if (dir[sizeof dir - 2] != 'X') rmdir(dir);
    if (write(fds[1], &removed, sizeof removed) != sizeof removed) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  long long removed = -1;
  if (child > 0) {
    if (read(fds[0], &removed, sizeof removed) != sizeof removed) removed = -1;
    int status = 0;
    waitpid(child, &status, 0);
  }
  close(fds[0]);
  if (alive) alive();
  if (removed < 0) {
    report.errors.push_back(
        "POSIX message queues: no mqueue filesystem is mounted (mount it at /dev/mqueue) and one could not be "
        "mounted to look");
  } else {
    report.files += static_cast<size_t>(removed);
  }
}

}  // namespace

SweepReport sweep_tenant(uid_t uid, const SweepOptions& o, const std::function<void()>& alive) {
  if (uid == 0) throw std::invalid_argument("refusing to sweep root's files");
  SweepReport report;
  const SweepPlan plan = plan_sweep(parse_mountinfo(read_file(o.mountinfo)), o.roots, uid);
  for (const auto& point : plan.detach) {
    if (umount2(point.c_str(), MNT_DETACH) == 0) {
      ++report.mounts;
    } else if (report.errors.size() < 50) {
      report.errors.push_back(point + ": detach: " + std::strerror(errno));
    }
  }
  const auto mounts = parse_mountinfo(read_file(o.mountinfo));
  std::set<std::string> points;
  for (const auto& m : mounts) points.insert(m.point);
  for (const auto& root : plan.walk) Walker(uid, report, alive, points).walk(root);
  // A mount the assignment did not start with (its own FUSE mounts detached above).
  std::optional<std::string> start = o.mount_baseline.empty() ? std::nullopt : read_state_file(o.mount_baseline);
  if (!start && !o.start_mountinfo.empty()) start = o.start_mountinfo;
  if (start && o.check_added_mounts) {
    if (auto added = mounts_added(parse_mountinfo(*start), mounts, o.roots, uid); !added.empty()) {
      report.errors.push_back("mounted during the assignment under a swept root (what it covers or holds was not "
                              "looked at): " + describe_mounts(added));
    }
  }
  if (o.check_mqueue &&
      std::none_of(mounts.begin(), mounts.end(), [](const MountEntry& m) { return m.fs_type == "mqueue"; })) {
    sweep_unmounted_mqueue(uid, report, alive);
  }

  using Kind = SysvObject::Kind;
  std::vector<SysvObject> objects;
  for (auto [kind, file] : {std::pair{Kind::kShm, "shm"}, std::pair{Kind::kSem, "sem"}, std::pair{Kind::kMsg, "msg"}}) {
    for (const auto& obj : sysv_objects_of(kind, read_file(o.sysvipc_dir + "/" + file), uid)) objects.push_back(obj);
  }
  if (!objects.empty()) {
    // Removed by a child that takes the uid: an owner may remove its objects, while root needs
    // CAP_SYS_ADMIN, which the agent's unit does not grant. The exit code counts the failures.
    pid_t child = fork();
    if (child == 0) {
      if (setgroups(0, nullptr) != 0 || setgid(static_cast<gid_t>(uid)) != 0 || setuid(uid) != 0) _exit(255);
      int failed = 0;
      for (const auto& obj : objects) {
        int rc = obj.kind == Kind::kShm   ? shmctl(obj.id, IPC_RMID, nullptr)
                 : obj.kind == Kind::kSem ? semctl(obj.id, 0, IPC_RMID)
                                          : msgctl(obj.id, IPC_RMID, nullptr);
        if (rc != 0 && errno != EINVAL && errno != EIDRM) ++failed;
      }
      _exit(std::min(failed, 254));
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      report.errors.push_back("System V IPC: " + std::to_string(objects.size()) + " objects, " +
                              (child < 0 ? std::string("cannot fork")
                               : WIFEXITED(status) && WEXITSTATUS(status) == 255
                                   ? std::string("cannot take the uid")
                                   : std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + " not removed"));
    } else {
      report.ipc = objects.size();
    }
  }
  if (!o.user_name.empty()) {
    // `loginctl enable-linger` keeps a user's systemd manager running with no session.
    const std::string mark = o.linger_dir + "/" + o.user_name;
    if (unlink(mark.c_str()) == 0) ++report.files;
  }
  // Complete: the next assignment keeps its own start.
  if (report.errors.empty() && !o.mount_baseline.empty() && unlink(o.mount_baseline.c_str()) != 0 && errno != ENOENT) {
    report.errors.push_back(o.mount_baseline + ": remove: " + std::strerror(errno));
  }
  return report;
}

}  // namespace runpool::agent
