// The runner root's job-writable entries (`_work`, `_home`, `_diag`, the cache's `_work/_tool`)
// swapped for symbolic links to a place only root may use, as a job could leave them: the end of
// the assignment — the cache kept, the runner root cleaned, the job user swept — and the next
// assignment's start never move, chown, delete or read anything through them. Needs root and
// useradd; skipped otherwise.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "agent/job_cache.h"
#include "agent/local_runner_host.h"
#include "common/metrics/testing.h"

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class RunnerRootLinks : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/usr/sbin/useradd", X_OK) != 0) GTEST_SKIP() << "needs root and useradd";
    char tmpl[] = "/tmp/runner-links-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    chmod(base_.c_str(), 0755);
    const fs::path tpl = base_ / "template";
    fs::create_directories(tpl / "bin");
    std::ofstream(tpl / "bin" / "Runner.Listener") << "#!/bin/sh\nexit 0\n";
    std::ofstream(tpl / "config.sh") << "#!/bin/sh\nexit 0\n";
    fs::permissions(tpl / "bin" / "Runner.Listener", fs::perms(0755));
    fs::permissions(tpl / "config.sh", fs::perms(0755));
    // Root's alone, with a sentinel wherever a followed link would lead.
    char out[] = "/tmp/runner-links-root-only-XXXXXX";
    ASSERT_NE(mkdtemp(out), nullptr);
    outside_ = out;
    for (const char* d : {"", "_tool", "_tool/node"}) {
      fs::create_directories(outside_ / d);
      std::ofstream(outside_ / d / "sentinel") << "root's";
    }
    before_ = snapshot();
  }
  void TearDown() override {
    std::error_code ec;
    if (!base_.empty()) fs::remove_all(base_, ec);
    if (!outside_.empty()) fs::remove_all(outside_, ec);
  }
  RunnerHostSettings settings(const fs::path& root) {
    TenantUsersSettings ts;
    ts.range = {1987005000, 1987005999};  // the test's own: nothing else on the machine has it
    ts.state_file = (base_ / "job-users").string();
    ts.home = (root / "_home").string();
    users_ = std::make_unique<SystemTenantUsers>(ts, nullptr);
    RunnerHostSettings s;
    s.root = root.string();
    s.template_dir = (base_ / "template").string();
    s.path = "/usr/bin:/bin";
    s.config_sh_timeout = 20s;
    s.cleanup_timeout = 2s;
    s.end_processes = false;
    s.tenants = users_.get();
    s.tenant_range = ts.range;
    s.sweep.roots = {base_.string()};
    s.sweep.sysvipc_dir = (base_ / "no-sysvipc").string();
    s.sweep.check_mqueue = false;
    s.sweep.mount_baseline = root.string() + ".mounts";
    return s;
  }
  // Path → owner, mode and content of everything in the root-only place.
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> out;
    for (auto& e : fs::recursive_directory_iterator(outside_)) {
      struct stat st {};
      lstat(e.path().c_str(), &st);
      std::ostringstream v;
      v << st.st_uid << ":" << st.st_gid << " " << std::oct << st.st_mode << " ";
      if (S_ISREG(st.st_mode)) v << std::ifstream(e.path()).rdbuf();
      out[e.path().lexically_relative(outside_).string()] = v.str();
    }
    return out;
  }
  std::unique_ptr<SystemTenantUsers> users_;
  fs::path base_, outside_;
  std::map<std::string, std::string> before_;
};

TEST_P(RunnerRootLinks, NeitherTheEndOfAnAssignmentNorTheNextStartGoesThroughThem) {
  const fs::path root = base_ / "runner";
  RunnerHostSettings s = settings(root);
  JobCache cache((base_ / "runner.caches").string(), {"_work/_tool"});
  s.cache = &cache;
  s.cache_scope = CacheScope::kRepository;
  LocalRunnerHost host(s, nullptr);
  host.prepare("");
  ASSERT_TRUE(host.configure({"https://github.com/acme/app", "l", "ci-i-1-g1", Secret("t")}).ok());
  const UserIdentity job = *users_->current();

  // What the job leaves: the component a link to the root-only place.
  const fs::path component = root / GetParam();
  fs::create_directories(root / "_work");
  fs::remove_all(component);
  fs::create_directory_symlink(outside_, component);
  ASSERT_EQ(lchown(component.c_str(), job.uid, job.gid), 0);

  metrics::testing::CapturedLog log;
  EXPECT_NO_THROW(host.clean());
  EXPECT_EQ(snapshot(), before_) << "nothing of the root-only place moved, chowned or deleted";
  EXPECT_FALSE(fs::exists(fs::symlink_status(component))) << "the link itself is gone";
  EXPECT_FALSE(fs::exists(base_ / "runner.caches")) << "no cache kept through a link";
  if (std::string(GetParam()).rfind("_work", 0) == 0) {
    EXPECT_NE(log.text().find("not kept"), std::string::npos) << log.text();
  }

  host.prepare("");
  ASSERT_TRUE(host.configure({"https://github.com/acme/app", "l", "ci-i-1-g2", Secret("t")}).ok());
  EXPECT_FALSE(fs::exists(root / "_work" / "_tool" / "sentinel")) << "nothing of it reached the next job user";
  struct stat st {};
  ASSERT_EQ(lstat((root / "_work").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_NO_THROW(host.clean());
  EXPECT_EQ(snapshot(), before_);
}

TEST_F(RunnerRootLinks, TheRunnersIdentityIsNotReadThroughALink) {
  const fs::path root = base_ / "runner";
  LocalRunnerHost host(settings(root), nullptr);
  host.prepare("");
  std::ofstream(outside_ / "runner.json") << R"({"agentId": 7, "agentName": "root's"})";
  fs::create_symlink(outside_ / "runner.json", root / ".runner");
  EXPECT_FALSE(host.configured());
  fs::remove(root / ".runner");
  std::ofstream(root / ".runner") << R"({"agentId": 7, "agentName": "the runner's"})";
  ASSERT_TRUE(host.configured());
  EXPECT_EQ(host.configured()->name, "the runner's");
  host.clean();
}

INSTANTIATE_TEST_SUITE_P(Components, RunnerRootLinks, ::testing::Values("_work", "_work/_tool", "_home", "_diag"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = c == '/' ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace runpool::agent
