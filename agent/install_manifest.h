// The runner's installation as the agent left it — every entry under the runner root that is not
// the job user's (bin/, externals/, the scripts, hooks, a root-owned .env or .path) with its type,
// mode, owner, size and change time — taken when an assignment starts and compared when it ends.
// The layout keeps the installation root-owned, so an unprivileged job cannot change it; the
// comparison is what proves it: a difference (an image that left a file writable, a job with
// root) fails the cleaning, and an instance whose cleaning failed is never reused.
//
// A change time cannot be set back by anyone but root, and root's changes to an entry (chmod,
// chown, a write) all move it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace runpool::agent {

struct ManifestEntry {
  mode_t mode = 0;  // type and permission bits
  uid_t uid = 0;
  gid_t gid = 0;
  int64_t size = 0;
  int64_t ctime_ns = 0;
  int64_t mtime_ns = 0;
  bool operator==(const ManifestEntry&) const = default;
};

// Relative path → entry. The root directory itself is not in it (its group changes with every job user).
using InstallManifest = std::map<std::string, ManifestEntry>;

// Walks `root` without following links, skipping entries for which `skip` says true (given the
// relative path and the owner) together with everything below them.
InstallManifest take_manifest(const std::string& root, const std::function<bool(const std::string&, uid_t)>& skip);

// The first difference between what was taken and what is there now, said for a log ("bin/x:
// changed (mode, size)", "hooks/y: new", "run.sh: gone"); nullopt when they are the same.
std::optional<std::string> manifest_difference(const InstallManifest& before, const InstallManifest& now);

// As text for a state file, so an agent restarted mid-assignment still compares against the
// assignment's start: one line per entry, the path hex-encoded (any byte may be in a name).
std::string encode_manifest(const InstallManifest& m);
// nullopt for anything encode_manifest() did not write: a malformed line, a bad number, no
// entries — never a partial manifest, which would let what it lost go unchecked.
std::optional<InstallManifest> decode_manifest(const std::string& text);

}  // namespace runpool::agent
