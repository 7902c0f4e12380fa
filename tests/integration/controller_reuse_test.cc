// Reuse policy, the real binary against the local cloud: under reuse = same-scope a released
// instance is kept for its repository (another repository's provision launches, its own claims
// it); under reuse = never a release terminates the drained instance and says why.
#include <gtest/gtest.h>

#include "common/json.h"
#include "tests/support/runpoolctl_harness.h"

namespace runpool::controller {
namespace {

using pool::State;
using testing::CtlPool;
using testing::describe;

class ControllerReuse : public ::testing::Test {
 protected:
  void start(const std::string& name, const std::string& extra_config) {
    pool_ = std::make_unique<CtlPool>(cloud_, name, "ctl-" + name, extra_config);
    auto init = pool_->run({"init"});
    ASSERT_EQ(init.exit_code, 0) << describe(init);
    agents_ = std::make_unique<testing::SimulatedAgents>(cloud_, pool_->table(), pool_->pool());
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
  pool::InstanceRecord record(const std::string& id) { return *table_->get(id); }
  std::vector<pool::InstanceRecord> records() {
    std::vector<pool::InstanceRecord> out;
    table_->scan([&](const pool::InstanceRecord& r) { out.push_back(r); });
    return out;
  }
  std::string ec2_state(const std::string& id) {
    aws::DescribeInstancesRequest r;
    r.instance_ids = {id};
    for (const auto& i : aws_.ec2.describe_instances(r)) return i.state.name;
    return "";
  }
  testing::CtlResult provision(const std::string& label, const std::string& repo) {
    return pool_->run({"--set", "github_owner=" + repo, "provision", "--count", "1", "--label", label,
                       "--usage-class", "on-demand"});
  }

  runpool::testing::LocalCloud& cloud_ = runpool::testing::LocalCloud::shared();
  testing::CloudClients aws_{cloud_};
  std::unique_ptr<CtlPool> pool_;
  std::unique_ptr<testing::SimulatedAgents> agents_;
  std::unique_ptr<pool::DynamoStateTable> table_;
};

TEST_F(ControllerReuse, SameScopeInstanceServesItsOwnRepositoryOnly) {
  start("reu1", "reuse = same-scope\njob_privileges = docker\n");
  auto p1 = provision("job-1", "acme/app");
  ASSERT_EQ(p1.exit_code, 0) << describe(p1);
  auto rel = pool_->run({"--set", "github_owner=acme/app", "release", "--wait", "--label", "job-1"});
  ASSERT_EQ(rel.exit_code, 0) << describe(rel);
  auto all = records();
  ASSERT_EQ(all.size(), 1u);
  const std::string kept = all[0].instance_id;
  EXPECT_EQ(all[0].state, State::kIdle);
  EXPECT_EQ(all[0].reuse_scope_key, "repository:acme/app");

  // Another repository of the same owner: the kept instance is left in the pool, a new one launched.
  auto p2 = provision("job-2", "acme/other");
  ASSERT_EQ(p2.exit_code, 0) << describe(p2);
  EXPECT_EQ(records().size(), 2u) << describe(p2);
  EXPECT_EQ(record(kept).state, State::kIdle) << "not claimed by acme/other";
  EXPECT_EQ(record(kept).label, "");

  // Its own repository claims it.
  auto p3 = provision("job-3", "acme/app");
  ASSERT_EQ(p3.exit_code, 0) << describe(p3);
  EXPECT_EQ(records().size(), 2u) << "nothing launched for acme/app: " << describe(p3);
  EXPECT_EQ(record(kept).label, "job-3");
  EXPECT_EQ(record(kept).state, State::kRunning);
}

TEST_F(ControllerReuse, ReuseNeverTerminatesOnRelease) {
  start("reu2", "reuse = never\njob_privileges = sudo\n");
  auto p1 = provision("job-1", "acme/app");
  ASSERT_EQ(p1.exit_code, 0) << describe(p1);
  auto all = records();
  ASSERT_EQ(all.size(), 1u);
  const std::string id = all[0].instance_id;
  auto rel = pool_->run({"--json", "release", "--wait", "--label", "job-1"});
  ASSERT_EQ(rel.exit_code, 0) << describe(rel);
  Json::Value r = parse_json(rel.out, "release");
  ASSERT_EQ(r["retired"].size(), 1u) << rel.out;
  EXPECT_EQ(r["retired"][0].asString(), id);
  EXPECT_EQ(r["retired_reasons"][id].asString(), "reuse-never") << rel.out;
  EXPECT_EQ(r["returned"].size(), 0u);
  EXPECT_EQ(record(id).state, State::kTerminated);
  EXPECT_TRUE(ec2_state(id) == "shutting-down" || ec2_state(id) == "terminated") << ec2_state(id);
}

TEST_F(ControllerReuse, AlwaysWithSudoJobsIsRefusedOutsideOneTrustDomain) {
  pool_ = std::make_unique<CtlPool>(cloud_, "reu3", "ctl-reu3", "job_privileges = sudo\n");
  auto r = pool_->run({"status"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_NE(r.err.find("trust_domain = pool"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace runpool::controller
