// The filesystem steps LocalRunnerHost takes in and beside the runner root, as root: each opens
// the parent directory it acts in without following a link a job could have planted there
// (safe_path.h), and throws std::runtime_error with the reason when it cannot.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "agent/process.h"

namespace runpool::agent::root_ops {

// Throws `what: strerror(errno)` unless `ok`.
void must(bool ok, const std::string& what);

// Removes `p`, an entry of the runner root or of its parent (both root's), relative to its
// directory: never through a link a job planted in the tree, never into another file system.
void remove_path(const std::filesystem::path& p);

// Creates `p` (if missing) as a directory owned by the user; an existing non-directory (or a
// symlink the runner planted) is replaced, never followed.
void user_dir(const std::filesystem::path& p, const UserIdentity& u, mode_t mode);

// The first directory from / down to `dir`'s parent that `u` cannot search (nullopt: none).
std::optional<std::string> unsearchable_ancestor(const std::filesystem::path& dir, const UserIdentity& u);

}  // namespace runpool::agent::root_ops
