// The run-scoped lifecycle end to end on the local cloud: runpoolctl provisions runners (cold),
// the real runpool-agent on each instance registers them, the broker runs a workflow's jobs on
// them, release drains them back into the pool; a second workflow gets them warm, finds nothing
// of the first run, and releases them again. Job fates come from the broker; at the end no runner
// of the pool is left registered.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>

#include "common/json.h"
#include "controller/integration_harness.h"

namespace runpool::controller {
namespace {

namespace fs = std::filesystem;
using pool::State;
using testing::CtlPool;
using testing::CtlResult;
using testing::describe;

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return pred();
}

class Lifecycle : public ::testing::Test {
 protected:
  void SetUp() override {
    // The runner roots live under a directory the runner user can reach; the runner template is
    // the local cloud's stand-in runner, drain-capable.
    base_ = testing::make_temp_dir("runpool-e2e");
    chmod(base_.c_str(), 0755);
    fs::copy(fs::path(RUNPOOL_SOURCE_DIR) / "tests" / "localcloud" / "runner", fs::path(base_) / "runner-template",
             fs::copy_options::recursive);
    std::ofstream(fs::path(base_) / "runner-template" / ".standin.json") << "{\"mode\": \"drain\"}\n";
    Json::Value gh;
    gh["pollMs"] = 1000;
    gh["sessionIdleMs"] = 3000;
    gh["sessionConflictMs"] = 4000;
    cloud_.control("POST", "/_control/github/settings", gh);

    std::string extra = std::string("user_data_template = ") + RUNPOOL_SOURCE_DIR + "/cloud-init/user-data.sh.in\n" +
                        "agent_binary = " + RUNPOOL_AGENT_BINARY + "\n" +
                        "agent_runner_root = " + base_ + "/{instance_id}/runner\n" +
                        "agent_runner_template = " + base_ + "/runner-template\n" +
                        "agent_runner_user = runpool-runner\n" + "agent_drain_capable = true\n" +
                        "agent_heartbeat_interval = 500ms\n" + "agent_assignment_poll_interval = 200ms\n" +
                        "agent_extra = notice_poll_interval=500ms; boot_grace=60s; drain_timeout=60s; "
                        "registration_timeout=60s; cleanup_timeout=2s; terminate_wait=5s\n" +
                        "provision_timeout = 120s\nrelease_timeout = 90s\nmax_heartbeat_age = 30s\n";
    // A pool and table of its own per test: nothing of one test is claimable by the next.
    static int n = 0;
    pool_name_ = "e2e" + std::to_string(++n);
    pool_ = std::make_unique<CtlPool>(cloud_, pool_name_, "ctl-" + pool_name_, extra);
    auto init = pool_->run({"init"});
    ASSERT_EQ(init.exit_code, 0) << describe(init);
    table_ = std::make_unique<pool::DynamoStateTable>(aws_.db, pool_->table());
  }
  void TearDown() override {
    std::vector<std::string> ids;
    table_->scan([&](const pool::InstanceRecord& r) { ids.push_back(r.instance_id); });
    if (!ids.empty()) {
      try {
        aws_.ec2.terminate_instances(ids);
      } catch (const std::exception&) {
      }
    }
    std::error_code ec;
    fs::remove_all(base_, ec);
  }

  Json::Value provision(const std::string& label, int count) {
    CtlResult r = pool_->run({"--json", "provision", "--count", std::to_string(count), "--label", label,
                              "--usage-class", "on-demand"},
                             {}, std::chrono::seconds(180));
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
    return parse_json(r.out.empty() ? "{}" : r.out, "provision");
  }
  void release(const std::string& label) {
    CtlResult r = pool_->run({"--json", "release", "--label", label}, {}, std::chrono::seconds(180));
    ASSERT_EQ(r.exit_code, 0) << describe(r) << consoles();
    Json::Value j = parse_json(r.out, "release");
    EXPECT_EQ(j["terminated"].size(), 0u) << r.out << consoles();
  }
  int64_t queue_job(const std::string& label, const std::string& name, const std::string& run) {
    Json::Value body;
    body["label"] = label;
    body["name"] = name;
    body["durationMs"] = 500;
    body["owner"] = "acme";
    body["repo"] = "app";
    body["run"] = run;
    return cloud_.control("POST", "/_control/github/jobs", body)["id"].asInt64();
  }
  Json::Value job(int64_t id) { return cloud_.control("GET", "/_control/github/jobs/" + std::to_string(id)); }
  // The pool's runners still registered on GitHub.
  std::vector<std::string> registered_runners() {
    std::vector<std::string> out;
    for (const auto& r : cloud_.control("GET", "/_control/github/runners")["runners"]) {
      if (r["name"].asString().rfind(pool_name_ + "-", 0) == 0) out.push_back(r["name"].asString());
    }
    return out;
  }
  std::string consoles() {
    std::string out;
    table_->scan([&](const pool::InstanceRecord& r) {
      try {
        out += "\n--- console of " + r.instance_id + "\n" +
               cloud_.control("GET", "/_control/ec2/instances/" + r.instance_id + "/console")["text"].asString();
      } catch (const std::exception&) {
      }
    });
    return out;
  }

  runpool::testing::LocalCloud& cloud_ = runpool::testing::LocalCloud::shared();
  testing::CloudClients aws_{cloud_};
  std::string base_;
  std::string pool_name_;
  std::unique_ptr<CtlPool> pool_;
  std::unique_ptr<pool::DynamoStateTable> table_;
};

TEST_F(Lifecycle, ColdThenWarmWithJobsAndNothingLeftBehind) {
  // Workflow 1: cold.
  Json::Value cold = provision("e2e-run-1", 2);
  ASSERT_TRUE(cold["ok"].asBool());
  EXPECT_EQ(cold["launched"].asInt(), 2);
  std::vector<int64_t> jobs1;
  for (int i = 0; i < 4; ++i) {
    // Each job leaves a file in its workspace: the next run must not find it.
    jobs1.push_back(queue_job("e2e-run-1", "build-" + std::to_string(i),
                              "echo secret > \"$GITHUB_WORKSPACE/left-by-run-1\""));
  }
  for (int64_t id : jobs1) {
    ASSERT_TRUE(eventually([&] { return job(id)["state"].asString() == "completed"; }, std::chrono::seconds(60)))
        << write_json(job(id)) << consoles();
    EXPECT_EQ(job(id)["result"].asString(), "Succeeded") << write_json(job(id));
  }
  release("e2e-run-1");
  for (const auto& r : [&] {
         std::vector<pool::InstanceRecord> all;
         table_->scan([&](const pool::InstanceRecord& x) { all.push_back(x); });
         return all;
       }()) {
    EXPECT_EQ(r.state, State::kIdle) << r.instance_id;
  }
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());

  // Workflow 2: warm, from the pool.
  Json::Value warm = provision("e2e-run-2", 2);
  ASSERT_TRUE(warm["ok"].asBool());
  EXPECT_EQ(warm["warm"].asInt(), 2);
  EXPECT_EQ(warm["launched"].asInt(), 0);
  std::printf("cold provision: %.1fs, warm provision: %.1fs\n", cold["elapsed_ms"].asDouble() / 1000,
              warm["elapsed_ms"].asDouble() / 1000);
  EXPECT_LT(warm["elapsed_ms"].asInt64(), cold["elapsed_ms"].asInt64());
  std::vector<int64_t> jobs2;
  for (int i = 0; i < 4; ++i) {
    jobs2.push_back(queue_job("e2e-run-2", "test-" + std::to_string(i), "test ! -e \"$GITHUB_WORKSPACE/left-by-run-1\""));
  }
  for (int64_t id : jobs2) {
    ASSERT_TRUE(eventually([&] { return job(id)["state"].asString() == "completed"; }, std::chrono::seconds(60)))
        << write_json(job(id)) << consoles();
    EXPECT_EQ(job(id)["result"].asString(), "Succeeded") << "run 2 found run 1's file: " << write_json(job(id));
    EXPECT_EQ(job(id)["dispatches"].size(), 1u) << "dispatched once, never lost: " << write_json(job(id));
  }
  release("e2e-run-2");
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
  int idle = 0;
  table_->scan([&](const pool::InstanceRecord& r) { idle += r.state == State::kIdle; });
  EXPECT_EQ(idle, 2);
}

// A provision that cannot get all it needs fails, and the instance it had claimed from the pool —
// whose real agent had begun registering — drains back: idle again, its runner deregistered, and
// claimable by the next provision.
TEST_F(Lifecycle, AFailedProvisionReturnsItsClaimToThePool) {
  Json::Value first = provision("e2e-seed", 1);
  ASSERT_TRUE(first["ok"].asBool());
  release("e2e-seed");
  for (const char* t : {"c7i.large", "m7i.large"}) {
    Json::Value c;
    c["instanceType"] = t;
    c["usageClass"] = "on-demand";
    c["available"] = false;
    cloud_.control("POST", "/_control/ec2/capacity", c);
  }
  CtlResult failed = pool_->run({"--json", "provision", "--count", "2", "--label", "e2e-short", "--usage-class",
                                 "on-demand"},
                                {}, std::chrono::seconds(180));
  cloud_.control("DELETE", "/_control/ec2/capacity");
  ASSERT_EQ(failed.exit_code, 1) << describe(failed);
  std::vector<pool::InstanceRecord> all;
  table_->scan([&](const pool::InstanceRecord& r) { all.push_back(r); });
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, State::kIdle) << describe(failed) << consoles();
  EXPECT_EQ(all[0].generation, 2);  // claimed once (generation 2), then returned
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());

  Json::Value again = provision("e2e-again", 1);
  ASSERT_TRUE(again["ok"].asBool());
  EXPECT_EQ(again["warm"].asInt(), 1);
  int64_t id = queue_job("e2e-again", "after-failure", "true");
  ASSERT_TRUE(eventually([&] { return job(id)["state"].asString() == "completed"; }, std::chrono::seconds(60)))
      << write_json(job(id)) << consoles();
  EXPECT_EQ(job(id)["result"].asString(), "Succeeded");
  release("e2e-again");
  EXPECT_TRUE(registered_runners().empty());
}

}  // namespace
}  // namespace runpool::controller
