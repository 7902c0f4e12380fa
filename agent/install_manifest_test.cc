#include "agent/install_manifest.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;

class InstallManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/runpool-manifest-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/bin");
    std::ofstream(root_ + "/bin/Runner.Listener") << "listener";
    std::ofstream(root_ + "/run.sh") << "#!/bin/sh";
    fs::create_directories(root_ + "/_work/x");
  }
  void TearDown() override { fs::remove_all(root_); }
  InstallManifest take() {
    return take_manifest(root_, [](const std::string& rel, uid_t) { return rel == "_work"; });
  }
  std::string root_;
};

TEST_F(InstallManifestTest, SameWhenNothingChanged) {
  auto before = take();
  EXPECT_TRUE(before.contains("bin/Runner.Listener"));
  EXPECT_FALSE(before.contains("_work"));
  EXPECT_FALSE(before.contains("_work/x"));
  std::ofstream(root_ + "/_work/x/y") << "skipped";
  EXPECT_EQ(manifest_difference(before, take()), std::nullopt);
}

TEST_F(InstallManifestTest, ALinkIsAnEntryNeverWalkedThrough) {
  fs::create_directories(root_ + "-outside");
  std::ofstream(root_ + "-outside/sentinel") << "x";
  auto before = take();
  fs::remove_all(root_ + "/bin");
  fs::create_directory_symlink(root_ + "-outside", root_ + "/bin");
  auto now = take();
  fs::remove_all(root_ + "-outside");
  EXPECT_TRUE(S_ISLNK(now["bin"].mode));
  EXPECT_FALSE(now.contains("bin/sentinel"));
  EXPECT_EQ(manifest_difference(before, now).value_or("").rfind("bin: changed (mode", 0), 0u);
}

TEST_F(InstallManifestTest, SaysWhatChanged) {
  auto before = take();
  std::ofstream(root_ + "/bin/Runner.Listener", std::ios::app) << "backdoor";
  EXPECT_EQ(manifest_difference(before, take()).value_or(""), "bin/Runner.Listener: changed (size, modified, changed)");
  before = take();
  chmod((root_ + "/run.sh").c_str(), 0777);
  EXPECT_EQ(manifest_difference(before, take()).value_or(""), "run.sh: changed (mode, changed)");
  before = take();
  std::ofstream(root_ + "/.env") << "LD_PRELOAD=/tmp/x.so";
  EXPECT_EQ(manifest_difference(before, take()).value_or(""), ".env: new");
  before = take();
  fs::remove(root_ + "/run.sh");
  EXPECT_EQ(manifest_difference(before, take()).value_or(""), "run.sh: gone");
}

TEST_F(InstallManifestTest, KeptAsTextAndReadBackWhole) {
  std::ofstream(root_ + "/bin/a name\nwith a newline") << "x";
  const auto m = take();
  const std::string text = encode_manifest(m);
  EXPECT_EQ(decode_manifest(text), m);
  struct Case {
    const char* what;
    std::string text;
  };
  const Case bad[] = {
      {"empty", ""},
      {"cut short (no last newline)", text.substr(0, text.size() - 1)},
      {"a line short of a field", text.substr(0, text.rfind(' ', text.find('\n'))) + "\n"},
      {"a word too many", "61 1 2 3 4 5 6 7\n"},
      {"a path not hex", "zz 1 2 3 4 5 6\n"},
      {"an odd hex path", "616 1 2 3 4 5 6\n"},
      {"a number not a number", "61 1 2 x 4 5 6\n"},
      {"one path twice", "61 1 2 3 4 5 6\n61 1 2 3 4 5 6\n"},
  };
  for (const auto& c : bad) EXPECT_EQ(decode_manifest(c.text), std::nullopt) << c.what;
}

}  // namespace
}  // namespace runpool::agent
