// The next assignment readied while the instance waits in the pool (RunnerHost::ready_next): the
// job user, the runner installed, its directories and the jobs' confinement are made then, so the
// claim's prepare() only hands them over — and a claim that needs other groups gets a user of its
// own. Needs root and useradd; skipped otherwise.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include <gtest/gtest.h>

#include "agent/local_runner_host.h"
#include "agent/testing/memory_docker_engine.h"

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool in_docker_group(const std::string& user) {
  std::ifstream in("/etc/group");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("docker:", 0) != 0) continue;
    return ("," + line.substr(line.rfind(':') + 1) + ",").find("," + user + ",") != std::string::npos;
  }
  return false;
}

class ReadyNext : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/usr/sbin/useradd", X_OK) != 0) GTEST_SKIP() << "needs root and useradd";
    char tmpl[] = "/tmp/runner-ready-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    chmod(base_.c_str(), 0755);
    const fs::path tpl = base_ / "template";
    fs::create_directories(tpl / "bin");
    std::ofstream(tpl / "bin" / "Runner.Listener") << "#!/bin/sh\nexit 0\n";
    std::ofstream(tpl / "config.sh") << "#!/bin/sh\nexit 0\n";
    fs::permissions(tpl / "bin" / "Runner.Listener", fs::perms(0755));
    fs::permissions(tpl / "config.sh", fs::perms(0755));
    TenantUsersSettings ts;
    ts.range = {1987006000, 1987006999};  // the test's own: nothing else on the machine has it
    ts.state_file = (base_ / "job-users").string();
    ts.home = (base_ / "runner" / "_home").string();
    users_ = std::make_unique<SystemTenantUsers>(ts, nullptr);
    s_.root = (base_ / "runner").string();
    s_.template_dir = tpl.string();
    s_.tenants = users_.get();
    s_.tenant_range = ts.range;
    s_.sweep.roots = {base_.string()};
    s_.sweep.sysvipc_dir = (base_ / "no-sysvipc").string();
    s_.sweep.mount_baseline = (base_ / "mounts").string();
    s_.unused_user_mark = (base_ / "unused-user").string();
    s_.install_manifest_file = (base_ / "installation").string();
    s_.path = "/usr/bin:/bin";
    s_.cleanup_timeout = 2s;
    s_.end_processes = false;
    s_.confine_jobs = [this] { ++confinements_; };
  }
  void TearDown() override {
    if (!mounted_.empty()) umount2(mounted_.c_str(), MNT_DETACH);
    if (users_) {
      try {
        users_->retire();
      } catch (const std::exception&) {
      }
    }
    if (!base_.empty()) fs::remove_all(base_);
  }
  uid_t owner(const fs::path& p) {
    struct stat st {};
    return stat(p.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
  }

  // A mount made by the system (not a job) under a swept root, while the instance idles.
  bool mount_meanwhile() {
    const fs::path at = base_ / "system-mount";
    fs::create_directories(at);
    if (mount("tmpfs", at.c_str(), "tmpfs", 0, "size=1m") != 0) return false;
    mounted_ = at.string();
    return true;
  }
  static std::string mount_table() {
    std::ifstream in("/proc/self/mountinfo");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static bool docker_group_exists() {
    std::ifstream groups("/etc/group");
    std::string text((std::istreambuf_iterator<char>(groups)), std::istreambuf_iterator<char>());
    return text.find("\ndocker:") != std::string::npos || text.rfind("docker:", 0) == 0;
  }

  // An engine (in memory) for docker assignments; false when this machine has no docker group.
  bool with_docker() {
    if (!docker_group_exists()) return false;
    engine_.emplace();
    s_.docker = &*engine_;
    s_.docker_baseline = (base_ / "docker-baseline").string();
    return true;
  }

  fs::path base_;
  std::string mounted_;
  std::optional<testing::MemoryDockerEngine> engine_;
  std::unique_ptr<SystemTenantUsers> users_;
  RunnerHostSettings s_;
  int confinements_ = 0;
};

TEST_F(ReadyNext, TheClaimHandsOverTheJobUserMadeWhileIdle) {
  LocalRunnerHost host(s_, nullptr);
  host.ready_next("");
  const auto readied = users_->current();
  ASSERT_TRUE(readied);
  EXPECT_FALSE(in_docker_group(readied->name)) << "the agent's own privileges: user";
  EXPECT_FALSE(fs::exists(s_.sweep.mount_baseline)) << "the assignment's start is its claim, not the readying";
  EXPECT_TRUE(fs::exists(s_.unused_user_mark)) << "marked never used, for an agent restarted before the claim";
  EXPECT_TRUE(fs::exists(base_ / "runner" / "bin" / "Runner.Listener")) << "the runner installed";
  EXPECT_EQ(owner(base_ / "runner" / "_work"), readied->uid);
  EXPECT_EQ(owner(base_ / "runner" / "_home"), readied->uid);
  EXPECT_EQ(confinements_, 1);

  // The claim: the same user, the jobs already confined, the mounts taken as the start.
  host.prepare("");
  const auto claimed = users_->current();
  ASSERT_TRUE(claimed);
  EXPECT_EQ(claimed->uid, readied->uid);
  EXPECT_EQ(confinements_, 2) << "confined again at the claim: the guard may have gone while idle";
  EXPECT_TRUE(fs::exists(s_.sweep.mount_baseline)) << "the assignment's start is the claim";
  EXPECT_FALSE(fs::exists(s_.unused_user_mark)) << "handed over: no longer marked never used";

  // The assignment ends: the user is retired, the next one is a new uid, confined again.
  host.clean();
  EXPECT_FALSE(users_->current());
  EXPECT_FALSE(lookup_user(readied->name));
  host.ready_next("");
  const auto next = users_->current();
  ASSERT_TRUE(next);
  EXPECT_GT(next->uid, readied->uid);
  EXPECT_EQ(confinements_, 3);
  host.ready_next("");  // twice: nothing new
  EXPECT_EQ(users_->current()->uid, next->uid);
}

TEST_F(ReadyNext, AUserHandedOverIsNeverHandedOverAgain) {
  LocalRunnerHost host(s_, nullptr);
  host.ready_next("");
  const auto first = users_->current();
  ASSERT_TRUE(first);
  host.prepare("");
  ASSERT_EQ(users_->current()->uid, first->uid);
  // Its cleaning never ran (the agent restarted, or it failed): the next claim, by this agent or
  // a restarted one, sweeps it and gets a new user.
  for (int restart = 0; restart < 2; ++restart) {
    std::optional<LocalRunnerHost> restarted;
    if (restart) restarted.emplace(s_, nullptr);
    LocalRunnerHost& h = restart ? *restarted : host;
    const auto before = users_->current();
    ASSERT_TRUE(before);
    h.prepare("");
    const auto now = users_->current();
    ASSERT_TRUE(now);
    EXPECT_GT(now->uid, before->uid) << (restart ? "restarted agent" : "same agent");
    EXPECT_FALSE(lookup_user(before->name)) << "the used user is retired, its uid never handed out again";
  }
  host.clean();
}

// The mark lets a hand-over skip the sweep: only one root alone wrote (its owner, mode 0600)
// counts. One a job could have written — its own, or open to others — marks no user unused.
TEST_F(ReadyNext, AMarkRootDidNotWriteAloneIsNotBelieved) {
  for (const char* forged : {"owned by the job user", "readable by others"}) {
    SCOPED_TRACE(forged);
    {
      LocalRunnerHost host(s_, nullptr);
      host.ready_next("");
    }
    const auto readied = users_->current();
    ASSERT_TRUE(readied);
    if (std::string(forged) == "owned by the job user") {
      ASSERT_EQ(chown(s_.unused_user_mark.c_str(), readied->uid, readied->gid), 0);
    } else {
      ASSERT_EQ(chmod(s_.unused_user_mark.c_str(), 0644), 0);
    }
    LocalRunnerHost restarted(s_, nullptr);
    restarted.prepare("");
    const auto claimed = users_->current();
    ASSERT_TRUE(claimed);
    EXPECT_GT(claimed->uid, readied->uid) << "swept and replaced like a used user";
    EXPECT_FALSE(lookup_user(readied->name));
    restarted.clean();
  }
}

TEST_F(ReadyNext, AReadiedUserLeavesWithoutAClaimWhateverTheSystemMountedMeanwhile) {
  const std::string agent_start = mount_table();  // a restarted agent's table is older than the mount below
  s_.sweep.start_mountinfo = agent_start;
  {
    LocalRunnerHost host(s_, nullptr);
    host.ready_next("");
    ASSERT_TRUE(users_->current());
    if (!mount_meanwhile()) GTEST_SKIP() << "cannot mount a tmpfs here";
    // A drain while in the pool: cleaned and retired, the mount is not the unused user's.
    EXPECT_NO_THROW(host.clean());
    EXPECT_FALSE(users_->current());
    host.ready_next("");
  }
  const auto readied = users_->current();
  ASSERT_TRUE(readied);
  // An agent restarted before the claim still knows that nothing ran as it.
  LocalRunnerHost restarted(s_, nullptr);
  EXPECT_NO_THROW(restarted.clean());
  EXPECT_FALSE(lookup_user(readied->name));
  EXPECT_FALSE(fs::exists(s_.unused_user_mark));

  // A used user is still held to the mounts of its start.
  restarted.ready_next("");
  restarted.prepare("");
  fs::remove(s_.sweep.mount_baseline);  // as if lost: the agent's own start is the comparison
  LocalRunnerHost again(s_, nullptr);
  EXPECT_THROW(again.clean(), std::runtime_error) << "a mount its start did not have fails a used user's cleaning";
}

TEST_F(ReadyNext, ReadiedInTheGroupsOfTheRecordsPrivileges) {
  if (!with_docker()) GTEST_SKIP() << "no docker group";
  LocalRunnerHost host(s_, nullptr);
  host.ready_next("docker");  // the class's privileges, not the agent's own (user)
  const auto readied = users_->current();
  ASSERT_TRUE(readied);
  EXPECT_TRUE(in_docker_group(readied->name));
  host.prepare("docker");
  EXPECT_EQ(users_->current()->uid, readied->uid) << "handed over, not replaced";
  host.clean();
}

TEST_F(ReadyNext, AClaimNeedingOtherGroupsGetsAUserOfItsOwn) {
  if (!lookup_user("root") || access("/usr/sbin/groupadd", X_OK) != 0) GTEST_SKIP();
  if (!with_docker()) GTEST_SKIP() << "no docker group";
  LocalRunnerHost host(s_, nullptr);
  host.ready_next("user");
  const auto readied = users_->current();
  ASSERT_TRUE(readied);
  EXPECT_FALSE(in_docker_group(readied->name));

  host.prepare("docker");
  const auto claimed = users_->current();
  ASSERT_TRUE(claimed);
  EXPECT_NE(claimed->uid, readied->uid);
  EXPECT_TRUE(in_docker_group(claimed->name)) << "a docker assignment's user is in the engine's group";
  EXPECT_FALSE(lookup_user(readied->name)) << "the readied user is retired, its uid never handed out again";
  EXPECT_EQ(owner(base_ / "runner" / "_work"), claimed->uid);
  EXPECT_TRUE(fs::exists(s_.docker_baseline));
  host.clean();
}

TEST_F(ReadyNext, PrivilegesThisMachineCannotGrantAreRefusedWhenClaimedNotWhenReadied) {
  s_.job_privileges = "docker";  // no engine on this machine
  LocalRunnerHost host(s_, nullptr);
  EXPECT_THROW(host.ready_next(""), std::runtime_error);
  EXPECT_FALSE(users_->current()) << "nothing made for privileges that cannot be granted";
  EXPECT_NO_THROW(host.prepare("user"));
  EXPECT_THROW(host.prepare("sudo-please"), std::runtime_error);
  host.clean();
}

// The agent restarted mid-assignment (systemd brings it back after a crash or an OOM kill): the
// clean still compares the installation with the assignment's start, kept root's alone.
TEST_F(ReadyNext, ARestartedAgentStillComparesTheInstallationWithTheAssignmentsStart) {
  {
    LocalRunnerHost host(s_, nullptr);
    host.prepare("");
  }
  ASSERT_TRUE(fs::exists(s_.install_manifest_file));
  std::ofstream(base_ / "runner" / "bin" / "Runner.Listener", std::ios::app) << "# planted\n";
  LocalRunnerHost restarted(s_, nullptr);
  try {
    restarted.clean();
    ADD_FAILURE() << "a changed installation passed a restarted agent's clean";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bin/Runner.Listener: changed"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(users_->current()) << "the job user is retired all the same";
}

TEST_F(ReadyNext, AKeptManifestAnyoneButRootCouldHaveWrittenFailsTheClean) {
  {
    LocalRunnerHost host(s_, nullptr);
    host.prepare("");
  }
  ASSERT_EQ(chmod(s_.install_manifest_file.c_str(), 0644), 0);
  LocalRunnerHost restarted(s_, nullptr);
  try {
    restarted.clean();
    ADD_FAILURE() << "a manifest open to others was believed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be compared"), std::string::npos) << e.what();
  }
  // And one whose installation is untouched passes after a restart: nothing is failed for nothing.
  ASSERT_EQ(chmod(s_.install_manifest_file.c_str(), 0600), 0);
  LocalRunnerHost again(s_, nullptr);
  again.prepare("");
  LocalRunnerHost after(s_, nullptr);
  EXPECT_NO_THROW(after.clean());
}

}  // namespace
}  // namespace runpool::agent
