// The Listener's tree: leftovers by parent links, and a Worker only below the Listener, read from
// a /proc of the test's own (<pid>/status, stat, cmdline).
#include "agent/listener_tree.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "agent/process.h"

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;

// Leftover cleaning while the Listener runs: its tree (the Worker and the job) is never a leftover.
TEST(FindLeftovers, OnlyProcessesOutsideTheListenersTreeGo) {
  // 10 Listener, 11 its Worker, 12 the job's shell, 13 its child; 20 a process a job detached
  // (reparented to 1), 21 its child.
  std::vector<UserProcess> procs = {{13, 12}, {20, 1}, {11, 10}, {21, 20}, {10, 1}, {12, 11}};
  Leftovers l = find_leftovers(procs, 10);
  EXPECT_EQ(l.kill, (std::vector<pid_t>{20, 21}));
  EXPECT_TRUE(l.job_in_hand);
}

TEST(FindLeftovers, AnIdleListenerHasNoJobInHand) {
  Leftovers l = find_leftovers({{10, 1}, {30, 1}}, 10);
  EXPECT_EQ(l.kill, (std::vector<pid_t>{30}));
  EXPECT_FALSE(l.job_in_hand);
  l = find_leftovers({{10, 1}}, 10);
  EXPECT_TRUE(l.kill.empty());
  EXPECT_FALSE(l.job_in_hand);
}

TEST(FindLeftovers, AChildBeingSpawnedIsSparedBeforeItIsAWorker) {
  // Between fork and exec the child still shows the Listener's command line: its parent decides.
  Leftovers l = find_leftovers({{10, 1}, {11, 10}}, 10);
  EXPECT_TRUE(l.kill.empty());
  EXPECT_TRUE(l.job_in_hand);
}

// A /proc with the processes a test names: uid, parent, command line (argv joined by NULs).
class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/runpool-fake-proc-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void add(pid_t pid, uid_t uid, pid_t ppid, const std::vector<std::string>& argv, char state = 'S',
           const std::string& comm = "x", uint64_t start = 777) {
    const fs::path d = fs::path(dir_) / std::to_string(pid);
    fs::create_directories(d);
    std::ofstream(d / "status") << "Name:\t" << comm << "\nState:\t" << state << "\nUid:\t" << uid << "\t" << uid
                                << "\t" << uid << "\t" << uid << "\n";
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    // cutime cstime priority nice threads itrealvalue starttime vsize
    std::ofstream(d / "stat") << pid << " (" << comm << ") " << state << " " << ppid << " " << pid
                              << " 0 0 -1 4194560 10 0 0 0 1 2 0 0 20 0 1 0 " << start << " 1000\n";
    std::ofstream cmd(d / "cmdline", std::ios::binary);
    for (const auto& a : argv) cmd << a << '\0';
  }
  std::string dir_;
};

TEST_F(FakeProc, ParentsAreReadPastACommandNameWithSpacesAndParentheses) {
  add(40, 1001, 31, {"x"}, 'S', "a) b (c");
  EXPECT_EQ(process_parent(40, dir_), 31);
  EXPECT_EQ(process_parent(41, dir_), 0) << "gone";
  EXPECT_EQ(processes_of_user(1001, dir_), (std::vector<pid_t>{40}));
  EXPECT_EQ(process_cmdline(40, dir_), "x");
}

TEST_F(FakeProc, DescentIsAWalkUpParentLinksThatStopsAtInitAndAtItsBound) {
  // 10 ← 11 ← 12 ← 13; 50 ↔ 51 a loop (a tree read while it changes can show one).
  add(10, 1001, 1, {"listener"});
  add(11, 1001, 10, {"w"});
  add(12, 1001, 11, {"s"});
  add(13, 1001, 12, {"c"});
  add(50, 1001, 51, {"a"});
  add(51, 1001, 50, {"b"});
  EXPECT_TRUE(descends_from(11, 10, dir_));
  EXPECT_TRUE(descends_from(13, 10, dir_));
  EXPECT_FALSE(descends_from(10, 10, dir_)) << "itself is no descendant";
  EXPECT_FALSE(descends_from(13, 10, dir_, 2)) << "three links up: past a bound of two";
  EXPECT_FALSE(descends_from(50, 10, dir_));
  EXPECT_FALSE(descends_from(99, 10, dir_)) << "gone";
  EXPECT_FALSE(descends_from(13, 0, dir_));
}

TEST_F(FakeProc, AWorkerCountsOnlyInTheListenersTree) {
  add(10, 1001, 1, {"/r/bin/Runner.Listener", "run"});
  add(20, 1001, 1, {"Runner.Worker spawnclient x", "3000"});  // a job left it: reparented to init
  add(21, 1001, 20, {"/r/bin/Runner.Worker", "spawnclient", "5", "6"});  // below that one
  add(30, 1002, 10, {"/r/bin/Runner.Worker", "spawnclient", "5", "6"});  // another user's
  EXPECT_FALSE(listener_has_worker(1001, 10, dir_));
  add(11, 1001, 10, {"/r/bin/Runner.Worker", "spawnclient", "5", "6"});
  EXPECT_TRUE(listener_has_worker(1001, 10, dir_)) << "its child";
  EXPECT_FALSE(listener_has_worker(1001, 0, dir_)) << "no Listener";
  EXPECT_FALSE(listener_has_worker(1001, 20, dir_ + "/none"));
}

TEST_F(FakeProc, AWorkerDeeperInTheTreeCountsAndAZombieDoesNot) {
  add(10, 1001, 1, {"/r/bin/Runner.Listener", "run"});
  add(11, 1001, 10, {"bash"});
  add(12, 1001, 11, {"/r/bin/Runner.Worker", "spawnclient"}, 'Z');
  EXPECT_FALSE(listener_has_worker(1001, 10, dir_)) << "a zombie Worker is gone";
  add(13, 1001, 11, {"/r/bin/Runner.Worker", "spawnclient"});
  EXPECT_TRUE(listener_has_worker(1001, 10, dir_));
}

TEST_F(FakeProc, StartTimeIsTheTwentySecondField) {
  add(40, 1001, 1, {"x"}, 'S', "a) 1 2 3 (b", 123456789);
  EXPECT_EQ(process_start_time(40, dir_), 123456789u);
  EXPECT_EQ(process_start_time(41, dir_), std::nullopt);
}

TEST(ListenerMark, RoundTripsAndRefusesWhatItDidNotWrite) {
  const ListenerMark m{4242, 987654321};
  EXPECT_EQ(format_listener_mark(m), "4242 987654321\n");
  EXPECT_EQ(parse_listener_mark(format_listener_mark(m)), m);
  for (const char* bad : {"", "4242", "4242 ", " 98", "x 1", "4242 1x", "0 5", "-3 5", "4242 5 6"}) {
    EXPECT_EQ(parse_listener_mark(bad), std::nullopt) << bad;
  }
}

TEST(ChooseListener, OnlyTheMarkedProcessStartedWhenTheMarkSays) {
  const std::vector<ListenerCandidate> found = {
      {20, 500, true},   // a job's process named Runner.Listener, leading a group of its own
      {10, 100, true},   // the Listener the earlier agent started
  };
  EXPECT_EQ(choose_listener(found, ListenerMark{10, 100}), 10);
  EXPECT_EQ(choose_listener(found, ListenerMark{10, 99}), 0) << "its pid, another process: the marked one is gone";
  EXPECT_EQ(choose_listener(found, ListenerMark{30, 100}), 0);
  EXPECT_EQ(choose_listener({{10, std::nullopt, true}}, ListenerMark{10, 100}), 0) << "no start time: not proven";
  // No mark kept (an earlier agent kept none): by process group, as before.
  EXPECT_EQ(choose_listener({{11, 1, false}, {10, 2, true}}, std::nullopt), 10);
  EXPECT_EQ(choose_listener({{11, 1, false}, {12, 2, false}}, std::nullopt), 11);
  EXPECT_EQ(choose_listener({}, std::nullopt), 0);
}

}  // namespace
}  // namespace runpool::agent
