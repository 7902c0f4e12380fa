#include "controller/user_data.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/cloud_init/user_data.h"
#include "common/config.h"
#include "controller/settings.h"

namespace runpool::controller {
namespace {

TEST(UserData, ConfigTextReadsBackAsTheSamePairs) {
  std::vector<std::pair<std::string, std::string>> pairs = {
      {"table", "runpool"}, {"pool", "ci"}, {"endpoint_dynamodb", "http://127.0.0.1:4000"}, {"runner_root", "/x y/{instance_id}"}};
  std::string text = agent_config_text(pairs);
  EXPECT_EQ(text, "table = runpool\npool = ci\nendpoint_dynamodb = http://127.0.0.1:4000\nrunner_root = /x y/{instance_id}\n");
  // common/config.h reads it back (the agent uses the same reader).
  Config c({{"table", KeyType::kString, "", ""},
            {"pool", KeyType::kString, "", ""},
            {"endpoint_dynamodb", KeyType::kString, "", ""},
            {"runner_root", KeyType::kString, "", ""}});
  c.merge_text(text, "user-data");
  for (const auto& [k, v] : pairs) EXPECT_EQ(c.get_string(k), v) << k;
}

TEST(UserData, ConfigTextRefusesWhatWouldNotReadBack) {
  EXPECT_THROW(agent_config_text({{"Table", "x"}}), std::invalid_argument);
  EXPECT_THROW(agent_config_text({{"a=b", "x"}}), std::invalid_argument);
  EXPECT_THROW(agent_config_text({{"", "x"}}), std::invalid_argument);
  EXPECT_THROW(agent_config_text({{"a", "x\ny = z"}}), std::invalid_argument);
}

TEST(UserData, Render) {
  std::string t = "#!/bin/bash\ncat > /etc/runpool/agent.conf <<'EOF'\n@AGENT_CONFIG@\nEOF\nexec @AGENT_BINARY@ --config /etc/runpool/agent.conf\n";
  std::string out = render_user_data(t, "table = t\npool = p\n", "/usr/bin/runpool-agent");
  EXPECT_EQ(out, cloud_init::cloud_config("#!/bin/bash\ncat > /etc/runpool/agent.conf <<'EOF'\ntable = t\npool = p\nEOF\n"
                                     "exec /usr/bin/runpool-agent --config /etc/runpool/agent.conf\n"));
  EXPECT_THROW(render_user_data("#!/bin/sh\n", "a = b\n", "/x"), std::invalid_argument);
  EXPECT_THROW(render_user_data("@AGENT_CONFIG@ @AGENT_BINARY@", std::string(17 * 1024, 'a'), "/x"),
               std::invalid_argument);
  // The limit is on the document: a script just under 16 KiB does not fit once wrapped.
  const std::string wrapped_empty = cloud_init::cloud_config("");
  EXPECT_THROW(render_user_data("@AGENT_CONFIG@@AGENT_BINARY@", std::string(16 * 1024 - 16, 'a'), ""), std::invalid_argument);
  EXPECT_EQ(render_user_data("@AGENT_CONFIG@@AGENT_BINARY@", std::string(16 * 1024 - wrapped_empty.size() - 7, 'a'), "").size(),
            16u * 1024);
  EXPECT_THROW(render_user_data("@AGENT_CONFIG@ @AGENT_BINARY@", "", "/x\n/y"), std::invalid_argument);
  EXPECT_THROW(render_user_data("@AGENT_CONFIG@ @AGENT_BINARY@", "", "/x'; rm -rf /'"), std::invalid_argument);
  EXPECT_THROW(render_user_data("@AGENT_CONFIG@ @AGENT_BINARY@", "a = b\nRUNPOOL_AGENT_CONFIG_EOF\n", ""),
               std::invalid_argument);
  EXPECT_EQ(render_user_data("@AGENT_CONFIG@|@AGENT_BINARY@", "a = b\n", ""), cloud_init::cloud_config("a = b|"));
  EXPECT_THROW(read_template("/nonexistent/user-data.sh.in"), std::runtime_error);
}

TEST(UserData, TheRepositoryTemplateRenders) {
  std::string t = read_template(std::string(RUNPOOL_SOURCE_DIR) + "/cloud-init/user-data.sh.in");
  std::string out = render_user_data(t, "table = t\npool = p\n", "/usr/bin/runpool-agent");
  EXPECT_EQ(out.find("@AGENT_CONFIG@"), std::string::npos);
  EXPECT_EQ(out.find("@AGENT_BINARY@"), std::string::npos);
  EXPECT_NE(out.find("      table = t\n      pool = p\n"), std::string::npos);
  EXPECT_EQ(out.rfind("#cloud-config\n", 0), 0u);
  EXPECT_NE(out.find("      #!/bin/bash\n"), std::string::npos);
  EXPECT_NE(out.find("      agent_binary='/usr/bin/runpool-agent'\n"), std::string::npos);
  // cloud-init's own validator accepts it (scripts/setup.sh installs cloud-init: no skip).
  const std::string file = std::filesystem::temp_directory_path() / ("runpool-ctl-ud-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << out;
  const std::string cmd = "cloud-init schema -c " + file + " > " + file + ".log 2>&1";
  const int ws = std::system(cmd.c_str());
  std::ifstream log(file + ".log");
  const std::string log_text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 0) << log_text;
  std::filesystem::remove(file);
  std::filesystem::remove(file + ".log");
}

// The release tarball, unpacked anywhere, carries the template beside its binary: found there when
// the packaged default is absent; a configured path is never second-guessed.
TEST(UserData, TheTemplateOfARelocatableInstallIsFoundBesideItsBinary) {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/user-data-locate-XXXXXX";
  const fs::path root = mkdtemp(tmpl);
  fs::create_directories(root / "bin");
  fs::create_directories(root / "share" / "runpool");
  const std::string exe = (root / "bin" / "runpoolctl").string();
  const std::string packaged = (root / "usr-share" / "user-data.sh.in").string();  // absent
  const std::string beside = (root / "share" / "runpool" / "user-data.sh.in").string();
  EXPECT_EQ(locate_template(packaged, packaged, exe), packaged) << "nothing beside the binary yet";
  std::ofstream(beside) << "#!/bin/bash\n";
  EXPECT_EQ(locate_template(packaged, packaged, exe), beside);
  EXPECT_EQ(locate_template("/etc/runpool/mine.sh.in", packaged, exe), "/etc/runpool/mine.sh.in") << "configured";
  EXPECT_EQ(locate_template(packaged, packaged, ""), packaged) << "no idea where the binary is";
  fs::create_directories(fs::path(packaged).parent_path());
  std::ofstream(packaged) << "#!/bin/bash\n";
  EXPECT_EQ(locate_template(packaged, packaged, exe), packaged) << "the packaged one, when there";
  fs::remove_all(root);
}

}  // namespace
}  // namespace runpool::controller
