#include "controller/config_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/config.h"
#include "controller/settings.h"

namespace runpool::controller {
namespace {

namespace fs = std::filesystem;

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("runpool-config-file-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  fs::path dir_;
};

TEST_F(ConfigFileTest, TheDefaultIsTheInstalledFile) {
  EXPECT_STREQ(kDefaultConfigFile, "/etc/runpool/runpoolctl.conf");
}

TEST_F(ConfigFileTest, AMissingDefaultIsNoFile) {
  EXPECT_EQ(config_file_to_read("", (dir_ / "runpoolctl.conf").string()), "");
  EXPECT_EQ(config_file_to_read("", (dir_ / "no-such-dir" / "runpoolctl.conf").string()), "");
}

TEST_F(ConfigFileTest, AnExistingDefaultIsRead) {
  std::string def = write("runpoolctl.conf", "pool = from-default\n");
  ASSERT_EQ(config_file_to_read("", def), def);
  Config c(settings_schema());
  c.merge_file(config_file_to_read("", def));
  EXPECT_EQ(c.get_string("pool"), "from-default");
}

TEST_F(ConfigFileTest, AnExplicitFileWinsAndTheDefaultIsNotRead) {
  std::string def = write("runpoolctl.conf", "pool = from-default\ntable = default-table\n");
  std::string mine = write("mine.conf", "pool = mine\n");
  ASSERT_EQ(config_file_to_read(mine, def), mine);
  Config c(settings_schema());
  c.merge_file(config_file_to_read(mine, def));
  EXPECT_EQ(c.get_string("pool"), "mine");
  EXPECT_EQ(c.get_string("table"), "runpool");  // the schema's default: nothing of the default file
}

TEST_F(ConfigFileTest, ADanglingDefaultIsStillTheOperatorsFile) {
  fs::create_symlink(dir_ / "gone.conf", dir_ / "runpoolctl.conf");
  std::string def = (dir_ / "runpoolctl.conf").string();
  EXPECT_EQ(config_file_to_read("", def), def);
  Config c(settings_schema());
  EXPECT_THROW(c.merge_file(def), ConfigError);
}

}  // namespace
}  // namespace runpool::controller
