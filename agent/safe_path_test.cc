#include "agent/safe_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;
using Parts = std::optional<std::vector<std::string>>;

TEST(SafePath, RelativeComponents) {
  struct Case {
    const char* path;
    Parts want;
  } cases[] = {
      {"_work", std::vector<std::string>{"_work"}},
      {"_work/_tool", std::vector<std::string>{"_work", "_tool"}},
      {"a/./b//c/", std::vector<std::string>{"a", "b", "c"}},
      {"", std::nullopt},
      {".", std::nullopt},
      {"/etc", std::nullopt},
      {"..", std::nullopt},
      {"_work/../../etc", std::nullopt},
      {"a/..b", std::vector<std::string>{"a", "..b"}},
  };
  for (const auto& c : cases) EXPECT_EQ(relative_components(c.path), c.want) << c.path;
}

TEST(SafePath, Boundaries) {
  auto entry = [](bool dir, dev_t dev, std::optional<uint64_t> mount, bool mount_root = false) {
    EntryStat e;
    e.mode = dir ? S_IFDIR | 0755 : S_IFREG | 0644;
    e.dev = dev;
    e.mount_id = mount;
    e.mount_root = mount_root;
    return e;
  };
  const EntryStat parent = entry(true, 10, 1);
  struct Case {
    const char* name;
    EntryStat child;
    bool crosses;
  } cases[] = {
      {"a directory on the same mount", entry(true, 10, 1), false},
      {"a file on the same mount", entry(false, 10, 1), false},
      {"a file reporting its layer's device (overlay)", entry(false, 11, 1), false},
      {"a btrfs subvolume: own device, same mount", entry(true, 11, 1), true},
      {"a bind mount of the same file system", entry(true, 10, 2), true},
      {"a file bind-mounted onto a file", entry(false, 10, 2), true},
      {"a mount's root, as statx says", entry(true, 10, 1, true), true},
      {"no mount ids (before Linux 5.8), another device", entry(true, 11, std::nullopt), true},
      {"no mount ids, the same device", entry(true, 10, std::nullopt), false},
  };
  for (const auto& c : cases) EXPECT_EQ(crosses_boundary(parent, c.child), c.crosses) << c.name;
}

class SafePathOnDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/runpool-safe-path-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "base" / "a" / "b");
    fs::create_directories(dir_ / "outside");
    std::ofstream(dir_ / "outside" / "sentinel") << "root's";
    std::ofstream(dir_ / "base" / "a" / "b" / "file") << "x";
    fs::create_directory_symlink(dir_ / "outside", dir_ / "base" / "abs");
    fs::create_directory_symlink("a", dir_ / "base" / "rel");
    fs::create_symlink(dir_ / "outside" / "sentinel", dir_ / "base" / "a" / "last");
    base_ = Fd(open_trusted_dir((dir_ / "base").string()));
    ASSERT_TRUE(base_.ok());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
  Fd base_;
};

class SafePathResolve : public SafePathOnDisk, public ::testing::WithParamInterface<Resolve> {};

TEST_P(SafePathResolve, OpensBelowTheBaseAndNeverThroughALink) {
  Fd ok(open_beneath(base_.get(), "a/b/file", O_RDONLY, GetParam()));
  EXPECT_TRUE(ok.ok()) << std::strerror(errno);
  // ENOTDIR: a link where a directory must be, opened with O_NOFOLLOW.
  struct Case {
    const char* rel;
    int flags;
  } refused[] = {{"abs/sentinel", O_RDONLY}, {"abs", O_RDONLY | O_DIRECTORY}, {"rel/b/file", O_RDONLY},
                 {"a/last", O_RDONLY},       {"../outside/sentinel", O_RDONLY}, {"/etc/passwd", O_RDONLY}};
  for (const auto& c : refused) {
    errno = 0;
    Fd fd(open_beneath(base_.get(), c.rel, c.flags, GetParam()));
    EXPECT_FALSE(fd.ok()) << c.rel;
    EXPECT_TRUE(errno == ELOOP || errno == ENOTDIR || errno == EXDEV || errno == EINVAL) << c.rel << ": " << std::strerror(errno);
  }
}

TEST_F(SafePathOnDisk, RemovesATreeButNotWhatItsLinksPointAt) {
  fs::create_directory_symlink(dir_ / "outside", dir_ / "base" / "a" / "b" / "to-outside");
  std::vector<std::string> errors = remove_at(base_.get(), "a");
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir_ / "base" / "a")));
  EXPECT_TRUE(fs::exists(dir_ / "outside" / "sentinel"));
  // A link named: the link goes, not its target.
  EXPECT_TRUE(remove_at(base_.get(), "abs").empty());
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir_ / "base" / "abs")));
  EXPECT_TRUE(fs::exists(dir_ / "outside" / "sentinel"));
  EXPECT_TRUE(remove_at(base_.get(), "not-there").empty());
}

TEST_F(SafePathOnDisk, RemovesATreeDeeperThanItKeepsDescriptorsFor) {
  fs::path p = dir_ / "base" / "deep";
  for (int i = 0; i < 300; ++i) p /= "d";  // bounded: 300 levels, ~600 characters
  fs::create_directories(p);
  std::ofstream(p / "leaf") << "x";
  EXPECT_TRUE(remove_at(base_.get(), "deep").empty());
  EXPECT_FALSE(fs::exists(dir_ / "base" / "deep"));
  for (const auto& e : fs::directory_iterator(dir_ / "base")) {
    EXPECT_NE(e.path().filename().string().rfind(".runpool-remove-", 0), 0u) << "a parked tree left: " << e.path();
  }
}

TEST_F(SafePathOnDisk, MakesAnOwnedDirectoryInPlaceOfALink) {
  make_owned_dir_at(base_.get(), "abs", 1987700003, 1987700003, 0750);
  struct stat st {};
  ASSERT_EQ(lstat((dir_ / "base" / "abs").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  if (geteuid() == 0) {
    EXPECT_EQ(st.st_uid, 1987700003u);
  }
  ASSERT_EQ(stat((dir_ / "outside").c_str(), &st), 0);
  EXPECT_NE(st.st_uid, 1987700003u) << "the link's target is untouched";
  EXPECT_TRUE(fs::exists(dir_ / "outside" / "sentinel"));
}

INSTANTIATE_TEST_SUITE_P(Both, SafePathResolve, ::testing::Values(Resolve::kAuto, Resolve::kPerComponent),
                         [](const auto& info) { return info.param == Resolve::kAuto ? "openat2" : "PerComponent"; });

}  // namespace
}  // namespace runpool::agent
