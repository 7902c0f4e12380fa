#include "agent/job_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "common/metrics/testing.h"

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;

TEST(JobCache, ScopeKeys) {
  EXPECT_EQ(cache_scope_key(CacheScope::kRepository, "https://github.com/acme/app"), "acme/app");
  EXPECT_EQ(cache_scope_key(CacheScope::kOwner, "https://github.com/acme/app"), "acme");
  EXPECT_EQ(cache_scope_key(CacheScope::kOwner, "https://github.com/acme"), "acme");
  EXPECT_EQ(cache_scope_key(CacheScope::kRepository, "https://github.com/acme"), "") << "an organization's runner";
  EXPECT_EQ(cache_scope_key(CacheScope::kRepository, "https://ghe.example.com/acme/app/"), "acme/app");
  EXPECT_EQ(cache_scope_key(CacheScope::kOwner, "https://github.com/enterprises/big"), "");
  EXPECT_EQ(cache_scope_key(CacheScope::kNone, "https://github.com/acme/app"), "");
  EXPECT_EQ(cache_scope_key(CacheScope::kRepository, "not a url"), "");
  EXPECT_EQ(parse_cache_scope("owner"), CacheScope::kOwner);
  EXPECT_FALSE(parse_cache_scope("everyone"));
}

class JobCacheOnDisk : public ::testing::Test {
 protected:
  static constexpr uid_t kFirst = 1987700001, kSecond = 1987700002;
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (chown)";
    char tmpl[] = "/tmp/runpool-cache-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    root_ = dir_ / "runner";
    fs::create_directories(root_ / "_work" / "_tool" / "node" / "bin");
    std::ofstream(root_ / "_work" / "_tool" / "node" / "bin" / "node") << "node";
    std::ofstream(root_ / "_work" / "_tool" / "suid") << "x";
    chmod((root_ / "_work" / "_tool" / "suid").c_str(), 04755);
    std::ofstream(dir_ / "elsewhere") << "x";  // hard-linked into the cache: must not be carried out of the sweep
    fs::create_hard_link(dir_ / "elsewhere", root_ / "_work" / "_tool" / "link");
    ASSERT_EQ(mkfifo((root_ / "_work" / "_tool" / "fifo").c_str(), 0600), 0);
    for (auto& e : fs::recursive_directory_iterator(root_)) lchown(e.path().c_str(), kFirst, kFirst);
    lchown((dir_ / "elsewhere").c_str(), kFirst, kFirst);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  static uid_t owner(const fs::path& p) {
    struct stat st {};
    return lstat(p.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
  }
  fs::path dir_, root_;
};

TEST_F(JobCacheOnDisk, KeptForTheSameScopeAsRootsThenHandedToTheNextJobUser) {
  JobCache cache((dir_ / "runner.caches").string(), {"_work/_tool", "_home/.cache/pip"});
  EXPECT_EQ(cache.keep(root_.string(), "acme/app"), 1);
  const fs::path stored = dir_ / "runner.caches" / "0";
  EXPECT_FALSE(fs::exists(root_ / "_work" / "_tool"));
  EXPECT_EQ(owner(stored / "node" / "bin" / "node"), 0u) << "root's while stored";
  EXPECT_FALSE(fs::exists(stored / "link")) << "a hard link would carry a file elsewhere out of the sweep";
  EXPECT_FALSE(fs::exists(fs::symlink_status(stored / "fifo")));
  struct stat st {};
  ASSERT_EQ(stat((stored / "suid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u) << "no set-uid file owned by root";
  ASSERT_EQ(stat((dir_ / "runner.caches").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(owner(dir_ / "elsewhere"), kFirst) << "the other name of the hard link is still the job user's";

  UserIdentity next{"next", kSecond, kSecond, {kSecond}};
  EXPECT_EQ(cache.restore(root_.string(), "acme/app", next), 1);
  EXPECT_EQ(owner(root_ / "_work" / "_tool" / "node" / "bin" / "node"), kSecond);
  EXPECT_FALSE(fs::exists(dir_ / "runner.caches")) << "handed over: nothing left in the store";
}

TEST_F(JobCacheOnDisk, AnotherScopeGetsNothingAndTheStoreIsEmptied) {
  JobCache cache((dir_ / "runner.caches").string(), {"_work/_tool"});
  ASSERT_EQ(cache.keep(root_.string(), "acme/app"), 1);
  UserIdentity next{"next", kSecond, kSecond, {kSecond}};
  EXPECT_EQ(cache.restore(root_.string(), "acme/other", next), 0);
  EXPECT_FALSE(fs::exists(root_ / "_work" / "_tool"));
  EXPECT_FALSE(fs::exists(dir_ / "runner.caches"));
}

TEST_F(JobCacheOnDisk, NoScopeKeepsNothing) {
  JobCache cache((dir_ / "runner.caches").string(), {"_work/_tool"});
  EXPECT_EQ(cache.keep(root_.string(), ""), 0);
  EXPECT_TRUE(fs::exists(root_ / "_work" / "_tool")) << "left for the sweep";
  EXPECT_FALSE(fs::exists(dir_ / "runner.caches"));
}


// A place only root may read or write, with a sentinel file where a followed link would lead any
// of the cache's components (`_tool`, `.cache/pip`, `pip`): what the agent must never move, chown,
// delete or read through.
class JobCacheLinks : public JobCacheOnDisk, public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    JobCacheOnDisk::SetUp();
    if (IsSkipped()) return;
    fs::create_directories(root_ / "_home" / ".cache" / "pip" / "wheels");
    std::ofstream(root_ / "_home" / ".cache" / "pip" / "wheels" / "w.whl") << "w";
    for (auto& e : fs::recursive_directory_iterator(root_ / "_home")) lchown(e.path().c_str(), kFirst, kFirst);
    lchown((root_ / "_home").c_str(), kFirst, kFirst);
    lchown((root_ / "_work").c_str(), kFirst, kFirst);
    outside_ = dir_ / "root-only";
    for (const char* d : {"", "_tool", ".cache/pip", "pip"}) {
      fs::create_directories(outside_ / d);
      std::ofstream(outside_ / d / "sentinel") << "root's " << d;
      chmod((outside_ / d / "sentinel").c_str(), 04755);
    }
    chmod(outside_.c_str(), 0700);
    before_ = snapshot(outside_);
  }
  // Path → owner, mode, content: everything of the root-only place.
  static std::map<std::string, std::string> snapshot(const fs::path& top) {
    std::map<std::string, std::string> out;
    for (auto& e : fs::recursive_directory_iterator(top)) {
      struct stat st {};
      lstat(e.path().c_str(), &st);
      std::ostringstream v;
      v << st.st_uid << " " << std::oct << st.st_mode << " ";
      if (S_ISREG(st.st_mode)) v << std::ifstream(e.path()).rdbuf();
      out[e.path().lexically_relative(top).string()] = v.str();
    }
    return out;
  }
  // Swaps the job-writable `component` for a link to the root-only place.
  void link(const fs::path& root, const std::string& component) {
    fs::remove_all(root / component);
    fs::create_directory_symlink(outside_, root / component);
    lchown((root / component).c_str(), kFirst, kFirst);
  }
  // Any entry named like the sentinel under `top`.
  static bool has_sentinel(const fs::path& top) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(top, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().filename() == "sentinel") return true;
    }
    return false;
  }
  fs::path outside_;
  std::map<std::string, std::string> before_;
};

TEST_P(JobCacheLinks, KeepNeverFollowsALinkedComponent) {
  JobCache cache((dir_ / "runner.caches").string(), {"_work/_tool", "_home/.cache/pip"});
  link(root_, GetParam());
  metrics::testing::CapturedLog log;
  const int kept = cache.keep(root_.string(), "acme/app");
  EXPECT_EQ(kept, 1) << "the other cache, whose way has no link, is kept";
  EXPECT_EQ(snapshot(outside_), before_) << "nothing of the root-only place moved, chowned or deleted";
  EXPECT_FALSE(has_sentinel(dir_ / "runner.caches")) << "nothing of it reached the store";
  EXPECT_NE(log.text().find("not kept"), std::string::npos) << log.text();

  UserIdentity next{"next", kSecond, kSecond, {kSecond}};
  fs::remove_all(root_ / "_work");  // the runner root as the next assignment finds it
  fs::remove_all(root_ / "_home");
  EXPECT_EQ(cache.restore(root_.string(), "acme/app", next), 1);
  EXPECT_EQ(snapshot(outside_), before_);
  EXPECT_FALSE(has_sentinel(root_)) << "nothing of it reached the next job user";
}

TEST_P(JobCacheLinks, RestoreNeverFollowsALinkedComponent) {
  JobCache cache((dir_ / "runner.caches").string(), {"_work/_tool", "_home/.cache/pip"});
  ASSERT_EQ(cache.keep(root_.string(), "acme/app"), 2);
  // What a job user could have left in the root for the next (a cleaning that missed it).
  fs::create_directories(root_ / "_home" / ".cache");
  link(root_, GetParam());
  metrics::testing::CapturedLog log;
  UserIdentity next{"next", kSecond, kSecond, {kSecond}};
  // A link in the cache's own place is replaced (the link removed, not followed); one on the way to
  // it drops that cache.
  const std::string component = GetParam();
  const bool own_place = component == "_work/_tool" || component == "_home/.cache/pip";
  EXPECT_EQ(cache.restore(root_.string(), "acme/app", next), own_place ? 2 : 1);
  EXPECT_EQ(snapshot(outside_), before_) << "nothing moved into, chowned or deleted in the root-only place";
  if (!own_place) {
    EXPECT_NE(log.text().find("not restored"), std::string::npos) << log.text();
  }
  EXPECT_FALSE(has_sentinel(root_));
  EXPECT_FALSE(fs::exists(dir_ / "runner.caches")) << "the dropped cache went with the store";
}

INSTANTIATE_TEST_SUITE_P(Components, JobCacheLinks,
                         ::testing::Values("_work", "_work/_tool", "_home", "_home/.cache", "_home/.cache/pip"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

TEST_F(JobCacheOnDisk, AStoreLeftAsALinkIsNotFollowed) {
  // The store is beside the root, in root's directory; were it ever a link, neither emptying nor
  // filling it goes through.
  char tmpl[] = "/tmp/runpool-cache-victim-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path victim = tmpl;
  std::ofstream(victim / "sentinel") << "x";
  fs::create_directory_symlink(victim, dir_ / "runner.caches");
  JobCache cache((dir_ / "runner.caches").string(), {"_work/_tool"});
  EXPECT_EQ(cache.keep(root_.string(), "acme/app"), 1);
  EXPECT_TRUE(fs::exists(victim / "sentinel"));
  EXPECT_EQ(std::distance(fs::directory_iterator(victim), fs::directory_iterator()), 1);
  fs::remove_all(victim);
}

}  // namespace
}  // namespace runpool::agent
