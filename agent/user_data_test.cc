// cloud-init/user-data.sh.in rendered and run by bash in local-cloud mode, with a fake agent and
// stubbed `id`/`useradd` on PATH; and its systemd unit kept identical to agent/runpool-agent.service.
#include "agent/user_data.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_exec(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
  fs::permissions(p, fs::perms(0755));
}

const std::string kTemplate = read_file(fs::path(RUNPOOL_SOURCE_DIR) / "cloud-init" / "user-data.sh.in");

class UserDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/user-data-XXXXXX";
    dir_ = mkdtemp(tmpl);
    fs::create_directories(dir_ / "instance");
    fs::create_directories(dir_ / "stubs");
    // `id` knows only runpool-runner; `useradd` records its arguments.
    write_exec(dir_ / "stubs" / "id", "#!/bin/bash\n[ \"$2\" = runpool-runner ] && { echo 999; exit 0; }\nexit 1\n");
    write_exec(dir_ / "stubs" / "useradd", "#!/bin/bash\necho \"$*\" >> " + (dir_ / "useradd.log").string() + "\n");
    // The fake agent: records its arguments and the config's mode, exits with the next scripted status.
    write_exec(dir_ / "agent", "#!/bin/bash\nd=" + dir_.string() +
                                   "\necho \"$*\" >> $d/agent.log\nstat -c %a \"$2\" >> $d/agent.log\n"
                                   "n=$(wc -l < $d/agent.log)\nset -- $(cat $d/statuses)\nshift $(( n / 2 - 1 ))\n"
                                   "exit ${1:-0}\n");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the rendered script as the local cloud would; returns its exit status.
  int run(const std::string& config, const std::string& statuses) {
    std::ofstream(dir_ / "statuses") << statuses;
    const fs::path script = dir_ / "user-data";
    write_exec(script, render_user_data(kTemplate, config, (dir_ / "agent").string()));
    std::string cmd = "env -i PATH=" + (dir_ / "stubs").string() + ":/usr/bin:/bin RUNPOOL_LOCALCLOUD_INSTANCE_DIR=" +
                      (dir_ / "instance").string() + " HOME=" + dir_.string() + " /bin/bash " + script.string() +
                      " > " + (dir_ / "out.log").string() + " 2>&1";
    int ws = std::system(cmd.c_str());
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  }

  fs::path dir_;
};

TEST_F(UserDataTest, WritesTheConfigVerbatimWithMode600AndRunsTheAgent) {
  const std::string config = "table = t\npool = p\n# not expanded: $HOME `whoami` $(id) \\n\nrunner_user = runpool-runner\n";
  ASSERT_EQ(run(config, "0"), 0) << read_file(dir_ / "out.log");
  const fs::path conf = dir_ / "instance" / "etc" / "runpool" / "agent.conf";
  EXPECT_EQ(read_file(conf), config);
  struct stat st {};
  ASSERT_EQ(stat(conf.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read_file(dir_ / "agent.log"), "--config " + conf.string() + "\n600\n");
  EXPECT_FALSE(fs::exists(dir_ / "useradd.log")) << "the user exists";
}

TEST_F(UserDataTest, CreatesAMissingRunnerUser) {
  ASSERT_EQ(run("table = t\npool = p\nrunner_user = \"ghost-user\"\n", "0"), 0) << read_file(dir_ / "out.log");
  EXPECT_EQ(read_file(dir_ / "useradd.log"),
            "--system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin ghost-user\n");
}

TEST_F(UserDataTest, RestartsAFailedAgentButNotAStoppedOrMisconfiguredOne) {
  ASSERT_EQ(run("table = t\npool = p\n", "137 3 0"), 0) << read_file(dir_ / "out.log");
  std::string log = read_file(dir_ / "agent.log");
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 6) << "three runs: " << log;
  EXPECT_NE(read_file(dir_ / "out.log").find("exited with status 137; restarting"), std::string::npos);
  fs::remove(dir_ / "agent.log");
  EXPECT_EQ(run("table = t\npool = p\n", "2 0"), 2);
  log = read_file(dir_ / "agent.log");
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 2) << "one run: " << log;
}

TEST_F(UserDataTest, RenderedScriptIsShellcheckClean) {
  if (std::system("command -v shellcheck > /dev/null 2>&1") != 0) GTEST_SKIP() << "shellcheck is not installed";
  for (const std::string binary : {"", "/usr/local/bin/runpool-agent"}) {
    const fs::path script = dir_ / "rendered.sh";
    std::ofstream(script) << render_user_data(kTemplate, "table = t\npool = p\n", binary);
    std::string cmd = "shellcheck -s bash " + script.string() + " > " + (dir_ / "sc.log").string() + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << read_file(dir_ / "sc.log");
  }
}

TEST(UserData, TheUnitItWritesIsThePackagedUnit) {
  auto section = [](const std::string& text) {
    size_t b = text.find("# BEGIN runpool-agent.service");
    size_t e = text.find("# END runpool-agent.service");
    EXPECT_NE(b, std::string::npos);
    EXPECT_NE(e, std::string::npos);
    return text.substr(b, e - b);
  };
  std::string embedded = section(kTemplate);
  std::string packaged = section(read_file(fs::path(RUNPOOL_SOURCE_DIR) / "agent" / "runpool-agent.service"));
  const std::string exec = "ExecStart=/usr/bin/runpool-agent";
  ASSERT_NE(packaged.find(exec), std::string::npos);
  packaged.replace(packaged.find(exec), exec.size(), "ExecStart=$agent_binary");
  EXPECT_EQ(embedded, packaged);
  EXPECT_NE(packaged.find("Type=notify"), std::string::npos);
  EXPECT_NE(packaged.find("WatchdogSec="), std::string::npos);
  EXPECT_NE(packaged.find("--log-format journal"), std::string::npos);
}

TEST(UserData, RenderingRefusesWhatCouldEscapeItsPlace) {
  for (const std::string placeholder : {"@AGENT_CONFIG@", "@AGENT_BINARY@"}) {
    size_t first = kTemplate.find(placeholder);
    EXPECT_NE(first, std::string::npos);
    EXPECT_EQ(kTemplate.find(placeholder, first + 1), std::string::npos) << placeholder << " once only";
  }
  EXPECT_NO_THROW(render_user_data(kTemplate, "a = b\n", ""));
  EXPECT_THROW(render_user_data(kTemplate, "a = b\nRUNPOOL_AGENT_CONFIG_EOF\nrm -rf /\n", ""), std::invalid_argument);
  EXPECT_THROW(render_user_data(kTemplate, std::string("a\0b", 3), ""), std::invalid_argument);
  for (const char* bad : {"relative/agent", "/opt/it's", "/opt/a b", "/opt/$(x)", "/opt/`x`"}) {
    EXPECT_THROW(render_user_data(kTemplate, "a = b\n", bad), std::invalid_argument) << bad;
  }
  EXPECT_THROW(render_user_data("#!/bin/bash\n", "a = b\n", ""), std::invalid_argument);
  std::string out = render_user_data(kTemplate, "x = @AGENT_BINARY@\n", "/opt/agent");
  EXPECT_NE(out.find("x = @AGENT_BINARY@\n"), std::string::npos) << "config text is never rewritten";
}

}  // namespace
}  // namespace runpool::agent
