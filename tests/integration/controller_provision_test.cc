// runpoolctl provision and release, the real binary against the local cloud, with the agents
// played by the test through the real table: cold and warm provisions, pool message validation,
// racing provisions, partial fleets with spot → on-demand fallback, timeout and SIGTERM clean-up,
// and the workflow's step outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/json.h"
#include "common/pool/pool_message.h"
#include "tests/support/runpoolctl_harness.h"

namespace runpool::controller {
namespace {

using pool::State;
using testing::CtlPool;
using testing::CtlResult;
using testing::describe;

class ControllerProvision : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    std::string pool = "prov" + std::to_string(++n);
    pool_ = std::make_unique<CtlPool>(cloud_, pool, "ctl-" + pool);
    auto init = pool_->run({"init"});
    ASSERT_EQ(init.exit_code, 0) << describe(init);
    agents_ = std::make_unique<testing::SimulatedAgents>(cloud_, pool_->table(), pool);
    table_ = std::make_unique<pool::DynamoStateTable>(aws_.db, pool_->table(), cloud_.instance_role_id());
  }
  void TearDown() override {
    agents_.reset();
    cloud_.clear_faults();
    cloud_.control("DELETE", "/_control/ec2/capacity");
    // Nothing of this test's pool may outlive it.
    std::vector<std::string> ids;
    table_->scan([&](const pool::InstanceRecord& r) { ids.push_back(r.instance_id); });
    if (!ids.empty()) {
      try {
        aws_.ec2.terminate_instances(ids);
      } catch (const std::exception&) {
      }
    }
  }

  CtlResult provision(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> a = {"--json", "provision"};
    a.insert(a.end(), args.begin(), args.end());
    return pool_->run(a, env);
  }
  CtlResult release(const std::string& label) { return pool_->run({"--json", "release", "--wait", "--label", label}); }

  std::vector<pool::InstanceRecord> by_state(State s) {
    std::vector<pool::InstanceRecord> out;
    table_->scan([&](const pool::InstanceRecord& r) {
      if (r.state == s) out.push_back(r);
    });
    return out;
  }
  pool::InstanceRecord record(const std::string& id) { return *table_->get(id); }

  std::string queue_url(const std::string& cls) { return aws_.sqs.get_queue_url(pool_->pool() + "-" + cls); }
  // Every visible message's body, left visible again.
  std::vector<std::string> messages(const std::string& cls) {
    std::string url = queue_url(cls);
    std::vector<std::string> out;
    std::vector<std::string> receipts;
    for (int i = 0; i < 10; ++i) {
      auto got = aws_.sqs.receive_messages({.queue_url = url, .max_messages = 10, .wait_seconds = 0,
                                            .visibility_timeout = 30});
      if (got.empty()) break;
      for (auto& m : got) {
        out.push_back(m.body);
        receipts.push_back(m.receipt_handle);
      }
    }
    for (const auto& r : receipts) aws_.sqs.change_message_visibility(url, r, 0);
    std::sort(out.begin(), out.end());
    return out;
  }
  // EC2's instances of this pool that are not terminated.
  std::vector<aws::Instance> live_instances() {
    aws::DescribeInstancesRequest r;
    r.filters = {{"tag:runpool:pool", {pool_->pool()}}, {"instance-state-name", {"pending", "running"}}};
    return aws_.ec2.describe_instances(r);
  }
  // An idle record of this pool, advertised in its queue (as a release leaves one).
  void add_idle(const std::string& id, int64_t generation, pool::UsageClass usage, int64_t deadline_in_ms = 3'600'000,
                int64_t advertised_generation = 0) {
    int64_t now = to_epoch_ms(system_clock().now());
    pool::InstanceRecord r;
    r.instance_id = id;
    r.pool = pool_->pool();
    r.state = State::kIdle;
    r.generation = generation;
    r.resource_class = "small";
    r.usage_class = usage;
    r.instance_type = "c7i.large";
    r.created_ms = now - 60'000;
    r.state_since_ms = now;
    r.deadline_ms = now + deadline_in_ms;
    r.heartbeat_ms = now;
    r.seal_key = pool::make_seal_keys().public_key;  // launched with sealed tokens, as a launch does
    ASSERT_TRUE(table_->create(r));
    aws_.sqs.send_message(queue_url("small"), pool::pool_message_body(
                                                  {id, advertised_generation ? advertised_generation : generation}));
  }

  runpool::testing::LocalCloud& cloud_ = runpool::testing::LocalCloud::shared();
  testing::CloudClients aws_{cloud_};
  std::unique_ptr<CtlPool> pool_;
  std::unique_ptr<testing::SimulatedAgents> agents_;
  std::unique_ptr<pool::DynamoStateTable> table_;
};

TEST_F(ControllerProvision, ColdThenReleasedThenWarm) {
  auto cold = provision({"--count", "2", "--label", "run-1", "--usage-class", "on-demand"});
  ASSERT_EQ(cold.exit_code, 0) << describe(cold);
  Json::Value j = parse_json(cold.out, "provision");
  EXPECT_EQ(j["launched"].asInt(), 2);
  EXPECT_EQ(j["warm"].asInt(), 0);
  auto live = live_instances();
  ASSERT_EQ(live.size(), 2u);
  for (const auto& i : live) {
    EXPECT_EQ(i.tag("runpool:label").value_or(""), "run-1");
    EXPECT_EQ(i.tag("runpool:table").value_or(""), pool_->table());
    EXPECT_EQ(i.lifecycle, "on-demand");
    auto r = record(i.instance_id);
    EXPECT_EQ(r.state, State::kRunning);
    EXPECT_EQ(r.label, "run-1");
    EXPECT_EQ(r.reg_url, cloud_.github_web() + "/acme/app");
  }

  auto rel = release("run-1");
  ASSERT_EQ(rel.exit_code, 0) << describe(rel);
  EXPECT_EQ(parse_json(rel.out, "release")["returned"].size(), 2u);
  EXPECT_EQ(by_state(State::kIdle).size(), 2u);
  EXPECT_EQ(messages("small").size(), 2u);

  auto warm = provision({"--count", "2", "--label", "run-2", "--usage-class", "on-demand"});
  ASSERT_EQ(warm.exit_code, 0) << describe(warm);
  Json::Value w = parse_json(warm.out, "provision");
  EXPECT_EQ(w["warm"].asInt(), 2);
  EXPECT_EQ(w["launched"].asInt(), 0);
  EXPECT_EQ(live_instances().size(), 2u);  // the same two, nothing new
  for (const auto& r : by_state(State::kRunning)) {
    EXPECT_EQ(r.label, "run-2");
    EXPECT_EQ(r.generation, 2);
  }
  EXPECT_TRUE(messages("small").empty());
  ASSERT_EQ(release("run-2").exit_code, 0);
}

TEST_F(ControllerProvision, StaleWrongUsageAndExpiredMessages) {
  add_idle("i-0000000000000a001", 3, pool::UsageClass::kOnDemand, 3'600'000, /*advertised_generation=*/1);  // stale
  add_idle("i-0000000000000a002", 2, pool::UsageClass::kSpot);                       // wrong usage class
  add_idle("i-0000000000000a003", 2, pool::UsageClass::kOnDemand, /*deadline_in_ms=*/1000);  // expires too soon
  auto res = provision({"--count", "1", "--label", "run-v", "--usage-class", "on-demand"});
  ASSERT_EQ(res.exit_code, 0) << describe(res);
  EXPECT_EQ(parse_json(res.out, "provision")["launched"].asInt(), 1);
  auto left = messages("small");
  ASSERT_EQ(left.size(), 1u) << ::testing::PrintToString(left);
  EXPECT_NE(left[0].find("i-0000000000000a002"), std::string::npos);  // left for a spot provision
  for (const char* id : {"i-0000000000000a001", "i-0000000000000a002", "i-0000000000000a003"}) {
    EXPECT_EQ(record(id).state, State::kIdle) << id;
  }
}

TEST_F(ControllerProvision, TwoProvisionsRacingForThePoolNeverBothWin) {
  for (int i = 0; i < 4; ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "i-00000000000000b%02d", i);
    add_idle(id, 2, pool::UsageClass::kOnDemand);
  }
  auto a = pool_->start({"--json", "provision", "--count", "3", "--label", "race-a", "--usage-class", "on-demand"});
  auto b = pool_->start({"--json", "provision", "--count", "3", "--label", "race-b", "--usage-class", "on-demand"});
  auto ra = a->wait(), rb = b->wait();
  ASSERT_EQ(ra.exit_code, 0) << describe(ra);
  ASSERT_EQ(rb.exit_code, 0) << describe(rb);
  Json::Value ja = parse_json(ra.out, "a"), jb = parse_json(rb.out, "b");
  EXPECT_EQ(ja["warm"].asInt() + jb["warm"].asInt(), 4);
  std::set<std::string> ids;
  for (const auto* j : {&ja, &jb}) {
    for (const auto& i : (*j)["instances"]) EXPECT_TRUE(ids.insert(i["instance_id"].asString()).second);
  }
  EXPECT_EQ(ids.size(), 6u);
  for (int i = 0; i < 4; ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "i-00000000000000b%02d", i);
    auto r = record(id);
    EXPECT_EQ(r.generation, 3) << id;  // claimed exactly once
    EXPECT_TRUE(r.label == "race-a" || r.label == "race-b") << id;
  }
  EXPECT_TRUE(messages("small").empty());
}

TEST_F(ControllerProvision, PartialSpotFleetFallsBackToOnDemand) {
  Json::Value c1;
  c1["instanceType"] = "c7i.large";
  c1["usageClass"] = "spot";
  c1["available"] = 1;
  cloud_.control("POST", "/_control/ec2/capacity", c1);
  Json::Value c2 = c1;
  c2["instanceType"] = "m7i.large";
  c2["available"] = false;
  cloud_.control("POST", "/_control/ec2/capacity", c2);
  auto res = provision({"--count", "3", "--label", "run-f", "--usage-class", "spot"});
  ASSERT_EQ(res.exit_code, 0) << describe(res);
  int spot = 0, od = 0;
  for (const auto& i : live_instances()) (i.lifecycle == "spot" ? spot : od)++;
  EXPECT_EQ(spot, 1);
  EXPECT_EQ(od, 2);
  // Each record's usage class is what EC2 launched.
  std::map<std::string, std::string> lifecycle;
  for (const auto& i : live_instances()) lifecycle[i.instance_id] = i.lifecycle;
  for (const auto& r : by_state(State::kRunning)) {
    EXPECT_EQ(pool::usage_class_name(r.usage_class), lifecycle[r.instance_id]) << r.instance_id;
  }
}

TEST_F(ControllerProvision, NoCapacityAtAllFailsCleanly) {
  for (const char* t : {"c7i.large", "m7i.large"}) {
    for (const char* u : {"spot", "on-demand"}) {
      Json::Value c;
      c["instanceType"] = t;
      c["usageClass"] = u;
      c["available"] = false;
      cloud_.control("POST", "/_control/ec2/capacity", c);
    }
  }
  auto res = provision({"--count", "1", "--label", "run-n"});
  EXPECT_EQ(res.exit_code, 1) << describe(res);
  EXPECT_NE(res.err.find("InsufficientInstanceCapacity"), std::string::npos) << res.err;
  EXPECT_TRUE(live_instances().empty());
}

TEST_F(ControllerProvision, TimeoutTerminatesLaunchedAndReturnsClaimed) {
  add_idle("i-0000000000000c001", 2, pool::UsageClass::kOnDemand);
  agents_->register_ok = false;
  auto res = provision({"--count", "2", "--label", "run-t", "--usage-class", "on-demand", "--timeout", "3s"});
  EXPECT_EQ(res.exit_code, 1) << describe(res);
  Json::Value j = parse_json(res.out, "provision");
  EXPECT_FALSE(j["ok"].asBool());
  EXPECT_NE(j["error"].asString().find("timed out"), std::string::npos);
  EXPECT_TRUE(live_instances().empty());  // the launched one is gone
  auto back = record("i-0000000000000c001");
  EXPECT_EQ(back.state, State::kIdle);
  EXPECT_EQ(back.generation, 3);
  EXPECT_EQ(back.label, "");
  auto left = messages("small");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0], R"({"generation":3,"instance_id":"i-0000000000000c001"})");
  for (const auto& r : by_state(State::kTerminated)) EXPECT_EQ(r.label, "");
  EXPECT_TRUE(by_state(State::kRunning).empty());
  EXPECT_TRUE(by_state(State::kCreated).empty());
}

TEST_F(ControllerProvision, SigtermCleansUp) {
  add_idle("i-0000000000000d001", 2, pool::UsageClass::kOnDemand);
  agents_->register_ok = false;
  auto p = pool_->start({"provision", "--count", "2", "--label", "run-s", "--usage-class", "on-demand"});
  // Wait until both are assigned, then cancel as a cancelled workflow does.
  for (int i = 0; i < 200; ++i) {
    auto assigned = table_->by_label("run-s");
    if (assigned.size() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(table_->by_label("run-s").size(), 2u);
  auto started = std::chrono::steady_clock::now();
  p->signal(SIGTERM);
  auto res = p->wait(std::chrono::seconds(30));
  EXPECT_EQ(res.exit_code, 1) << describe(res);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_NE(res.out.find("cancelled"), std::string::npos) << describe(res);
  EXPECT_TRUE(live_instances().empty());
  EXPECT_EQ(record("i-0000000000000d001").state, State::kIdle);
  EXPECT_TRUE(table_->by_label("run-s").empty());
}

TEST_F(ControllerProvision, StepOutputsAndSummaryInActions) {
  std::string out = pool_->dir() + "/github_output", summary = pool_->dir() + "/step_summary";
  std::ofstream(out).close();
  std::ofstream(summary).close();
  auto res = pool_->run({"provision", "--count", "1", "--usage-class", "on-demand"},
                        {{"GITHUB_OUTPUT", out}, {"GITHUB_STEP_SUMMARY", summary}, {"GITHUB_RUN_ID", "4242"},
                         {"GITHUB_RUN_ATTEMPT", "3"}, {"GITHUB_JOB", "provision"}});
  ASSERT_EQ(res.exit_code, 0) << describe(res);
  std::string label = pool_->pool() + "-4242-3-provision";
  std::string o = testing::slurp(out);
  EXPECT_NE(o.find("label<<ghadelimiter_"), std::string::npos) << o;
  EXPECT_NE(o.find("\n" + label + "\nghadelimiter_"), std::string::npos) << o;
  EXPECT_NE(o.find("warm<<"), std::string::npos);
  EXPECT_NE(o.find("launched<<"), std::string::npos);
  auto running = by_state(State::kRunning);
  ASSERT_EQ(running.size(), 1u);
  EXPECT_NE(o.find("instance-ids<<"), std::string::npos);
  EXPECT_NE(o.find(running[0].instance_id), std::string::npos);
  EXPECT_EQ(running[0].label, label);
  std::string s = testing::slurp(summary);
  EXPECT_NE(s.find("| instance | type | usage | source | running after |"), std::string::npos) << s;
  EXPECT_NE(s.find(running[0].instance_id), std::string::npos);
  ASSERT_EQ(release(label).exit_code, 0);
}

}  // namespace
}  // namespace runpool::controller
