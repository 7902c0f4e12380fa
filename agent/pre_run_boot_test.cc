// Once per boot: the state file that lets a restarted agent reuse this boot's pre-run result.
#include "agent/pre_run_boot.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class PreRunBootTest : public ::testing::Test {
 protected:
  PreRunBootTest() {
    char tmpl[] = "/tmp/pre-run-boot-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    state_ = (dir_ / "run" / "runpool" / "pre-run-i-1").string();
  }
  ~PreRunBootTest() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A script that counts its runs in `runs` and exits with `code`.
  PreRunOptions counting_script(int code) {
    fs::path p = dir_ / "pre-run.sh";
    std::ofstream(p) << "#!/bin/sh\necho run >> " << (dir_ / "runs").string() << "\necho 'step done'\nexit " << code
                     << "\n";
    chmod(p.c_str(), 0755);
    PreRunOptions o;
    o.script = p.string();
    o.timeout = 10s;
    o.instance_id = "i-1";
    o.pool = "ci";
    return o;
  }
  int runs() {
    std::ifstream in(dir_ / "runs");
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
  PreRunResult once(const PreRunOptions& o, const std::string& boot) {
    return run_pre_run_once(o, state_, boot, nullptr, nullptr);
  }

  fs::path dir_;
  std::string state_;
};

TEST_F(PreRunBootTest, TheScriptRunsOncePerBootAndARestartedAgentReusesTheResult) {
  PreRunOptions o = counting_script(3);
  PreRunResult first = once(o, "boot-a");
  EXPECT_EQ(first.status, pool::PreRun::kFailed);
  EXPECT_EQ(first.detail, "exit 3: step done");
  EXPECT_EQ(runs(), 1);
  PreRunResult again = once(o, "boot-a");
  EXPECT_EQ(runs(), 1) << "not run again on the same boot";
  EXPECT_EQ(again.status, pool::PreRun::kFailed);
  EXPECT_EQ(again.detail, "exit 3: step done");
  // A new boot runs it again.
  o = counting_script(0);
  EXPECT_EQ(once(o, "boot-b").status, pool::PreRun::kOk);
  EXPECT_EQ(runs(), 2);
  EXPECT_EQ(once(o, "boot-b").status, pool::PreRun::kOk);
  EXPECT_EQ(runs(), 2);
}

TEST_F(PreRunBootTest, TheStateFileIsPrivate) {
  once(counting_script(0), "boot-a");
  struct stat st {};
  ASSERT_EQ(stat(state_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(fs::path(state_).parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_FALSE(fs::exists(state_ + ".tmp"));
}

TEST_F(PreRunBootTest, ARunTheAgentDiedInCountsAsFailedAndIsNotStartedAgain) {
  save_boot_result(state_, "boot-a", "running", "");
  PreRunResult r = once(counting_script(0), "boot-a");
  EXPECT_EQ(r.status, pool::PreRun::kFailed);
  EXPECT_NE(r.detail.find("stopped while the script ran"), std::string::npos) << r.detail;
  EXPECT_EQ(runs(), 0);
  // Another boot's leftovers say nothing about this one.
  EXPECT_EQ(once(counting_script(0), "boot-b").status, pool::PreRun::kOk);
  EXPECT_EQ(runs(), 1);
}

TEST_F(PreRunBootTest, ACancelledRunLeavesNothingSoTheNextAgentRunsItFromTheStart) {
  fs::path p = dir_ / "slow.sh";
  std::ofstream(p) << "#!/bin/sh\nsleep 30\n";
  chmod(p.c_str(), 0755);
  PreRunOptions o;
  o.script = p.string();
  o.instance_id = "i-1";
  o.pool = "ci";
  const auto start = std::chrono::steady_clock::now();
  PreRunResult r = run_pre_run_once(o, state_, "boot-a", nullptr,
                                    [&] { return std::chrono::steady_clock::now() - start > 200ms; });
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(fs::exists(state_));
  EXPECT_FALSE(load_boot_result(state_, "boot-a"));
}

TEST_F(PreRunBootTest, WithoutAWritableStateFileTheScriptStillRuns) {
  state_ = "/proc/no-such-dir/pre-run-i-1";
  EXPECT_EQ(once(counting_script(0), "boot-a").status, pool::PreRun::kOk);
  EXPECT_EQ(runs(), 1);
}

TEST_F(PreRunBootTest, UnreadableOrForeignStateIsIgnored) {
  EXPECT_FALSE(load_boot_result(state_, "boot-a")) << "no file";
  save_boot_result(state_, "boot-a", "ok", "exit 0 after 2s");
  ASSERT_TRUE(load_boot_result(state_, "boot-a"));
  EXPECT_EQ(load_boot_result(state_, "boot-a")->detail, "exit 0 after 2s");
  EXPECT_FALSE(load_boot_result(state_, "boot-b"));
  save_boot_result(state_, "boot-a", "sideways", "");
  EXPECT_FALSE(load_boot_result(state_, "boot-a"));
  std::ofstream(state_) << "garbage\n";
  EXPECT_FALSE(load_boot_result(state_, "boot-a"));
  EXPECT_FALSE(current_boot_id().empty()) << "the kernel's boot id";
  EXPECT_EQ(pre_run_state_file("i-0abc"), "/run/runpool/pre-run-i-0abc");
}

}  // namespace
}  // namespace runpool::agent
