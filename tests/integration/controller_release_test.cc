// runpoolctl release and status, the real binary against the local cloud: idempotent, safe when
// two run at once, stragglers terminated, retries under injected faults; and the CLI's usage and
// configuration errors (exit 2, naming the key).
#include <gtest/gtest.h>

#include <set>

#include "common/json.h"
#include "tests/support/runpoolctl_harness.h"

namespace runpool::controller {
namespace {

using pool::State;
using testing::CtlPool;
using testing::CtlResult;
using testing::describe;

class ControllerRelease : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    std::string pool = "rel" + std::to_string(++n);
    pool_ = std::make_unique<CtlPool>(cloud_, pool, "ctl-" + pool);
    auto init = pool_->run({"init"});
    ASSERT_EQ(init.exit_code, 0) << describe(init);
    agents_ = std::make_unique<testing::SimulatedAgents>(cloud_, pool_->table(), pool);
    table_ = std::make_unique<pool::DynamoStateTable>(aws_.db, pool_->table(), cloud_.instance_role_id());
    auto p = pool_->run({"provision", "--count", "2", "--label", "job-1", "--usage-class", "on-demand"});
    ASSERT_EQ(p.exit_code, 0) << describe(p);
  }
  void TearDown() override {
    agents_.reset();
    cloud_.clear_faults();
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

TEST_F(ControllerRelease, TwiceIsOnce) {
  auto first = pool_->run({"release", "--wait", "--label", "job-1"});
  ASSERT_EQ(first.exit_code, 0) << describe(first);
  EXPECT_NE(first.out.find("2 returned to the pool"), std::string::npos) << first.out;
  auto second = pool_->run({"release", "--wait", "--label", "job-1"});
  ASSERT_EQ(second.exit_code, 0) << describe(second);
  EXPECT_NE(second.out.find("nothing assigned"), std::string::npos) << second.out;
  EXPECT_EQ(queue_depth(), 2);
  for (const auto& r : records()) {
    EXPECT_EQ(r.state, State::kIdle);
    EXPECT_EQ(r.label, "");
    EXPECT_FALSE(r.advertise_pending);
  }
}

// Without --wait: exit 0 once the drains are written, the instances listed as still draining;
// two provisions racing for them (one while they still drain, one after) take each exactly once.
TEST_F(ControllerRelease, WithoutWaitReturnsAtOnceAndProvisionsTakeTheDrainsOnce) {
  agents_->drain_ok = false;
  const auto started = std::chrono::steady_clock::now();
  auto rel = pool_->run({"--json", "release", "--label", "job-1"});
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_EQ(rel.exit_code, 0) << describe(rel);
  Json::Value j = parse_json(rel.out, "release");
  EXPECT_EQ(j["draining"].size(), 2u) << rel.out;
  EXPECT_FALSE(j["waited"].asBool());
  EXPECT_LT(took, std::chrono::seconds(5));
  for (const auto& r : records()) EXPECT_EQ(r.state, State::kDraining);
  EXPECT_EQ(queue_depth(), 0);

  auto a = pool_->start({"--json", "provision", "--count", "2", "--label", "job-2", "--usage-class", "on-demand"});
  auto b = pool_->start({"--json", "provision", "--count", "1", "--label", "job-3", "--usage-class", "on-demand"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  agents_->drain_ok = true;
  auto ra = a->wait(), rb = b->wait();
  ASSERT_EQ(ra.exit_code, 0) << describe(ra);
  ASSERT_EQ(rb.exit_code, 0) << describe(rb);
  Json::Value pa = parse_json(ra.out, "provision"), pb = parse_json(rb.out, "provision");
  EXPECT_EQ(pa["warm"].asInt() + pb["warm"].asInt(), 2) << ra.out << rb.out;
  EXPECT_EQ(pa["launched"].asInt() + pb["launched"].asInt(), 1) << ra.out << rb.out;
  std::set<std::string> owners;
  for (const auto& r : records()) {
    EXPECT_EQ(r.state, State::kRunning) << r.instance_id;
    owners.insert(r.label + "/" + r.instance_id);
  }
  EXPECT_EQ(owners.size(), 3u);
  EXPECT_EQ(queue_depth(), 0) << "taken straight from their drains: no pool message";
}

TEST_F(ControllerRelease, ConcurrentReleasesReturnEachInstanceOnce) {
  agents_->drain_ok = false;  // both releases get to wait on the same drains
  auto a = pool_->start({"--json", "release", "--wait", "--label", "job-1"});
  auto b = pool_->start({"--json", "release", "--wait", "--label", "job-1"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  agents_->drain_ok = true;
  auto ra = a->wait(), rb = b->wait();
  ASSERT_EQ(ra.exit_code, 0) << describe(ra);
  ASSERT_EQ(rb.exit_code, 0) << describe(rb);
  EXPECT_EQ(queue_depth(), 2);  // one pool message per instance, not two
  for (const auto& r : records()) EXPECT_EQ(r.state, State::kIdle);
}

TEST_F(ControllerRelease, NotDrainedInTimeIsTerminated) {
  agents_->drain_ok = false;
  auto res = pool_->run({"--json", "release", "--wait", "--label", "job-1", "--timeout", "2s"});
  ASSERT_EQ(res.exit_code, 0) << describe(res);
  Json::Value j = parse_json(res.out, "release");
  EXPECT_EQ(j["terminated"].size(), 2u);
  for (const auto& r : records()) {
    EXPECT_EQ(r.state, State::kTerminated);
    auto i = aws_.ec2.describe_instances({.instance_ids = {r.instance_id}, .filters = {}, .max_results = {},
                                          .next_token = ""});
    ASSERT_EQ(i.size(), 1u);
    EXPECT_TRUE(i[0].state.name == "shutting-down" || i[0].state.name == "terminated") << i[0].state.name;
  }
  EXPECT_EQ(queue_depth(), 0);
}

TEST_F(ControllerRelease, RetriesThrottlingAndErrors) {
  cloud_.control("POST", "/_control/stats/reset");
  for (const char* service : {"dynamodb", "sqs"}) {
    Json::Value f;
    f["service"] = service;
    f["throttleRate"] = 0.2;
    f["errorRate"] = 0.1;
    cloud_.control("POST", "/_control/faults", f);
  }
  // Attempts enough that no single call plausibly exhausts them at a 30% fault rate (0.3^20).
  auto res = pool_->run({"--set", "aws_max_attempts=20", "release", "--wait", "--label", "job-1"});
  cloud_.clear_faults();
  ASSERT_EQ(res.exit_code, 0) << describe(res);
  Json::Value stats = cloud_.control("GET", "/_control/stats");
  int64_t faults = 0;
  for (const char* service : {"dynamodb", "sqs"}) {
    for (const auto& op : stats[service].getMemberNames()) {
      faults += stats[service][op]["errors"].asInt64() + stats[service][op]["throttles"].asInt64();
    }
  }
  EXPECT_GT(faults, 0);  // faults were injected, and the release still finished
  EXPECT_EQ(queue_depth(), 2);
}

TEST_F(ControllerRelease, StatusShowsTheInstancesAndThePool) {
  auto s = pool_->run({"--json", "status"});
  ASSERT_EQ(s.exit_code, 0) << describe(s);
  Json::Value j = parse_json(s.out, "status");
  ASSERT_EQ(j["instances"].size(), 2u);
  EXPECT_EQ(j["instances"][0]["state"].asString(), "running");
  EXPECT_EQ(j["instances"][0]["label"].asString(), "job-1");
  EXPECT_TRUE(j["instances"][0].isMember("heartbeat_age_ms"));
  ASSERT_EQ(pool_->run({"release", "--wait", "--label", "job-1"}).exit_code, 0);
  auto text = pool_->run({"status"});
  ASSERT_EQ(text.exit_code, 0) << describe(text);
  EXPECT_NE(text.out.find("idle"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("2 message(s) visible"), std::string::npos) << text.out;
}

// Usage and configuration errors: exit 2 with a message naming the key or flag; nothing is done.
class ControllerCli : public ::testing::Test {
 protected:
  runpool::testing::LocalCloud& cloud_ = runpool::testing::LocalCloud::shared();
  CtlPool pool_{cloud_, "cli", "ctl-cli"};
};

TEST_F(ControllerCli, ConfigurationErrorsNameTheKey) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string expect;
  };
  std::vector<Case> cases = {
      {{"status"}, {{"RUNPOOL_CLAIM_WAIT", "forever"}}, "claim_wait"},
      {{"status"}, {{"RUNPOOL_CLAIM_WAIT", "forever"}}, "RUNPOOL_CLAIM_WAIT"},
      {{"--set", "resource_classes=small", "status"}, {}, "resource_classes"},
      {{"--set", "no_such_key=1", "status"}, {}, "no_such_key"},
      {{"--set", "github_token=ghp_x", "status"}, {}, "github_token"},
      {{"--pool", "a b", "status"}, {}, "pool"},
      {{"--endpoint-sqs", "localhost:1", "status"}, {}, "endpoint_sqs"},
      {{"--log-level", "loud", "status"}, {}, "log_level"},
      {{"provision", "--label", "a,b"}, {}, "--label"},
      {{"provision", "--resource-class", "huge"}, {}, "--resource-class"},
      {{"provision", "--usage-class", "cheap"}, {}, "--usage-class"},
      {{"provision", "--timeout", "soon"}, {}, "--timeout"},
      {{"provision", "--count", "0"}, {}, "--count"},
      {{"provision"}, {{"RUNPOOL_GITHUB_TOKEN", ""}}, "github_token"},
      {{"release"}, {}, "--label"},
      {{"frobnicate"}, {}, "frobnicate"},
  };
  for (const auto& c : cases) {
    CtlResult r = pool_.run(c.args, c.env);
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(c.args) << describe(r);
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << ::testing::PrintToString(c.args) << describe(r);
  }
  // A bad config file line names the file and line.
  std::ofstream(pool_.dir() + "/bad.conf") << "table = ok-table\nfleet_rounds = many\n";
  CtlResult r = testing::CtlProcess({"--config", pool_.dir() + "/bad.conf", "status"}, pool_.env(), pool_.dir()).wait();
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_NE(r.err.find("fleet_rounds"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad.conf:2"), std::string::npos) << r.err;
}

TEST_F(ControllerCli, HelpExplainsEveryCommand) {
  CtlResult r = pool_.run({"--help-all"});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  for (const char* word : {"init", "provision", "release", "refresh", "status", "--count", "--resource-class",
                           "--usage-class", "--allowed-instance-types", "--label", "--timeout", "--dry-run",
                           "--endpoint-dynamodb", "--github-owner", "Exit codes"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
  CtlResult ref = pool_.run({"config", "--reference"});
  EXPECT_EQ(ref.exit_code, 0);
  EXPECT_NE(ref.out.find("`RUNPOOL_GITHUB_TOKEN`"), std::string::npos);
  CtlResult shown = pool_.run({"config"});
  EXPECT_NE(shown.out.find("github_token = <redacted>    # RUNPOOL_GITHUB_TOKEN"), std::string::npos) << shown.out;
  EXPECT_EQ(shown.out.find("ghp_"), std::string::npos);
}

}  // namespace
}  // namespace runpool::controller
