// A mount namespace of the calling process's own, its propagation private: what a test mounts
// there (a btrfs loop file system, a tmpfs over /tmp) no other process on the host sees, and it
// goes with the process. unshare(CLONE_NEWNS) is refused to a process with more than one thread,
// so call it first (from a static initializer, or before any thread starts).
#pragma once

#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace runpool::testing {

// "" once the namespace is made; else why it cannot be (needs root).
inline std::string enter_private_mounts() {
  if (geteuid() != 0) return "needs root (mount)";
  if (unshare(CLONE_NEWNS) != 0) return "cannot unshare a mount namespace: " + std::string(std::strerror(errno));
  if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return "cannot make mounts private: " + std::string(std::strerror(errno));
  }
  return "";
}

}  // namespace runpool::testing
