// runpoolctl retire, the real binary against the local cloud: an idle instance not on the current
// AMI is terminated at once (EC2 and table), an assigned one keeps its job and is marked, and its
// release terminates it instead of returning it to the pool; a dry run changes nothing.
#include <gtest/gtest.h>

#include "common/json.h"
#include "tests/support/runpoolctl_harness.h"

namespace runpool::controller {
namespace {

using pool::State;
using testing::CtlPool;
using testing::describe;

class ControllerRetire : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = std::make_unique<CtlPool>(cloud_, "ret1", "ctl-ret1");
    auto init = pool_->run({"init"});
    ASSERT_EQ(init.exit_code, 0) << describe(init);
    agents_ = std::make_unique<testing::SimulatedAgents>(cloud_, pool_->table(), pool_->pool());
    table_ = std::make_unique<pool::DynamoStateTable>(aws_.db, pool_->table(), cloud_.instance_role_id());
  }
  void TearDown() override {
    agents_.reset();
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
  std::string ec2_state(const std::string& id) {
    aws::DescribeInstancesRequest r;
    r.instance_ids = {id};
    for (const auto& i : aws_.ec2.describe_instances(r)) return i.state.name;
    return "";
  }
  int64_t queue_depth() {
    auto a = aws_.sqs.get_queue_attributes(aws_.sqs.get_queue_url(pool_->pool() + "-small"));
    return a.approximate_number_of_messages.value_or(-1) + a.approximate_number_of_messages_not_visible.value_or(0);
  }

  runpool::testing::LocalCloud& cloud_ = runpool::testing::LocalCloud::shared();
  testing::CloudClients aws_{cloud_};
  std::unique_ptr<CtlPool> pool_;
  std::unique_ptr<testing::SimulatedAgents> agents_;
  std::unique_ptr<pool::DynamoStateTable> table_;
};

TEST_F(ControllerRetire, IdleOutdatedEndsNowAssignedEndsAtItsReleaseNoJobLost) {
  // Two instances launched on the configured AMI, one back in the pool, one serving job-2.
  auto p = pool_->run({"provision", "--count", "2", "--label", "job-1", "--usage-class", "on-demand"});
  ASSERT_EQ(p.exit_code, 0) << describe(p);
  auto rel = pool_->run({"release", "--wait", "--label", "job-1"});
  ASSERT_EQ(rel.exit_code, 0) << describe(rel);
  auto p2 = pool_->run({"--json", "provision", "--count", "1", "--label", "job-2", "--usage-class", "on-demand"});
  ASSERT_EQ(p2.exit_code, 0) << describe(p2);
  std::string busy_id, idle_id;
  table_->scan([&](const pool::InstanceRecord& r) {
    EXPECT_EQ(r.ami_id, "ami-12345678") << "the launch's AMI is recorded";
    if (r.state == State::kRunning) busy_id = r.instance_id;
    if (r.state == State::kIdle) idle_id = r.instance_id;
  });
  ASSERT_FALSE(busy_id.empty());
  ASSERT_FALSE(idle_id.empty());

  // The roll: ami-87654321 is current now. A dry run first.
  auto dry = pool_->run({"--json", "retire", "--ami", "ami-87654321", "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << describe(dry);
  Json::Value d = parse_json(dry.out, "retire");
  EXPECT_EQ(d["retired"].asInt(), 1);
  EXPECT_EQ(d["marked"].asInt(), 1);
  EXPECT_EQ(record(idle_id).state, State::kIdle);
  EXPECT_FALSE(record(busy_id).retire_pending);

  auto retire = pool_->run({"retire", "--ami", "ami-87654321"});
  ASSERT_EQ(retire.exit_code, 0) << describe(retire);
  EXPECT_NE(retire.out.find("1 idle retired, 1 assigned marked for retirement at release"), std::string::npos)
      << retire.out;
  EXPECT_EQ(record(idle_id).state, State::kTerminated);
  EXPECT_TRUE(ec2_state(idle_id) == "shutting-down" || ec2_state(idle_id) == "terminated") << ec2_state(idle_id);
  EXPECT_EQ(record(busy_id).state, State::kRunning) << "the job goes on";
  EXPECT_TRUE(record(busy_id).retire_pending);

  // The job ends: release drains it and terminates it rather than returning it.
  auto rel2 = pool_->run({"--json", "release", "--wait", "--label", "job-2"});
  ASSERT_EQ(rel2.exit_code, 0) << describe(rel2);
  Json::Value r2 = parse_json(rel2.out, "release");
  ASSERT_EQ(r2["retired"].size(), 1u) << rel2.out;
  EXPECT_EQ(r2["retired"][0].asString(), busy_id);
  EXPECT_EQ(r2["returned"].size(), 0u);
  EXPECT_EQ(record(busy_id).state, State::kTerminated);
  int idle = 0;
  table_->scan([&](const pool::InstanceRecord& r) { idle += r.state == State::kIdle; });
  EXPECT_EQ(idle, 0) << "nothing outdated went back to the pool";
  // The retired idle instance's pool message is stale now: the next claim drops it and launches.
  auto p3 = pool_->run({"provision", "--count", "1", "--label", "job-3", "--usage-class", "on-demand"});
  ASSERT_EQ(p3.exit_code, 0) << describe(p3);
  EXPECT_EQ(queue_depth(), 0);
  int running = 0;
  table_->scan([&](const pool::InstanceRecord& r) {
    if (r.state == State::kRunning) {
      ++running;
      EXPECT_NE(r.instance_id, idle_id);
      EXPECT_NE(r.instance_id, busy_id);
    }
  });
  EXPECT_EQ(running, 1);

  // Nothing outdated is left: a second run keeps everything.
  auto again = pool_->run({"--json", "retire", "--ami", "ami-87654321"});
  ASSERT_EQ(again.exit_code, 0) << describe(again);
  Json::Value a = parse_json(again.out, "retire");
  EXPECT_EQ(a["retired"].asInt(), 0) << again.out;
  EXPECT_EQ(a["marked"].asInt(), 1) << "job-3's instance runs the configured AMI, not ami-87654321: " << again.out;
}

TEST_F(ControllerRetire, WithoutACurrentValueItIsAUsageError) {
  auto r = pool_->run({"retire"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_NE(r.err.find("--ami"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace runpool::controller
