#include "agent/job_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "agent/safe_path.h"
#include "common/pool/reuse_policy.h"

namespace runpool::agent {

namespace fs = std::filesystem;

std::optional<CacheScope> parse_cache_scope(std::string_view text) {
  if (text == "none") return CacheScope::kNone;
  if (text == "repository") return CacheScope::kRepository;
  if (text == "owner") return CacheScope::kOwner;
  return std::nullopt;
}

std::string cache_scope_key(CacheScope scope, const std::string& reg_url) {
  if (scope == CacheScope::kNone) return "";
  const bool repository = scope == CacheScope::kRepository;
  const std::string key =
      pool::scope_key_for(reg_url, repository ? pool::ReuseScope::kRepository : pool::ReuseScope::kOwner);
  // The reuse scope without its kind; an organization's runner (an owner scope) has no repository
  // whose cache could be kept.
  const std::string kind = repository ? "repository:" : "owner:";
  return key.rfind(kind, 0) == 0 ? key.substr(kind.size()) : "";
}

namespace {

// The store's directory: beside the runner root, in a directory only root writes (trusted).
struct StorePlace {
  Fd parent;
  std::string name;
};

StorePlace store_place(const std::string& store) {
  const fs::path p(store);
  return {Fd(open_trusted_dir(p.parent_path().string())), p.filename().string()};
}

// Gives the tree `name` of the directory `dir` to uid:gid, dropping what must not be carried (see
// the header). Every step relative to a descriptor, never through a link. nullopt when done; else
// why the tree cannot be kept (a file-system boundary inside it, something that cannot be dropped).
std::optional<std::string> own_tree(int dir, const std::string& name, uid_t uid, gid_t gid, int depth = 0) {
  auto top = stat_at(dir, name);
  if (!top || !S_ISDIR(top->mode)) return name + ": not a directory";
  if (fchownat(dir, name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0) return name + ": chown: " + std::strerror(errno);
  Fd fd(openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  auto opened = fd.ok() ? stat_at(fd.get(), "") : std::nullopt;
  if (!opened || opened->ino != top->ino || opened->dev != top->dev) return name + ": cannot open";
  Fd listing(fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
  DIR* d = listing.ok() ? fdopendir(listing.get()) : nullptr;
  if (!d) return name + ": cannot list";
  listing.release();  // closedir closes it
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  }
  closedir(d);
  for (const auto& n : names) {
    auto st = stat_at(fd.get(), n);
    if (!st) continue;
    if (crosses_boundary(*opened, *st)) return name + "/" + n + ": another file system or mount";
    const bool keepable = (S_ISDIR(st->mode) && depth < 64) || S_ISLNK(st->mode) || (S_ISREG(st->mode) && st->nlink == 1);
    if (!keepable || fchownat(fd.get(), n.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0) {
      if (auto errors = remove_at(fd.get(), n); !errors.empty()) return errors.front();
      continue;
    }
    if (S_ISDIR(st->mode)) {
      if (auto why = own_tree(fd.get(), n, uid, gid, depth + 1)) return name + "/" + *why;
    } else if (S_ISREG(st->mode) && (st->mode & (S_ISUID | S_ISGID))) {
      // A regular file (statx said so, without following), in a tree no job reaches any more.
      if (fchmodat(fd.get(), n.c_str(), st->mode & 01777, 0) != 0) return name + "/" + n + ": chmod";
    }
  }
  return std::nullopt;
}

// The directory `components` but the last lead to below `root`, reached without following a link;
// with `make` (uid:gid), the missing ones are created for that user. -1 with errno.
int open_parent(int root, const std::vector<std::string>& components, const UserIdentity* make) {
  Fd cur(fcntl(root, F_DUPFD_CLOEXEC, 0));
  for (size_t i = 0; cur.ok() && i + 1 < components.size(); ++i) {
    const char* c = components[i].c_str();
    bool made = false;
    if (make && mkdirat(cur.get(), c, 0755) == 0) made = true;
    Fd next(open_beneath(cur.get(), components[i], O_RDONLY | O_DIRECTORY));
    if (next.ok() && made && fchown(next.get(), make->uid, make->gid) != 0) return -1;
    cur = std::move(next);
  }
  return cur.release();
}

std::string read_scope(int store) {
  Fd fd(openat(store, "scope", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.ok()) return "";
  char buf[512];
  ssize_t n = read(fd.get(), buf, sizeof buf);
  std::string s(buf, n > 0 ? static_cast<size_t>(n) : 0);
  return s.substr(0, s.find('\n'));
}

bool write_scope(int store, const std::string& scope_key) {
  Fd fd(openat(store, "scope", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  const std::string line = scope_key + "\n";
  return fd.ok() && write(fd.get(), line.data(), line.size()) == static_cast<ssize_t>(line.size());
}

}  // namespace

JobCache::JobCache(std::string store, std::vector<std::string> dirs) : store_(std::move(store)), dirs_(std::move(dirs)) {}

int JobCache::keep(const std::string& root, const std::string& scope_key) {
  StorePlace place = store_place(store_);
  if (!place.parent.ok()) {
    spdlog::warn("cannot open the directory of the cache store {}: caches are not kept", store_);
    return 0;
  }
  if (auto errors = remove_at(place.parent.get(), place.name); !errors.empty()) {
    spdlog::warn("cannot empty the cache store {} ({}): caches are not kept", store_, errors.front());
    return 0;
  }
  if (scope_key.empty() || dirs_.empty()) return 0;
  Fd store;
  if (mkdirat(place.parent.get(), place.name.c_str(), 0700) == 0) {
    store = Fd(openat(place.parent.get(), place.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  Fd root_fd(open_trusted_dir(root));
  if (!store.ok() || fchown(store.get(), 0, 0) != 0 || fchmod(store.get(), 0700) != 0 || !root_fd.ok()) {
    spdlog::warn("cannot make the cache store {}: caches are not kept", store_);
    remove_at(place.parent.get(), place.name);
    return 0;
  }
  int kept = 0;
  for (size_t i = 0; i < dirs_.size(); ++i) {
    // Everything below the root is the job's to change: a link anywhere on the way drops the cache.
    auto components = relative_components(dirs_[i]);
    if (!components) continue;
    Fd parent(open_parent(root_fd.get(), *components, nullptr));
    if (!parent.ok()) {
      if (errno != ENOENT) spdlog::warn("cache {} not kept: its way from the runner root is not a plain directory ({}); left for the sweep", dirs_[i], std::strerror(errno));
      continue;
    }
    const std::string& last = components->back();
    auto here = stat_at(parent.get(), ""), st = stat_at(parent.get(), last);
    if (!here || !st) continue;
    if (!S_ISDIR(st->mode) || crosses_boundary(*here, *st)) {
      spdlog::warn("cache {} not kept: {}; left for the sweep", dirs_[i], S_ISLNK(st->mode) ? "a symbolic link" : !S_ISDIR(st->mode) ? "not a directory" : "another file system or mount");
      continue;
    }
    const std::string to = std::to_string(i);
    if (renameat(parent.get(), last.c_str(), store.get(), to.c_str()) != 0) {
      spdlog::warn("cache {} not kept: cannot move it into the store: {}", dirs_[i], std::strerror(errno));
      continue;
    }
    if (auto why = own_tree(store.get(), to, 0, 0)) {
      // Back where it was: the sweep and the runner root's cleaning deal with it (or fail).
      spdlog::warn("cache {} not kept: {}", dirs_[i], *why);
      if (renameat(store.get(), to.c_str(), parent.get(), last.c_str()) != 0) remove_at(store.get(), to);
      continue;
    }
    ++kept;
  }
  if (!kept || !write_scope(store.get(), scope_key)) {
    if (auto errors = remove_at(place.parent.get(), place.name); !errors.empty()) {
      spdlog::warn("cannot empty the cache store {}: {}", store_, errors.front());
    }
    return 0;
  }
  return kept;
}

int JobCache::restore(const std::string& root, const std::string& scope_key, const UserIdentity& user) {
  StorePlace place = store_place(store_);
  if (!place.parent.ok()) return 0;
  Fd store(openat(place.parent.get(), place.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!store.ok()) return 0;
  int restored = 0;
  Fd root_fd(open_trusted_dir(root));
  if (root_fd.ok() && !scope_key.empty() && read_scope(store.get()) == scope_key) {
    for (size_t i = 0; i < dirs_.size(); ++i) {
      const std::string from = std::to_string(i);
      auto stored = stat_at(store.get(), from);
      auto components = relative_components(dirs_[i]);
      if (!stored || !S_ISDIR(stored->mode) || !components) continue;
      Fd parent(open_parent(root_fd.get(), *components, &user));
      if (!parent.ok()) {
        spdlog::warn("cache {} not restored: its way from the runner root is not a plain directory ({}); dropped", dirs_[i], std::strerror(errno));
        continue;
      }
      const std::string& last = components->back();
      if (auto errors = remove_at(parent.get(), last); !errors.empty()) {
        spdlog::warn("cache {} not restored: {}; dropped", dirs_[i], errors.front());
        continue;
      }
      if (auto why = own_tree(store.get(), from, user.uid, user.gid)) {
        spdlog::warn("cache {} not restored: {}; dropped", dirs_[i], *why);
      } else if (renameat(store.get(), from.c_str(), parent.get(), last.c_str()) == 0) {
        ++restored;
      }
    }
  }
  // Another scope's, or handed over.
  store = Fd();
  if (auto errors = remove_at(place.parent.get(), place.name); !errors.empty()) {
    spdlog::warn("cannot empty the cache store {}: {}", store_, errors.front());
  }
  return restored;
}

}  // namespace runpool::agent
