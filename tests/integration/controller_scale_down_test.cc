// `runpoolctl scale-down`, the real binary, against the local cloud: marked orphans (records the
// test walks through the real steps and marks), instances in the EC2 stand-in, runners on the
// GitHub stand-in. What one protected instance does to a batch of terminations, what a failed
// runner lookup does to the pass, and that github_calls counts the HTTP requests the stand-in saw.
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/aws/dynamodb.h"
#include "common/json.h"
#include "common/pool/dynamo_state_table.h"
#include "common/pool/transitions.h"
#include "tests/support/local_cloud.h"

#ifndef RUNPOOL_CTL_BINARY
#define RUNPOOL_CTL_BINARY ""
#endif
#include "tests/support/runpoolctl_harness.h"

namespace runpool {
namespace {

using namespace std::chrono_literals;
using pool::AgentSignal;
using pool::InstanceRecord;
using pool::State;
using testing::LocalCloud;

constexpr const char* kTable = "scale-down-it";
constexpr const char* kOwner = "sdown-org";
constexpr const char* kRepoName = "sdown-repo";
constexpr const char* kRepo = "sdown-org/sdown-repo";
constexpr const char* kPat = "ghp_scaleDownIntegrationToken01";
constexpr const char* kGetRoute = "GET /repos/{owner}/{repo}/actions/runners/{runner_id}";
const pool::Timeouts kT;

int64_t now_ms() { return to_epoch_ms(system_clock().now()); }

struct Result {
  int exit_code = -1;
  std::string out, err;
  Json::Value json;
};

class ControllerScaleDown : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    LocalCloud& cloud = LocalCloud::shared();
    clients_ = new controller::testing::CloudClients(cloud);
    clients_->db.create_table(pool::DynamoStateTable::create_table_request(kTable));
    clients_->db.wait_until_active(kTable, 20s);
    table_ = new pool::DynamoStateTable(clients_->db, kTable, cloud.instance_role_id());
    Json::Value pat;
    pat["token"] = kPat;
    pat["owners"].append(kOwner);
    cloud.control("POST", "/_control/github/pats", pat);
  }
  static void TearDownTestSuite() {
    delete table_;
    delete clients_;
  }

  void SetUp() override {
    if (std::string(RUNPOOL_CTL_BINARY).empty()) GTEST_SKIP() << "runpoolctl is not built in this tree";
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    pool_ = "sd-";
    for (char ch : name) pool_ += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (pool_.size() > 40) pool_.resize(40);
    dir_ = controller::testing::make_temp_dir(pool_);
  }
  void TearDown() override {
    cloud().clear_faults();
    for (const auto& id : launched_) {
      // Lifted so the instance can go (a terminated one answers 409).
      cloud().control("POST", "/_control/ec2/instances/" + id + "/termination-protection", protection(false), true);
    }
    if (!launched_.empty()) {
      try {
        clients_->ec2.terminate_instances(launched_);
      } catch (const std::exception&) {
        // Already gone.
      }
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  static LocalCloud& cloud() { return LocalCloud::shared(); }
  static Json::Value protection(bool on) {
    Json::Value b;
    b["enabled"] = on;
    return b;
  }

  Result scale_down() {
    LocalCloud& lc = cloud();
    auto creds = lc.controller_credentials();
    std::map<std::string, std::string> env = {
        {"PATH", "/usr/local/bin:/usr/bin:/bin"},
        {"HOME", "/tmp"},
        {"AWS_ACCESS_KEY_ID", creds.access_key_id},
        {"AWS_SECRET_ACCESS_KEY", creds.secret_access_key.reveal()},
        {"AWS_EC2_METADATA_DISABLED", "true"},
        {"RUNPOOL_TABLE", kTable},
        {"RUNPOOL_POOL", pool_},
        {"RUNPOOL_REGION", lc.region()},
        {"RUNPOOL_ENDPOINT_DYNAMODB", lc.dynamodb()},
        {"RUNPOOL_ENDPOINT_SQS", lc.sqs()},
        {"RUNPOOL_ENDPOINT_EC2", lc.ec2()},
        {"RUNPOOL_GITHUB_API_URL", lc.github()},
        {"RUNPOOL_GITHUB_OWNER", kRepo},
        {"RUNPOOL_GITHUB_TOKEN", kPat},
        {"RUNPOOL_RESOURCE_CLASSES", "small=t3.micro"},
        {"RUNPOOL_POOL_MODE", "shared"},
        {"RUNPOOL_INSTANCE_ROLE_ID", lc.instance_role_id()},
        {"RUNPOOL_AWS_TIMEOUT", "10s"},
    };
    auto done = controller::testing::CtlProcess({"--json", "scale-down", "--idle", "5"}, env, dir_).wait(120s);
    if (done.exit_code == -1) ADD_FAILURE() << "runpoolctl was killed or did not finish within 120 s";
    Result r{done.exit_code, std::move(done.out), std::move(done.err), {}};
    if (auto doc = try_parse_json(r.out)) r.json = *doc;
    return r;
  }

  // A running instance the EC2 stand-in holds (no machine behind it), tagged for the pool.
  std::string launch() {
    Json::Value body;
    body["count"] = 1;
    body["instanceType"] = "t3.micro";
    body["tags"]["runpool:pool"] = pool_;
    body["tags"]["runpool:table"] = kTable;
    std::string id = cloud().control("POST", "/_control/ec2/record-only-instances", body)["instanceIds"][0].asString();
    launched_.push_back(id);
    return id;
  }
  std::string ec2_state(const std::string& id) {
    return cloud().control("GET", "/_control/ec2/instances/" + id)["state"].asString();
  }
  InstanceRecord record(const std::string& id) {
    auto r = table_->get(id);
    if (!r) throw std::runtime_error("no record for " + id);
    return *r;
  }
  void step(const std::string& id, const pool::Step& s) { ASSERT_TRUE(table_->transition(id, s.expect, s.change)); }

  // A shared runner's record, registered (with `runner_id`, 0: none) and running for an hour,
  // marked orphan 10 minutes ago by an earlier pass.
  InstanceRecord marked_orphan(const std::string& id, int64_t runner_id) {
    const int64_t t0 = now_ms() - 3'600'000;
    InstanceRecord r = pool::launched_record(id, pool_, "self-hosted,linux,x64,small", "small",
                                             pool::UsageClass::kOnDemand, "t3.micro", Secret("reg"),
                                             cloud().github_web() + "/" + kRepo, t0, kT);
    r.shared = true;
    EXPECT_TRUE(table_->create(r));
    pool::AgentReport a{.heartbeat_ms = t0, .signal = AgentSignal::kRegistered, .generation = 1};
    if (runner_id) {
      a.runner_id = runner_id;
      a.runner_name = pool_ + "-" + id + "-g1";
    }
    EXPECT_TRUE(table_->report(id, a));
    step(id, pool::mark_running(record(id), t0, kT));
    step(id, pool::mark_orphan(record(id), now_ms() - 600'000));
    return record(id);
  }
  // A runner on the GitHub stand-in (offline: no process behind it).
  int64_t register_runner(const std::string& name) {
    Json::Value body;
    body["owner"] = kOwner;
    body["repo"] = kRepoName;
    body["runners"][0]["name"] = name;
    return cloud().control("POST", "/_control/github/runners/bulk", body)["ids"][0].asInt64();
  }
  void github_faults(double error_rate, bool spread) {
    Json::Value f;
    f["service"] = "github";
    f["errorRate"] = error_rate;
    if (spread) f["spread"] = 1;
    cloud().control("POST", "/_control/faults", f);
    cloud().control("POST", "/_control/stats/reset");
  }
  // Requests the stand-in saw on `route` since the last reset, faulted ones included.
  int github_requests(const std::string& route, const char* field = "requests") {
    return cloud().control("GET", "/_control/stats")["github"][route][field].asInt();
  }
  static const Json::Value& decision(const Result& r, const std::string& id) {
    for (const auto& d : r.json["decisions"]) {
      if (d["instance_id"].asString() == id) return d;
    }
    static const Json::Value kNone;
    return kNone;
  }

  static controller::testing::CloudClients* clients_;
  static pool::DynamoStateTable* table_;
  std::string pool_, dir_;
  std::vector<std::string> launched_;
};

controller::testing::CloudClients* ControllerScaleDown::clients_ = nullptr;
pool::DynamoStateTable* ControllerScaleDown::table_ = nullptr;

// Three orphans to terminate in one TerminateInstances batch, one with termination protection:
// EC2 refuses the whole call; the pass terminates the other two one by one, reports the protected
// one failed with EC2's reason, and exits 1.
TEST_F(ControllerScaleDown, AProtectedInstanceFailsAloneAndTheOthersAreTerminated) {
  const std::string a = launch(), locked = launch(), c = launch();
  for (const auto& id : {a, locked, c}) marked_orphan(id, 0);
  ASSERT_EQ(cloud().control("POST", "/_control/ec2/instances/" + locked + "/termination-protection",
                            protection(true))["disableApiTermination"].asBool(),
            true);

  Result r = scale_down();
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.json["failed"].asInt(), 1) << r.out;
  for (const auto& id : {a, c}) {
    EXPECT_EQ(decision(r, id)["rule"].asString(), "orphan.no-runner-id") << r.out;
    EXPECT_EQ(decision(r, id)["outcome"].asString(), "done") << r.out;
    EXPECT_NE(ec2_state(id), "running") << id << " stayed up";
    EXPECT_EQ(record(id).state, State::kTerminating) << id;
  }
  const Json::Value& d = decision(r, locked);
  EXPECT_EQ(d["outcome"].asString(), "failed") << r.out;
  EXPECT_NE(d["detail"].asString().find("OperationNotPermitted"), std::string::npos) << r.out;
  EXPECT_NE(d["detail"].asString().find("The instance '" + locked + "' may not be terminated"), std::string::npos)
      << r.out;
  EXPECT_EQ(ec2_state(locked), "running");
  EXPECT_EQ(record(locked).state, State::kTerminating) << "refresh retries it";
}

// GitHub answers 500 to every request: the orphan's runner GET fails after its retries; the pass
// leaves the instance and its record as they were, warns once with the reason, and exits 1.
TEST_F(ControllerScaleDown, AFailedOrphanLookupLeavesTheInstanceAndExitsOne) {
  const std::string id = launch();
  const int64_t runner = register_runner(pool_ + "-" + id + "-g1");
  const InstanceRecord before = marked_orphan(id, runner);
  github_faults(1.0, false);

  Result r = scale_down();
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.json["failed"].asInt(), 1) << r.out;
  const Json::Value& d = decision(r, id);
  EXPECT_EQ(d["rule"].asString(), "orphan.lookup-failed") << r.out;
  EXPECT_EQ(d["outcome"].asString(), "failed") << r.out;
  EXPECT_NE(d["detail"].asString().find("Server Error"), std::string::npos) << r.out;
  int warnings = 0;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    warnings += line.find("orphan.lookup-failed") != std::string::npos;
  }
  EXPECT_EQ(warnings, 1) << r.err;
  EXPECT_EQ(ec2_state(id), "running");
  const InstanceRecord after = record(id);
  EXPECT_EQ(after.state, State::kRunning);
  EXPECT_EQ(after.orphan_since_ms, before.orphan_since_ms);
  // Every attempt is in github_calls, as the stand-in counted them.
  const int sent = github_requests(kGetRoute);
  EXPECT_GT(sent, 1) << "retried";
  EXPECT_EQ(r.json["github_calls"]["get_runner"].asInt(), sent) << r.out;
}

// Half of GitHub's answers fail (evenly spread: never three in a row), so some GETs are retried
// to success: github_calls counts each HTTP request, the retries too, as the stand-in saw them.
TEST_F(ControllerScaleDown, GithubCallsCountEveryRetriedRequest) {
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(launch());
    marked_orphan(ids.back(), register_runner(pool_ + "-" + ids.back() + "-g1"));
  }
  github_faults(0.5, true);

  Result r = scale_down();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const auto& id : ids) EXPECT_EQ(decision(r, id)["rule"].asString(), "orphan.false-positive") << r.out;
  const int sent = github_requests(kGetRoute), faulted = github_requests(kGetRoute, "errors");
  EXPECT_GE(faulted, 1) << "no request was retried";
  EXPECT_EQ(sent, 4 + faulted);
  EXPECT_EQ(r.json["github_calls"]["get_runner"].asInt(), sent) << r.out;
  EXPECT_EQ(r.json["github_calls"]["total"].asInt(), sent) << "nothing else was asked of GitHub";
}

}  // namespace
}  // namespace runpool
