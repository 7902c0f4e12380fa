#include "controller/config_from_stack.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace runpool::controller {
namespace {

class ConfigFileWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "runpool-ctl-from-stack-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static std::string read(const std::filesystem::path& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  std::filesystem::path dir_;
};

TEST_F(ConfigFileWrite, WritesANewFileReadableByAll) {
  auto path = dir_ / "runpoolctl.conf";
  write_config_file(path.string(), "table = t\n", false);
  EXPECT_EQ(read(path), "table = t\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(ConfigFileWrite, AnExistingFileIsReplacedOnlyWithForce) {
  auto path = dir_ / "runpoolctl.conf";
  std::ofstream(path) << "github_owner = acme\n";
  try {
    write_config_file(path.string(), "table = t\n", false);
    ADD_FAILURE() << "replaced without --force";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read(path), "github_owner = acme\n");
  write_config_file(path.string(), "table = t\n", true);
  EXPECT_EQ(read(path), "table = t\n");
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".from-stack.tmp"));
}

TEST_F(ConfigFileWrite, ASymlinkIsNotFollowed) {
  auto target = dir_ / "elsewhere";
  auto path = dir_ / "runpoolctl.conf";
  std::filesystem::create_symlink(target, path);
  EXPECT_THROW(write_config_file(path.string(), "table = t\n", false), std::runtime_error);
  EXPECT_FALSE(std::filesystem::exists(target));
}

}  // namespace
}  // namespace runpool::controller
