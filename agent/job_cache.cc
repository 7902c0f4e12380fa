#include "agent/job_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

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

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
}

// Gives the tree at `top` to uid:gid, dropping what must not be carried (see the header).
void own_tree(const fs::path& top, uid_t uid, gid_t gid) {
  std::error_code ec;
  if (lchown(top.c_str(), uid, gid) != 0) throw std::runtime_error("chown " + top.string());
  std::vector<fs::path> drop;
  for (fs::recursive_directory_iterator it(top, fs::directory_options::none, ec), end; !ec && it != end;
       it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode) && it.depth() >= 64) {
      it.disable_recursion_pending();
      drop.push_back(it->path());
      continue;
    }
    const bool keepable = S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode) || (S_ISREG(st.st_mode) && st.st_nlink == 1);
    if (!keepable) {
      drop.push_back(it->path());
      continue;
    }
    if (lchown(it->path().c_str(), uid, gid) != 0) {
      drop.push_back(it->path());
      continue;
    }
    if (!S_ISLNK(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID))) chmod(it->path().c_str(), st.st_mode & 01777);
  }
  if (ec) throw std::runtime_error("cannot walk " + top.string() + ": " + ec.message());
  for (const auto& p : drop) remove_quietly(p);
}

std::string read_scope(const fs::path& store) {
  std::ifstream in(store / "scope");
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace

JobCache::JobCache(std::string store, std::vector<std::string> dirs) : store_(std::move(store)), dirs_(std::move(dirs)) {}

int JobCache::keep(const std::string& root, const std::string& scope_key) {
  const fs::path store(store_);
  remove_quietly(store);
  if (scope_key.empty() || dirs_.empty()) return 0;
  std::error_code ec;
  fs::create_directories(store, ec);
  if (ec || chmod(store.c_str(), 0700) != 0 || lchown(store.c_str(), 0, 0) != 0) {
    spdlog::warn("cannot make the cache store {}: caches are not kept", store_);
    return 0;
  }
  int kept = 0;
  for (size_t i = 0; i < dirs_.size(); ++i) {
    const fs::path from = fs::path(root) / dirs_[i];
    struct stat st {};
    if (lstat(from.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    const fs::path to = store / std::to_string(i);
    if (rename(from.c_str(), to.c_str()) != 0) continue;  // another file system: not kept, swept
    try {
      own_tree(to, 0, 0);
      ++kept;
    } catch (const std::exception& e) {
      spdlog::warn("cache {} not kept: {}", dirs_[i], e.what());
      remove_quietly(to);
    }
  }
  if (kept) std::ofstream(store / "scope") << scope_key << "\n";
  else remove_quietly(store);
  return kept;
}

int JobCache::restore(const std::string& root, const std::string& scope_key, const UserIdentity& user) {
  const fs::path store(store_);
  if (!fs::exists(store)) return 0;
  int restored = 0;
  if (!scope_key.empty() && read_scope(store) == scope_key) {
    for (size_t i = 0; i < dirs_.size(); ++i) {
      const fs::path from = store / std::to_string(i);
      if (!fs::is_directory(fs::symlink_status(from))) continue;
      const fs::path to = fs::path(root) / dirs_[i];
      std::error_code ec;
      fs::create_directories(to.parent_path(), ec);
      lchown(to.parent_path().c_str(), user.uid, user.gid);
      remove_quietly(to);
      try {
        own_tree(from, user.uid, user.gid);
        if (rename(from.c_str(), to.c_str()) == 0) ++restored;
      } catch (const std::exception& e) {
        spdlog::warn("cache {} not restored: {}", dirs_[i], e.what());
      }
    }
  }
  remove_quietly(store);  // another scope's, or handed over
  return restored;
}

}  // namespace runpool::agent
