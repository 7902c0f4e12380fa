// runpoolctl's GitHub as real deployments meet it, the real binary against the local cloud: a
// repository renamed since github_owner was written (GitHub redirects its old paths; runpoolctl
// follows on the API's origin and warns once), and the API and web URLs of a GitHub Actions job
// (GITHUB_API_URL, GITHUB_SERVER_URL) used when the configuration names neither, never over it.
#include <gtest/gtest.h>

#include "common/json.h"
#include "tests/support/runpoolctl_harness.h"

namespace runpool::controller {
namespace {

using testing::CtlPool;
using testing::CtlResult;
using testing::describe;

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

class ControllerGithub : public ::testing::Test {
 protected:
  void start(const std::string& extra_config) {
    static int n = 0;
    std::string pool = "ghx" + std::to_string(++n);
    pool_ = std::make_unique<CtlPool>(cloud_, pool, "ctl-" + pool, extra_config);
    auto init = pool_->run({"init"});
    ASSERT_EQ(init.exit_code, 0) << describe(init);
    agents_ = std::make_unique<testing::SimulatedAgents>(cloud_, pool_->table(), pool);
    table_ = std::make_unique<pool::DynamoStateTable>(aws_.db, pool_->table(), cloud_.instance_role_id());
  }
  void TearDown() override {
    agents_.reset();
    if (!table_) return;
    std::vector<std::string> ids;
    table_->scan([&](const pool::InstanceRecord& r) { ids.push_back(r.instance_id); });
    if (!ids.empty()) {
      try {
        aws_.ec2.terminate_instances(ids);
      } catch (const std::exception&) {
      }
    }
  }
  std::vector<pool::InstanceRecord> records() {
    std::vector<pool::InstanceRecord> out;
    table_->scan([&](const pool::InstanceRecord& r) { out.push_back(r); });
    return out;
  }
  long github_calls(const std::string& route) {
    return cloud_.control("GET", "/_control/github/calls")["byRoute"].get(route, 0).asInt64();
  }

  runpool::testing::LocalCloud& cloud_ = runpool::testing::LocalCloud::shared();
  testing::CloudClients aws_{cloud_};
  std::unique_ptr<CtlPool> pool_;
  std::unique_ptr<testing::SimulatedAgents> agents_;
  std::unique_ptr<pool::DynamoStateTable> table_;
};

TEST_F(ControllerGithub, ARenamedRepositoryStillWorksAndTheOperatorIsTold) {
  start("github_owner = acme/old-name\n");
  Json::Value move;
  move["from"] = "acme/old-name";
  move["to"] = "acme/new-name";
  cloud_.control("POST", "/_control/github/repos/move", move);
  cloud_.control("DELETE", "/_control/github/calls");

  CtlResult prov = pool_->run({"--json", "provision", "--count", "1", "--label", "moved-1", "--usage-class", "on-demand"});
  ASSERT_EQ(prov.exit_code, 0) << describe(prov);
  // The token came from the repository's new home, reached through GitHub's 307.
  EXPECT_GE(github_calls("POST /repos/{owner}/{repo}/actions/runners/registration-token"), 1);
  EXPECT_GE(github_calls("POST /repositories/{repository_id}/actions/runners/registration-token"), 1);
  // One warning per run, naming the setting to change.
  EXPECT_EQ(count_of(prov.err, "set github_owner to the new name"), 1u) << prov.err;
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].label, "moved-1");

  CtlResult rel = pool_->run({"--json", "release", "--wait", "--label", "moved-1"});
  ASSERT_EQ(rel.exit_code, 0) << describe(rel);
  // refresh lists the runners (its ghost sweep): the listing (GET) goes through GitHub's 301.
  CtlResult refresh = pool_->run({"--json", "refresh", "--dry-run"});
  ASSERT_EQ(refresh.exit_code, 0) << describe(refresh);
  EXPECT_EQ(refresh.err.find("listing GitHub runners"), std::string::npos) << describe(refresh);
  EXPECT_GE(github_calls("GET /repositories/{repository_id}/actions/runners"), 1);
}

TEST_F(ControllerGithub, EnterpriseRunnersUseTheEnterprisePaths) {
  start("github_owner = enterprise:ent-corp\n");
  Json::Value pat;
  pat["token"] = pool_->env().at("RUNPOOL_GITHUB_TOKEN");
  pat["owners"].append("acme");
  pat["owners"].append("enterprise:ent-corp");
  cloud_.control("POST", "/_control/github/pats", pat);
  cloud_.control("DELETE", "/_control/github/calls");

  CtlResult prov = pool_->run({"--json", "provision", "--count", "1", "--label", "ent-1", "--usage-class", "on-demand"});
  ASSERT_EQ(prov.exit_code, 0) << describe(prov);
  EXPECT_GE(github_calls("POST /enterprises/{enterprise}/actions/runners/registration-token"), 1);
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].reg_url, cloud_.github_web() + "/enterprises/ent-corp");
  CtlResult refresh = pool_->run({"--json", "refresh", "--dry-run"});
  ASSERT_EQ(refresh.exit_code, 0) << describe(refresh);
  EXPECT_GE(github_calls("GET /enterprises/{enterprise}/actions/runners"), 1);
  ASSERT_EQ(pool_->run({"--json", "release", "--wait", "--label", "ent-1"}).exit_code, 0);
}

TEST_F(ControllerGithub, AWorkflowsGithubUrlsServeWhenNothingIsConfigured) {
  // "github_api_url =" (empty) unsets the URL CtlPool writes: nothing configured.
  start("github_api_url =\n");
  const std::map<std::string, std::string> job = {{"GITHUB_API_URL", cloud_.github()},
                                                  {"GITHUB_SERVER_URL", cloud_.github_web()}};
  CtlResult prov = pool_->run({"--json", "provision", "--count", "1", "--label", "env-1", "--usage-class", "on-demand"}, job);
  ASSERT_EQ(prov.exit_code, 0) << describe(prov);
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].reg_url, cloud_.github_web() + "/acme/app");
  // `runpoolctl config` shows the URLs in use, and why.
  CtlResult config = pool_->run({"config"}, job);
  ASSERT_EQ(config.exit_code, 0) << describe(config);
  EXPECT_NE(config.out.find("github_api_url = " + cloud_.github() + "    # derived"), std::string::npos) << config.out;
  EXPECT_NE(config.out.find("github_server_url = " + cloud_.github_web() + "    # derived"), std::string::npos)
      << config.out;
  CtlResult rel = pool_->run({"--json", "release", "--wait", "--label", "env-1"}, job);
  ASSERT_EQ(rel.exit_code, 0) << describe(rel);
}

TEST_F(ControllerGithub, ConfiguredUrlsBeatTheWorkflowsEnvironment) {
  // Configured: a GitHub nobody answers on. The job's (working) URLs must not replace it.
  start("github_api_url = http://127.0.0.1:9/api/v3\ngithub_timeout = 1s\n");
  const std::map<std::string, std::string> job = {{"GITHUB_API_URL", cloud_.github()},
                                                  {"GITHUB_SERVER_URL", cloud_.github_web()}};
  cloud_.control("DELETE", "/_control/github/calls");
  CtlResult prov = pool_->run({"--json", "provision", "--count", "1", "--label", "cfg-1", "--usage-class", "on-demand"}, job);
  EXPECT_NE(prov.exit_code, 0) << describe(prov);
  EXPECT_EQ(cloud_.control("GET", "/_control/github/calls")["total"].asInt64(), 0) << describe(prov);
  EXPECT_TRUE(records().empty());
}

}  // namespace
}  // namespace runpool::controller
