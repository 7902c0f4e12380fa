// Caches an assignment's jobs build up (by default the runner's tool cache, `_work/_tool`) kept for
// the next assignment of the same scope — the same repository, or the same owner — and wiped for
// any other. Everything a job user owns is swept at the end of its assignment (tenant_sweep.h);
// before that, the cache directories are moved out of the runner root into a store only root can
// read, and handed to the next job user only if its assignment has the same scope. A cache kept
// across scopes would be a channel from one tenant to the next, so there is never more than one
// scope's cache on the instance.
//
// What is kept is made root's while stored: hard links (which would carry a file elsewhere along
// out of the sweep), devices, FIFOs and sockets are dropped, set-uid and set-gid bits cleared.
//
// Every component below the runner root is the job's to change: each step is made relative to a
// directory descriptor, never through a symbolic link (safe_path.h). A cache whose way from the
// root has a link, or that holds another file system or mount, is not kept (nor restored): it is
// left for the sweep, with a warning.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/process.h"

namespace runpool::agent {

enum class CacheScope { kNone, kRepository, kOwner };

// "none", "repository", "owner".
std::optional<CacheScope> parse_cache_scope(std::string_view text);

// The scope an assignment registering at `reg_url` (https://host/owner[/repo]) belongs to:
// "owner/repo" for kRepository, "owner" for kOwner; "" when it has none of that kind (an
// organization's runner has no repository) or kNone.
std::string cache_scope_key(CacheScope scope, const std::string& reg_url);

class JobCache {
 public:
  // `store`: a directory beside the runner root (created root-only); `dirs`: relative to the root.
  JobCache(std::string store, std::vector<std::string> dirs);

  // At the end of an assignment of `scope_key`, its processes ended, before the sweep: moves the
  // cache directories into the store, made root's. "" keeps nothing (and empties the store).
  // Returns how many directories were kept.
  int keep(const std::string& root, const std::string& scope_key);

  // At the start of an assignment of `scope_key`: the store's directories, if they are that
  // scope's, moved into the root and given to `user`; any other scope's are deleted. Returns how
  // many were restored.
  int restore(const std::string& root, const std::string& scope_key, const UserIdentity& user);

 private:
  std::string store_;
  std::vector<std::string> dirs_;
};

}  // namespace runpool::agent
