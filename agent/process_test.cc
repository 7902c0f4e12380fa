// The process helpers against real short-lived local processes.
#include "agent/process.h"

#include <linux/keyctl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

namespace runpool::agent {
namespace {

using namespace std::chrono_literals;

TEST(Process, RunsWithACleanEnvironmentDefaultSignalsAndAnEmptyMask) {
  // The agent blocks SIGINT/SIGTERM and ignores SIGPIPE; none of that may reach a child.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  auto old_pipe = signal(SIGPIPE, SIG_IGN);
  setenv("AWS_SECRET_ACCESS_KEY", "leak", 1);
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "grep -E '^(SigBlk|SigIgn)' /proc/self/status; env; echo pgid=$(ps -o pgid= -p $$)"};
  o.env = {"PATH=/usr/bin:/bin", "ONLY=this"};
  o.cwd = "/";
  CommandOutcome r = run_command(o, 10s, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  signal(SIGPIPE, old_pipe);
  unsetenv("AWS_SECRET_ACCESS_KEY");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("SigBlk:\t0000000000000000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("SigIgn:\t0000000000000000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ONLY=this"), std::string::npos);
  EXPECT_EQ(r.output.find("AWS_"), std::string::npos) << r.output;
}

TEST(Process, StartsInItsOwnProcessGroup) {
  SpawnOptions o;
  o.argv = {"/bin/sleep", "5"};
  Child c = spawn(o);
  EXPECT_EQ(getpgid(c.pid), c.pid);
  EXPECT_NE(getpgid(c.pid), getpgrp());
  kill(-c.pid, SIGKILL);
  int ws;
  waitpid(c.pid, &ws, 0);
  EXPECT_EQ(exit_status_of(ws), (ExitStatus{true, SIGKILL}));
  close(c.stdout_fd);
  close(c.stderr_fd);
}

TEST(Process, AnExecFailureIsAnErrorNamingTheProgram) {
  SpawnOptions o;
  o.argv = {"/nonexistent/bin/Runner.Listener", "run"};
  try {
    spawn(o);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/bin/Runner.Listener"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exec"), std::string::npos) << e.what();
  }
  o.argv = {"/bin/true"};
  o.cwd = "/nonexistent-dir";
  EXPECT_THROW(spawn(o), std::runtime_error);
}

TEST(Process, ATimeoutEndsTheWholeGroup) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "sleep 30 & sleep 30"};
  auto start = std::chrono::steady_clock::now();
  int pulses = 0;
  CommandOutcome r = run_command(o, 300ms, [&] { ++pulses; });
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_GE(pulses, 2) << "the watchdog pulse runs while waiting";
}

TEST(Process, ExitCodesAndOutputTail) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "printf 'a%.0s' $(seq 1 5000); echo err >&2; exit 3"};
  CommandOutcome r = run_command(o, 10s, nullptr, 100);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LE(r.output.size(), 100u);
  EXPECT_NE(r.output.find("err"), std::string::npos);
}

// Reads `fd` (bounded, about 5 s) until `out` holds `want`.
bool read_until(int fd, std::string& out, const std::string& want) {
  for (int i = 0; i < 250 && out.find(want) == std::string::npos; ++i) {
    read_available(fd, out);
    if (out.find(want) == std::string::npos) std::this_thread::sleep_for(20ms);
  }
  return out.find(want) != std::string::npos;
}

// The Listener must outlive an agent killed with kill -9 (the next agent takes it over): with
// pipes its next line of output after the agent is gone kills it (SIGPIPE), with output files it
// runs on. The files are read from the start, and their end only means "nothing new yet".
TEST(Process, OutputToFilesLetsTheChildOutliveItsReader) {
  for (bool files : {false, true}) {
    SpawnOptions o;
    o.argv = {"/bin/sh", "-c", "echo first; echo warn >&2; sleep 0.5; echo second; exit 7"};
    o.env = {"PATH=/usr/bin:/bin"};
    o.output_to_files = files;
    Child c = spawn(o);
    EXPECT_EQ(c.output_in_files, files);
    std::string out, err;
    ASSERT_TRUE(read_until(c.stdout_fd, out, "first\n")) << out;
    ASSERT_TRUE(read_until(c.stderr_fd, err, "warn\n")) << err;
    if (files) {
      EXPECT_FALSE(read_available(c.stdout_fd, out)) << "at the end of the file for now";
      ASSERT_TRUE(read_until(c.stdout_fd, out, "second\n")) << "later lines still come: " << out;
      EXPECT_EQ(out, "first\nsecond\n");
    }
    close(c.stdout_fd);  // the reader (the agent) is gone
    close(c.stderr_fd);
    int ws = 0;
    ASSERT_EQ(waitpid(c.pid, &ws, 0), c.pid);
    if (files) {
      EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 7) << "status " << ws;
    } else {
      EXPECT_TRUE(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGPIPE) << "status " << ws;
    }
  }
}

TEST(Process, FindsProcessesByUserAndCommandLine) {
  SpawnOptions o;
  o.argv = {"/bin/sleep", "7.25"};
  Child c = spawn(o);
  auto mine = processes_of_user(getuid());
  EXPECT_NE(std::find(mine.begin(), mine.end(), c.pid), mine.end());
  EXPECT_EQ(std::find(mine.begin(), mine.end(), getpid()), mine.end()) << "never itself";
  EXPECT_EQ(process_cmdline(c.pid), "/bin/sleep 7.25");
  kill(c.pid, SIGKILL);
  int ws;
  waitpid(c.pid, &ws, 0);
  EXPECT_EQ(process_cmdline(c.pid), "");
  close(c.stdout_fd);
  close(c.stderr_fd);
}

// keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0) as a child reports it.
TEST(Process, EveryChildStartsInASessionKeyringOfItsOwn) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3 to report a child's keyring";
  // The agent's own session keyring, as systemd gives a service one.
  const long mine = syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "runpool-process-test");
  ASSERT_GT(mine, 0) << std::strerror(errno);
  auto child_keyring = [] {
    SpawnOptions o;
    o.argv = {"/usr/bin/python3", "-c",
              "import ctypes; print(ctypes.CDLL(None).syscall(250, 0, -3, 0))"};
    o.env = {"PATH=/usr/bin:/bin"};
    CommandOutcome r = run_command(o, 20s, nullptr);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return std::atol(r.output.c_str());
  };
  const long first = child_keyring(), second = child_keyring();
  EXPECT_GT(first, 0);
  EXPECT_NE(first, mine) << "a child must not share the agent's session keyring";
  EXPECT_NE(first, second) << "nor one child another's";
}

TEST(Process, RefusesToEndEveryProcessOfRoot) {
  UserIdentity root{"root", 0, 0, {0}};
  EXPECT_THROW(end_processes_of_user(root, 1s, nullptr), std::invalid_argument);
}

TEST(Process, RunsAsAnotherUserWithItsGroups) {
  auto user = lookup_user("runpool-runner");
  if (geteuid() != 0 || !user) GTEST_SKIP() << "needs root and the runpool-runner user (scripts/setup.sh)";
  SpawnOptions o;
  o.argv = {"/usr/bin/id"};
  o.user = *user;
  CommandOutcome r = run_command(o, 10s, nullptr);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("uid=" + std::to_string(user->uid) + "(runpool-runner)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("groups=0("), std::string::npos) << "no supplementary group of root's: " << r.output;
  EXPECT_FALSE(lookup_user("no-such-user-runpool"));
}

}  // namespace
}  // namespace runpool::agent
