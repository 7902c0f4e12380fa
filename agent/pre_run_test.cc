// The pre-run script's runner against small real scripts in a temporary directory.
#include "agent/pre_run.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class PreRunTest : public ::testing::Test {
 protected:
  PreRunTest() {
    char tmpl[] = "/tmp/pre-run-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  ~PreRunTest() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // An executable script with `body` after a #!/bin/sh line.
  std::string script(const std::string& body, const std::string& name = "pre-run.sh") {
    fs::path p = dir_ / name;
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    chmod(p.c_str(), 0755);
    return p.string();
  }

  PreRunOptions options(const std::string& path, Duration timeout = 10s) {
    PreRunOptions o;
    o.script = path;
    o.timeout = timeout;
    o.instance_id = "i-0123456789abcdef0";
    o.pool = "ci";
    o.resource_class = "large";
    return o;
  }

  PreRunResult run(const PreRunOptions& o) { return run_pre_run_script(o, [&] { ++pulses_; }, nullptr); }

  std::string read(const std::string& name) {
    std::ifstream in(dir_ / name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  fs::path dir_;
  int pulses_ = 0;
};

bool gone(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return true;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

TEST_F(PreRunTest, ASucceedingScriptIsOkAndSaysHowLongItTook) {
  PreRunResult r = run(options(script("echo mounting /dev/nvme1n1\necho done")));
  EXPECT_EQ(r.status, pool::PreRun::kOk);
  EXPECT_FALSE(r.failed());
  EXPECT_EQ(r.detail, "exit 0 after 0s");
  EXPECT_NE(r.output.find("mounting /dev/nvme1n1\ndone\n"), std::string::npos) << r.output;
  EXPECT_FALSE(r.cancelled);
}

TEST_F(PreRunTest, ANonZeroExitFailsWithTheStatusAndTheLastLineOfOutput) {
  PreRunResult r = run(options(script("echo 'fetching the cache'\necho 'no disk at /dev/nvme1n1' >&2\necho\nexit 3")));
  EXPECT_EQ(r.status, pool::PreRun::kFailed);
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(r.detail, "exit 3: no disk at /dev/nvme1n1");
  EXPECT_NE(r.output.find("fetching the cache"), std::string::npos) << "stdout and stderr are both kept";

  r = run(options(script("exit 1")));
  EXPECT_EQ(r.detail, "exit 1") << "no output: the status alone";
  r = run(options(script("echo about to die\nkill -9 $$")));
  EXPECT_EQ(r.status, pool::PreRun::kFailed);
  EXPECT_EQ(r.detail, "killed by signal 9: about to die");
}

TEST_F(PreRunTest, AScriptThatCannotStartFails) {
  PreRunResult r = run(options((dir_ / "missing.sh").string()));
  EXPECT_EQ(r.status, pool::PreRun::kFailed);
  EXPECT_NE(r.detail.find("missing.sh"), std::string::npos) << r.detail;
  std::string not_executable = script("exit 0", "plain.sh");
  chmod(not_executable.c_str(), 0644);  // no execute bit: not even root may exec it
  r = run(options(not_executable));
  EXPECT_EQ(r.status, pool::PreRun::kFailed);
  EXPECT_NE(r.detail.find("exec"), std::string::npos) << r.detail;
  EXPECT_LE(r.detail.size(), kPreRunDetailMax);
}

TEST_F(PreRunTest, TheTimeoutKillsTheWholeProcessGroupEvenWhatIgnoresSigterm) {
  // A child that ignores SIGTERM, and the script itself waiting on it.
  const std::string path = script(
      "sh -c 'trap \"\" TERM; echo $$ > " + (dir_ / "child.pid").string() + "; while :; do sleep 0.1; done' &\n"
      "echo $$ > " + (dir_ / "leader.pid").string() + "\n"
      "echo warming the cache\n"
      "wait\n");
  const auto start = std::chrono::steady_clock::now();
  PreRunResult r = run(options(path, 600ms));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status, pool::PreRun::kTimeout);
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(r.detail, "timed out after 600ms: warming the cache");
  EXPECT_LT(took, 5s);
  EXPECT_GE(pulses_, 3) << "the watchdog is fed while the script runs";
  const pid_t child = std::stoi(read("child.pid"));
  const pid_t leader = std::stoi(read("leader.pid"));
  bool ended = false;
  for (int i = 0; i < 100 && !ended; ++i) {  // reaped by init: at most a moment later
    ended = gone(child) && gone(leader);
    if (!ended) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(ended) << "the group outlived the timeout: child " << child << ", leader " << leader;
  if (!ended) kill(child, SIGKILL);
}

TEST_F(PreRunTest, ACancelledRunEndsTheScriptAndHasNoResult) {
  const std::string path = script("echo $$ > " + (dir_ / "leader.pid").string() + "\nsleep 30");
  const auto start = std::chrono::steady_clock::now();
  PreRunResult r = run_pre_run_script(options(path), nullptr,
                                      [&] { return std::chrono::steady_clock::now() - start > 300ms; });
  EXPECT_TRUE(r.cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  const pid_t leader = std::stoi(read("leader.pid"));
  EXPECT_TRUE(gone(leader));
}

TEST_F(PreRunTest, OutputIsCappedToItsTail) {
  PreRunResult r = run(options(script("i=0\nwhile [ $i -lt 400 ]; do echo \"line $i of the build log\"; i=$((i+1)); "
                                      "done\necho 'the last words'\nexit 4")));
  EXPECT_LE(r.output.size(), kPreRunOutputTail);
  EXPECT_GT(r.output.size(), kPreRunOutputTail - 100);
  EXPECT_EQ(r.output.find("line 0 of"), std::string::npos) << "the head is dropped";
  EXPECT_NE(r.output.find("line 399 of"), std::string::npos);
  EXPECT_EQ(r.detail, "exit 4: the last words");
}

TEST_F(PreRunTest, RunsWithACleanMinimalEnvironmentAsTheAgentFromRootWithStdinClosed) {
  setenv("AWS_SECRET_ACCESS_KEY", "leak-me-not", 1);
  setenv("RUNPOOL_TABLE", "agent-only", 1);
  PreRunResult r = run(options(script("env\necho \"uid=$(id -u) cwd=$(pwd) stdin=$(readlink /proc/self/fd/0)\"\n"
                                      "cat > " + (dir_ / "stdin.txt").string())));
  unsetenv("AWS_SECRET_ACCESS_KEY");
  unsetenv("RUNPOOL_TABLE");
  ASSERT_EQ(r.status, pool::PreRun::kOk) << r.output;
  std::set<std::string> names;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("uid=", 0) == 0) continue;
    names.insert(line.substr(0, line.find('=')));
  }
  // The shell adds PWD (and may add SHLVL, _); nothing else may be there.
  const std::set<std::string> allowed = {"PATH", "HOME", "RUNPOOL_INSTANCE_ID", "RUNPOOL_POOL", "RUNPOOL_RESOURCE_CLASS",
                                         "PWD", "SHLVL", "_", "OLDPWD"};
  for (const auto& n : names) EXPECT_TRUE(allowed.count(n)) << "unexpected variable " << n << " in\n" << r.output;
  EXPECT_NE(r.output.find(std::string("PATH=") + kPreRunPath + "\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("HOME=/root\n"), std::string::npos);
  EXPECT_NE(r.output.find("RUNPOOL_INSTANCE_ID=i-0123456789abcdef0\n"), std::string::npos);
  EXPECT_NE(r.output.find("RUNPOOL_POOL=ci\n"), std::string::npos);
  EXPECT_NE(r.output.find("RUNPOOL_RESOURCE_CLASS=large\n"), std::string::npos);
  EXPECT_EQ(r.output.find("leak-me-not"), std::string::npos);
  EXPECT_EQ(r.output.find("agent-only"), std::string::npos);
  EXPECT_NE(r.output.find("uid=" + std::to_string(geteuid()) + " cwd=/ stdin=/dev/null"), std::string::npos)
      << r.output;
  EXPECT_EQ(read("stdin.txt"), "") << "stdin is /dev/null: nothing to read, no wait";
}

TEST(PreRunEnvironment, LeavesOutAResourceClassNotKnownYet) {
  PreRunOptions o;
  o.instance_id = "i-1";
  o.pool = "ci";
  EXPECT_EQ(pre_run_environment(o), (std::vector<std::string>{std::string("PATH=") + kPreRunPath, "HOME=/root",
                                                             "RUNPOOL_INSTANCE_ID=i-1", "RUNPOOL_POOL=ci"}));
}

TEST(PreRunText, CleanTextKeepsOneLineOfValidUtf8WithoutControls) {
  EXPECT_EQ(clean_text("  plain  ", 200), "plain");
  EXPECT_EQ(clean_text("a\tb\r\nc", 200), "a b c");
  EXPECT_EQ(clean_text("\x1b[31mred\x1b[0m bell\x07 del\x7f", 200), "red bell del");
  EXPECT_EQ(clean_text("nul\0byte", 200), "nul");  // a C string: what follows NUL is not there
  EXPECT_EQ(clean_text(std::string("nul\0byte", 8), 200), "nulbyte");
  EXPECT_EQ(clean_text("caf\xc3\xa9 \xe2\x9c\x93", 200), "caf\xc3\xa9 \xe2\x9c\x93") << "valid UTF-8 stays";
  EXPECT_EQ(clean_text("bad \xff\xfe end", 200), "bad ?? end");
  EXPECT_EQ(clean_text("overlong \xc0\xaf surrogate \xed\xa0\x80", 200), "overlong ?? surrogate ???");
  EXPECT_EQ(clean_text("cut \xe2\x9c", 200), "cut ??") << "a sequence cut short";
  EXPECT_EQ(clean_text("c1 \xc2\x9b control", 200), "c1  control");
  EXPECT_EQ(clean_text("\n\t \n", 200), "");
}

TEST(PreRunText, CleanTextCutsOnACharacterBoundary) {
  const std::string long_text = std::string(150, 'x') + std::string(30, 'y') + "\xc3\xa9\xc3\xa9\xc3\xa9" +
                                std::string(100, 'z');
  const std::string cut = clean_text(long_text, kPreRunDetailMax);
  EXPECT_LE(cut.size(), kPreRunDetailMax);
  EXPECT_EQ(cut.substr(cut.size() - 3), "…");
  EXPECT_EQ(clean_text(cut, 1000), cut) << "the cut left valid UTF-8";
  std::string accents;
  for (int i = 0; i < 150; ++i) accents += "\xc3\xa9";  // 300 bytes of two-byte characters
  const std::string cut2 = clean_text(accents, 200);
  EXPECT_LE(cut2.size(), 200u);
  EXPECT_EQ(clean_text(cut2, 1000), cut2);
  EXPECT_EQ(cut2.size(), 196u + 3u) << "197 bytes would split a character: 196 kept";
}

TEST(PreRunText, LastLineSkipsBlankLines) {
  EXPECT_EQ(last_line("one\ntwo\n\n  \n"), "two");
  EXPECT_EQ(last_line("one\r\ntwo\r\n"), "two");
  EXPECT_EQ(last_line("only"), "only");
  EXPECT_EQ(last_line("\n\n"), "");
  EXPECT_EQ(last_line(""), "");
}

TEST(PreRunResultOf, TimeoutWinsOverTheSignalThatEndedIt) {
  CommandOutcome c;
  c.timed_out = true;
  c.status = ExitStatus{true, SIGTERM};
  c.output = "step 3 of 9\n";
  PreRunResult r = pre_run_result(c, std::chrono::minutes(10), std::chrono::minutes(10));
  EXPECT_EQ(r.status, pool::PreRun::kTimeout);
  EXPECT_EQ(r.detail, "timed out after 10m: step 3 of 9");
  c = CommandOutcome{};
  c.exit_code = 0;
  r = pre_run_result(c, std::chrono::minutes(10), std::chrono::milliseconds(83'400));
  EXPECT_EQ(r.status, pool::PreRun::kOk);
  EXPECT_EQ(r.detail, "exit 0 after 83s");
  c.exit_code = 2;
  c.output = std::string(500, 'e') + "\n";
  r = pre_run_result(c, std::chrono::minutes(10), 1s);
  EXPECT_EQ(r.detail.size(), kPreRunDetailMax);
  EXPECT_EQ(r.detail.rfind("exit 2: eee", 0), 0u);
}

}  // namespace
}  // namespace runpool::agent
