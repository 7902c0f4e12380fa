// An agent restarted mid-assignment follows the Listener its predecessor started — the process its
// mark names — and never a process of the runner user that merely calls itself Runner.Listener.
// Real processes as the real runpool-runner user: needs root and that user (scripts/setup.sh).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "agent/local_listener.h"
#include "agent/local_runner_host.h"
#include "agent/state_file.h"

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ListenerAdopt : public ::testing::Test {
 protected:
  void SetUp() override {
    user_ = lookup_user("runpool-runner");
    if (geteuid() != 0 || !user_) GTEST_SKIP() << "needs root and the runpool-runner user (scripts/setup.sh)";
    char tmpl[] = "/tmp/listener-adopt-XXXXXX";
    base_ = mkdtemp(tmpl);
    chmod(base_.c_str(), 0755);
    fs::create_directories(base_ / "runner" / "bin");
    chmod((base_ / "runner").c_str(), 0755);
    std::ofstream(base_ / "runner" / "bin" / "Runner.Listener") << "#!/bin/bash\ntrap 'exit 0' INT\nwhile :; do sleep 0.05; done\n";
    fs::permissions(base_ / "runner" / "bin" / "Runner.Listener", fs::perms(0755));
  }
  void TearDown() override {
    for (pid_t p : started_) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
    if (!base_.empty()) fs::remove_all(base_);
  }
  RunnerHostSettings settings() {
    RunnerHostSettings s;
    s.root = (base_ / "runner").string();
    s.user = *user_;
    s.path = "/usr/bin:/bin";
    s.end_processes = false;  // a shared machine: never end every process of the user here
    s.listener_mark = (base_ / "runner.listener").string();
    return s;
  }
  // A process of the runner user named as a Listener, leading a process group of its own.
  pid_t decoy() {
    SpawnOptions o;
    o.argv = {"/bin/bash", "-c", "exec -a 'Runner.Listener run' sleep 60"};
    o.env = {"PATH=/usr/bin:/bin"};
    o.user = *user_;
    o.capture_output = false;
    const pid_t p = spawn(o).pid;
    started_.push_back(p);
    return p;
  }
  static pid_t pid_of(const std::unique_ptr<ListenerProcess>& l) {
    auto* local = dynamic_cast<LocalListener*>(l.get());
    return local ? local->pid() : -1;
  }
  static bool running(pid_t p) { return kill(p, 0) == 0 && waitpid(p, nullptr, WNOHANG) == 0; }

  std::optional<UserIdentity> user_;
  fs::path base_;
  std::vector<pid_t> started_;
};

TEST_F(ListenerAdopt, ARestartedAgentFollowsTheMarkedListenerNotAProcessNamedLikeIt) {
  const pid_t before = decoy();  // started first: earlier in /proc's order
  LocalRunnerHost host(settings(), nullptr);
  auto listener = host.start_listener(ListenerStart{});
  started_.push_back(pid_of(listener));  // ended at the test's end, should it fail before
  const auto mark = parse_listener_mark(read_state_file(settings().listener_mark).value_or(""));
  ASSERT_TRUE(mark);
  EXPECT_EQ(mark->pid, pid_of(listener));
  const pid_t after = decoy();
  LocalRunnerHost again(settings(), nullptr);
  auto adopted = again.adopt_listener();
  ASSERT_TRUE(adopted);
  EXPECT_EQ(pid_of(adopted), pid_of(listener));
  adopted->interrupt();
  std::optional<ExitStatus> status;
  for (int i = 0; i < 200 && !status; ++i) {
    status = listener->exit_status();
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(status) << "the interrupt reached the real Listener";
  if (status) started_.erase(std::find(started_.begin(), started_.end(), pid_of(listener)));  // reaped
  EXPECT_TRUE(running(before));
  EXPECT_TRUE(running(after));
  // Its Listener gone, the mark names no running process: nothing is followed, decoys or not.
  EXPECT_FALSE(LocalRunnerHost(settings(), nullptr).adopt_listener());
}

}  // namespace
}  // namespace runpool::agent
