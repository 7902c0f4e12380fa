// The user-data runpoolctl launches instances with, rendered the way `runpoolctl init` renders it
// (settings → agent config → cloud-init/user-data.sh.in → #cloud-config) from a realistic
// configuration: `cloud-init schema` accepts it, it fits EC2's 16 KiB, the boot script it carries
// (read back by PyYAML, cloud-init's parser) is shellcheck-clean at every severity, the agent
// accepts the configuration it carries, and running its runcmd writes that configuration verbatim —
// shell syntax in a value stays text.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/cloud_init/user_data.h"
#include "common/config.h"
#include "controller/settings.h"
#include "controller/user_data.h"

namespace runpool::controller {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

int run(const std::string& cmd) {
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

class RenderedUserData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("runpool-ud-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A production-like configuration, as an operator's runpoolctl.conf would hold it.
  Settings settings(const std::string& extra = "") {
    Config c(settings_schema());
    c.merge_text(std::string("table = runpool-prod\n"
                             "pool = ci\n"
                             "region = eu-west-1\n"
                             "github_owner = example-org\n"
                             "resource_classes = small=c7i.large,m7i.large;large=m7i.2xlarge\n"
                             "image_id = ami-0123456789abcdef0\n"
                             "instance_profile = runpool-ci-instance\n"
                             "security_groups = sg-0123456789abcdef0\n"
                             "subnets = subnet-0123456789abcdef0 subnet-0fedcba9876543210\n"
                             "user_data_template = ") +
                     RUNPOOL_SOURCE_DIR + "/cloud-init/user-data.sh.in\n" +
                     "agent_runner_root = /opt/runpool/runner\n"
                     "agent_runner_template = /opt/actions-runner\n"
                     "agent_runner_user = runpool-runner\n"
                     "agent_drain_capable = true\n"
                     "agent_heartbeat_interval = 20s\n"
                     "agent_extra = notice_poll_interval=3s;drain_signal_timeout=10m;boot_grace=8m\n" +
                     extra,
                 "test");
    return load_settings(c, [](const char*) -> const char* { return nullptr; });
  }

  std::string render(const Settings& s, const std::string& binary) {
    return render_user_data(read_template(s.user_data_template), agent_config_text(s.agent_config), binary);
  }

  // Reads the document as cloud-init would (PyYAML): writes its one write_files entry's content to
  // `script` and returns "path permissions owner | runcmd item" for the rest.
  std::string read_back(const std::string& doc, const fs::path& script) {
    write_file(dir_ / "cc.yaml", doc);
    const std::string out = (dir_ / "read-back").string();
    EXPECT_EQ(run("python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); [f] = d[\"write_files\"]; "
                  "open(sys.argv[2], \"w\").write(f[\"content\"]); [c] = d[\"runcmd\"]; "
                  "print(f[\"path\"], f[\"permissions\"], f[\"owner\"], \"|\", c)' " +
                  (dir_ / "cc.yaml").string() + " " + script.string() + " > " + out),
              0);
    return read_file(out);
  }

  // The configuration text between the quoted heredoc's delimiters.
  static std::string carried_config(const std::string& script) {
    const std::string open = "<<'RUNPOOL_AGENT_CONFIG_EOF'\n";
    size_t b = script.find(open);
    size_t e = script.find("\nRUNPOOL_AGENT_CONFIG_EOF\n");
    if (b == std::string::npos || e == std::string::npos || e < b) return "";
    return script.substr(b + open.size(), e - b - open.size() + 1);
  }

  fs::path dir_;
};

TEST_F(RenderedUserData, IsAValidCloudConfigThatFitsEc2sLimit) {
  Settings s = settings();
  for (const std::string binary : {"", "/usr/local/bin/runpool-agent"}) {
    std::string doc = render(s, binary);
    EXPECT_LE(doc.size(), 16u * 1024) << "EC2 refuses user-data over 16 KiB";
    EXPECT_EQ(doc.rfind("#cloud-config\n", 0), 0u) << "cloud-init reads user-data by its first line";
    for (const char* placeholder : {"@AGENT_CONFIG@", "@AGENT_BINARY@"}) {
      EXPECT_EQ(doc.find(placeholder), std::string::npos) << placeholder << " was left unfilled";
    }
    // No skip without cloud-init: scripts/setup.sh installs it.
    write_file(dir_ / "user-data", doc);
    const std::string log = (dir_ / "schema.log").string();
    EXPECT_EQ(run("cloud-init schema -c " + (dir_ / "user-data").string() + " > " + log + " 2>&1"), 0)
        << "binary '" << binary << "':\n" << read_file(log);
    EXPECT_EQ(read_back(doc, dir_ / "boot.sh"),
              "/var/lib/runpool/boot.sh 0700 root:root | \"${RUNPOOL_LOCALCLOUD_INSTANCE_DIR:-}/var/lib/runpool/boot.sh\"\n");
    const std::string script = read_file(dir_ / "boot.sh");
    EXPECT_EQ(script.rfind("#!/bin/bash\n", 0), 0u) << "the boot script runs by its shebang";
    EXPECT_EQ(script, cloud_init::render_boot_script(read_template(s.user_data_template), agent_config_text(s.agent_config), binary))
        << "the document carries the script byte for byte";
  }
}

TEST_F(RenderedUserData, TheScriptItCarriesIsShellcheckClean) {
  if (run("command -v shellcheck > /dev/null 2>&1") != 0) GTEST_SKIP() << "shellcheck is not installed (scripts/setup.sh)";
  Settings s = settings();
  for (const std::string binary : {"", "/usr/local/bin/runpool-agent"}) {
    read_back(render(s, binary), dir_ / "boot.sh");
    const std::string log = (dir_ / "shellcheck.log").string();
    EXPECT_EQ(run("shellcheck --severity=style --shell=bash " + (dir_ / "boot.sh").string() + " > " + log + " 2>&1"), 0)
        << "binary '" << binary << "':\n" << read_file(log);
    EXPECT_EQ(run("bash -n " + (dir_ / "boot.sh").string()), 0);
  }
}

TEST_F(RenderedUserData, TheAgentAcceptsTheConfigurationItCarries) {
  Settings s = settings();
  read_back(render(s, ""), dir_ / "boot.sh");
  std::string conf = carried_config(read_file(dir_ / "boot.sh"));
  ASSERT_NE(conf, "");
  EXPECT_EQ(conf, agent_config_text(s.agent_config));
  for (const char* line : {"table = runpool-prod\n", "pool = ci\n", "region = eu-west-1\n", "runner_user = runpool-runner\n",
                           "drain_capable = true\n", "notice_poll_interval = 3s\n", "boot_grace = 8m\n"}) {
    EXPECT_NE(conf.find(line), std::string::npos) << line << " not in:\n" << conf;
  }
  EXPECT_EQ(conf.find("github"), std::string::npos) << "no GitHub setting or credential reaches an instance";
  write_file(dir_ / "agent.conf", conf);
  const std::string log = (dir_ / "check.log").string();
  EXPECT_EQ(run(std::string(RUNPOOL_AGENT_BINARY) + " --check-config --config " + (dir_ / "agent.conf").string() + " > " +
                log + " 2>&1"),
            0)
      << read_file(log);
}

// Does what cloud-init does with the document, the way the local cloud does it
// (RUNPOOL_LOCALCLOUD_INSTANCE_DIR prefixes every path): writes the script, then runs the runcmd
// item with sh; a stand-in agent saves the file it was given: the file is the configuration, byte
// for byte, with mode 600, and shell syntax in a value was never executed.
TEST_F(RenderedUserData, RunningItWritesTheConfigurationVerbatim) {
  if (run("id -u runpool-runner > /dev/null 2>&1") != 0) GTEST_SKIP() << "no runpool-runner user (scripts/setup.sh)";
  const fs::path marker = dir_ / "executed";
  Settings s = settings("agent_extra = runner_path=/usr/bin:$(touch " + marker.string() + "):`touch " +
                        marker.string() + "`\n");
  const fs::path fake = dir_ / "fake-agent";
  write_file(fake, "#!/bin/sh\ncp \"$2\" \"" + (dir_ / "seen.conf").string() + "\"\nstat -c %a \"$2\" > \"" +
                       (dir_ / "mode").string() + "\"\nexit 0\n");
  fs::permissions(fake, fs::perms::owner_all);
  const fs::path root = dir_ / "root";
  fs::create_directories(root / "var/lib/runpool");
  const std::string meta = read_back(render(s, fake.string()), root / "var/lib/runpool/boot.sh");
  fs::permissions(root / "var/lib/runpool/boot.sh", fs::perms::owner_all);
  const std::string runcmd = meta.substr(meta.find(" | ") + 3);
  write_file(dir_ / "runcmd", runcmd);
  const std::string log = (dir_ / "run.log").string();
  ASSERT_EQ(run("RUNPOOL_LOCALCLOUD_INSTANCE_DIR=" + root.string() + " sh " + (dir_ / "runcmd").string() + " > " + log +
                " 2>&1"),
            0)
      << read_file(log);
  EXPECT_EQ(read_file(dir_ / "seen.conf"), agent_config_text(s.agent_config));
  EXPECT_EQ(read_file(root / "etc/runpool/agent.conf"), agent_config_text(s.agent_config));
  EXPECT_EQ(read_file(dir_ / "mode"), "600\n");
  EXPECT_FALSE(fs::exists(marker)) << "a value's shell syntax was executed";
}

}  // namespace
}  // namespace runpool::controller
