// Root's operations on trees a job can write (the runner root's `_work`, `_home`, `_diag`, the
// caches it keeps): every one is made relative to a directory descriptor the agent trusts, and
// never follows a symbolic link a job could have planted in any component. A job that swaps
// `_work` (or `_work/_tool`, or anything it owns) for a link to `/etc` then makes the operation
// fail, not land in `/etc`.
//
// Trusted paths — the configured runner root, its parent, the cache store beside it — have only
// root-owned components and are opened by name (the last component without following a link).
// Below them: openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) where the kernel has it (Linux 5.6),
// else one openat(O_NOFOLLOW) per component.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace runpool::agent {

// A relative path's components ("a/./b//c" → a, b, c); nullopt for an absolute path, one with "..",
// or none at all: what a job-writable tree is reached by never climbs out of its trusted base.
std::optional<std::vector<std::string>> relative_components(std::string_view path);

// An owned file descriptor, closed once.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  int release();

 private:
  int fd_ = -1;
};

enum class Resolve { kAuto, kPerComponent };  // kPerComponent: the fallback, forced (tests)

// Opens `rel` below the directory `base` (O_CLOEXEC added; every component, the last one too, not
// followed if it is a link; every one but the last a directory). -1 with errno (ELOOP for a link,
// EXDEV/ELOOP for a way out of `base`) when it cannot.
int open_beneath(int base, std::string_view rel, int flags, Resolve how = Resolve::kAuto);

// What statx says of an entry, not following a link.
struct EntryStat {
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  dev_t dev = 0;
  ino_t ino = 0;
  nlink_t nlink = 0;
  std::optional<uint64_t> mount_id;  // the mount it is on (Linux 5.8; nullopt before)
  bool mount_root = false;           // the root of a mount (Linux 5.8)
};

// The entry `name` of the directory `dir` ("" for `dir` itself). nullopt with errno.
std::optional<EntryStat> stat_at(int dir, const std::string& name);

// Is `child`, an entry of the directory `parent`, on another mount or file system (a mount point,
// a bind mount, a btrfs subvolume)? A non-directory's own device on the same mount (an overlay's
// layer) is not a boundary.
bool crosses_boundary(const EntryStat& parent, const EntryStat& child);

// The names in the directory `fd` ("." and ".." left out), read through a duplicate so the caller
// keeps `fd` and its position. nullopt with errno when it cannot be read.
std::optional<std::vector<std::string>> names_in(int fd);

// A trusted directory, by its absolute path (its last component not followed). -1 with errno.
int open_trusted_dir(const std::string& path);

// Removes the entry `name` of the directory `dir` — a whole tree if it is a directory — never
// following a link and never crossing into another file system (a boundary is an error, left as
// it is). A tree nested too deep for descriptors is moved up to `dir` and finished from there.
// Returns what could not be removed (empty: gone, or was not there).
std::vector<std::string> remove_at(int dir, const std::string& name);

// remove_at(), throwing std::runtime_error naming `what` and the first problem.
void remove_at_or_throw(int dir, const std::string& name, const std::string& what);

// `name` in the directory `dir` as a directory owned by uid:gid with `mode`: created if missing, an
// entry of another type (a link a job planted) removed first. Throws std::runtime_error.
void make_owned_dir_at(int dir, const std::string& name, uid_t uid, gid_t gid, mode_t mode);

}  // namespace runpool::agent
