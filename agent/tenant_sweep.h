// Removing everything one job user (a tenant uid) left on this machine, without knowing what its
// jobs did. Whatever an unprivileged process creates is owned by its uid, so the sweep looks for
// the uid, not for paths: every file and directory it owns on every local, writable filesystem;
// its System V shared memory, semaphores and message queues; the FUSE mounts it made; its
// lingering mark. Its processes are ended before (end_processes_of_user); its POSIX IPC objects are
// files in /dev/shm and /dev/mqueue and go with the files. What is keyed by the uid in the kernel
// (keyrings, namespaces' counts) or by the user's name (crontab, at, mail) dies with the user,
// which is never created again.
//
// The plan (which mounts, which IPC objects) is pure over the text of /proc/self/mountinfo and
// /proc/sysvipc/*; sweep_tenant() reads them and does the deleting.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"

namespace runpool::agent {

struct MountEntry {
  int id = 0;               // the mount's id
  std::string device;       // "major:minor" of its file system
  std::string source_root;  // what of that file system is mounted ("/" unless a bind mount or a subvolume)
  std::string point;    // unescaped (mountinfo writes a space as \040)
  std::string fs_type;  // "ext4", "tmpfs", "fuse.sshfs", …
  bool read_only = false;
  std::optional<uid_t> fuse_owner;  // user_id= of a FUSE mount: who mounted it
};

// The entries of /proc/<pid>/mountinfo; malformed lines are skipped.
std::vector<MountEntry> parse_mountinfo(std::string_view text);

// Filesystems that hold no files a process can leave behind (proc, sysfs, cgroup, …) or that are
// not this machine's (NFS, SMB, …): never walked.
bool is_pseudo_or_remote(const std::string& fs_type);

struct SweepPlan {
  std::vector<std::string> walk;    // mount points to walk, each on its own filesystem only
  std::vector<std::string> detach;  // mounts the uid made (FUSE): detached first
};

// Which mounts to walk for `uid`: the local, writable ones at or under one of `roots` (each
// mount once, the innermost of a point mounted twice being what a path reaches), and the FUSE
// mounts the uid made anywhere. Read-only mounts cannot have gained a file.
SweepPlan plan_sweep(const std::vector<MountEntry>& mounts, const std::vector<std::string>& roots, uid_t uid);

struct SysvObject {
  enum class Kind { kShm, kSem, kMsg } kind = Kind::kShm;
  int id = 0;
};

// The objects of /proc/sysvipc/{shm,sem,msg} (`text` is one of those files) whose owner or
// creator is `uid`.
std::vector<SysvObject> sysv_objects_of(SysvObject::Kind kind, std::string_view text, uid_t uid);

struct SweepReport {
  size_t files = 0;   // entries removed (a removed directory counts with everything in it)
  size_t ipc = 0;     // System V objects removed
  size_t mounts = 0;  // FUSE mounts detached
  size_t walked = 0;  // entries examined
  std::vector<std::string> errors;  // what could not be removed, and why (empty: complete)
};

struct SweepOptions {
  std::vector<std::string> roots = {"/"};
  std::string user_name;  // for the lingering mark; "" skips it
  std::string linger_dir = "/var/lib/systemd/linger";
  std::string mountinfo = "/proc/self/mountinfo";
  std::string sysvipc_dir = "/proc/sysvipc";
  // POSIX message queues exist whether or not their filesystem is mounted: with none mounted, the
  // sweep mounts one privately to look (needs CAP_SYS_ADMIN; failing is an error, not a pass).
  bool check_mqueue = true;
  // The mount table at the assignment's start (mount_baseline.h), kept in this file; "" or no file:
  // `start_mountinfo`, the table's text when the agent started. With neither, new mounts are not
  // looked for. A mount under a root that neither has fails the sweep.
  std::string mount_baseline;
  std::string start_mountinfo;
  // false: a user nothing ever ran as (readied, never handed over) — the mounts added meanwhile
  // are the system's, not its.
  bool check_added_mounts = true;
};

// Removes what `uid` owns, as planned above. Its processes must be gone (else it could create
// more while the walk runs). Never follows a symbolic link; a tree nested too deep for open
// descriptors is moved up and finished later. File-system boundaries below a root are never
// skipped unseen: a btrfs subvolume (its own st_dev on the same mount) is searched like a
// directory, and removed (BTRFS_IOC_SNAP_DESTROY) when it is the uid's or inside its files; a
// mount is walked on its own if the plan has it, and a mount the assignment did not start with (see
// SweepOptions), a mount inside the uid's files, or a boundary the sweep cannot tell is an error.
// The baseline file is removed once a sweep is complete.
// `alive` is called as it goes (the watchdog's pulse). Throws std::invalid_argument for uid 0.
SweepReport sweep_tenant(uid_t uid, const SweepOptions& options, const std::function<void()>& alive);

}  // namespace runpool::agent
