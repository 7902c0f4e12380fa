// The mounts an assignment started with, so that its end can tell a mount that appeared meanwhile.
// A new mount under a swept root can hide what a job left beneath its mount point, or hold files
// of its own the sweep was never told about: the cleaning fails rather than report clean for a
// place it did not look at. The table is kept in a file (root's, beside the runner root) from the
// assignment's start, so an agent restarted in between still has it; without one, the mount table
// the agent saw when it started stands in.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "agent/tenant_sweep.h"

namespace runpool::agent {

// The mounts at or under one of `roots` in `now` that `start` did not have — the same mount (id,
// device, file system type and source root) at the same point — other than FUSE mounts of `uid`
// (the sweep detaches those).
std::vector<MountEntry> mounts_added(const std::vector<MountEntry>& start, const std::vector<MountEntry>& now,
                                     const std::vector<std::string>& roots, uid_t uid);

// "a tmpfs at /tmp/x, a btrfs at /var/tmp/y": for an error message.
std::string describe_mounts(const std::vector<MountEntry>& mounts);

// Keeps the mount table (`mountinfo`'s text) in `file`, replacing any kept before: called when an
// assignment's job user is about to be made, when no job user has run since the last sweep.
// Throws std::runtime_error when it cannot.
void record_mount_baseline(const std::string& file, const std::string& mountinfo = "/proc/self/mountinfo");

}  // namespace runpool::agent
