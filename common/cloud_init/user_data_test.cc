// cloud-init/user-data.sh.in rendered and run by bash in local-cloud mode, with a fake agent and
// stubbed `id`/`useradd` on PATH; its systemd unit kept identical to agent/runpool-agent.service;
// and the #cloud-config wrapper read back by PyYAML (cloud-init's parser) and `cloud-init schema`.
#include "common/cloud_init/user_data.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace runpool::cloud_init {
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
    write_exec(script, render_boot_script(kTemplate, config, (dir_ / "agent").string()));
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
    std::ofstream(script) << render_boot_script(kTemplate, "table = t\npool = p\n", binary);
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
  std::string out = render_boot_script(kTemplate, "x = @AGENT_BINARY@\n", "/opt/agent");
  EXPECT_NE(out.find("x = @AGENT_BINARY@\n"), std::string::npos) << "config text is never rewritten";
}

// What PyYAML (cloud-init's parser) reads from a cloud-config: the runcmd items, then the first
// write_files entry's path, permissions and content, separated by NULs.
std::string yaml_read_back(const fs::path& doc, const fs::path& dir) {
  const fs::path out = dir / "read-back";
  std::string cmd = "python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); f = d[\"write_files\"][0]; "
                    "sys.stdout.write(\"\\0\".join([repr(d[\"runcmd\"]), f[\"path\"], f[\"permissions\"], f[\"content\"]]))' " +
                    doc.string() + " > " + out.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return read_file(out);
}

// `cloud-init schema` on the file: its exit status, with its output in `log`. No skip without it:
// scripts/setup.sh installs cloud-init.
int cloud_init_schema(const fs::path& doc, const fs::path& log) {
  std::string cmd = "cloud-init schema -c " + doc.string() + " > " + log.string() + " 2>&1";
  int ws = std::system(cmd.c_str());
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

TEST_F(UserDataTest, CloudConfigCarriesTheScriptVerbatim) {
  const std::string runcmd = "['\"${RUNPOOL_LOCALCLOUD_INSTANCE_DIR:-}/var/lib/runpool/boot.sh\"']";
  // Empty lines (leading and trailing), lines starting with spaces, a tab or '#', YAML's own
  // syntax, no final newline, non-ASCII text.
  for (const std::string& script :
       {std::string("#!/bin/bash\necho a\n"), std::string("\n   indented first\n#!/bin/sh\n\n\tx: |\n# c\n--- \n...\n- 'q' \"r\" caf\u00e9\n\n\n"),
        std::string("no final newline\n  "), std::string("")}) {
    std::ofstream(dir_ / "cc.yaml") << cloud_config(script);
    EXPECT_EQ(yaml_read_back(dir_ / "cc.yaml", dir_), runcmd + '\0' + "/var/lib/runpool/boot.sh" + '\0' + "0700" + '\0' + script);
    EXPECT_EQ(cloud_init_schema(dir_ / "cc.yaml", dir_ / "schema.log"), 0) << read_file(dir_ / "schema.log");
  }
  EXPECT_EQ(cloud_config("#!/bin/sh\n\n  x\n"),
            "#cloud-config\n"
            "# runpool: writes the agent's boot script (cloud-init/user-data.sh.in, rendered) and runs it; docs/install.md.\n"
            "write_files:\n"
            "  - path: /var/lib/runpool/boot.sh\n"
            "    owner: root:root\n"
            "    permissions: \"0700\"\n"
            "    content: |2+\n"
            "      #!/bin/sh\n"
            "\n"
            "        x\n"
            "runcmd:\n"
            "  - '\"${RUNPOOL_LOCALCLOUD_INSTANCE_DIR:-}/var/lib/runpool/boot.sh\"'\n");
  for (const std::string& bad : {std::string("a\rb"), std::string("a\0b", 3), std::string("\x1b[0m"), std::string("\x7f"),
                                std::string("\xff"), std::string("\xc3"), std::string("\xc2\x85"), std::string("\xef\xbb\xbf"),
                                 std::string("a\u2028b"), std::string("\xed\xa0\x80"), std::string("\xc0\xaf")}) {
    EXPECT_THROW(cloud_config(bad), std::invalid_argument) << bad;
  }
}

TEST_F(UserDataTest, TheRenderedTemplateIsAValidCloudConfigAroundTheScript) {
  for (const std::string binary : {"", "/usr/local/bin/runpool-agent"}) {
    const std::string config = "table = t\npool = p\n# a comment\n\nrunner_root = /x y/{instance_id}\n";
    std::string out = render_user_data(kTemplate, config, binary);
    EXPECT_EQ(out.rfind("#cloud-config\n", 0), 0u);
    std::ofstream(dir_ / "cc.yaml") << out;
    EXPECT_EQ(cloud_init_schema(dir_ / "cc.yaml", dir_ / "schema.log"), 0) << read_file(dir_ / "schema.log");
    std::string back = yaml_read_back(dir_ / "cc.yaml", dir_);
    EXPECT_EQ(back.substr(back.rfind('\0') + 1), render_boot_script(kTemplate, config, binary));
  }
  // The check can fail: a document cloud-init's schema refuses.
  std::ofstream(dir_ / "bad.yaml") << "#cloud-config\nruncmd: 5\n";
  EXPECT_NE(cloud_init_schema(dir_ / "bad.yaml", dir_ / "schema.log"), 0);
}

}  // namespace
}  // namespace runpool::cloud_init
