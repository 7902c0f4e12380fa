#include "agent/job_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace runpool::agent
