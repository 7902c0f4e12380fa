// The run-scoped lifecycle end to end on the local cloud: runpoolctl provisions runners (cold),
// the real runpool-agent on each instance registers them, the broker runs a workflow's jobs on
// them, release drains them back into the pool; a second workflow gets them warm, finds nothing
// of the first run, and releases them again. Job fates come from the broker; at the end no runner
// of the pool is left registered.
#include "tests/e2e/e2e_fixture.h"

namespace runpool::controller::e2e {
namespace {

class Lifecycle : public E2eTest {
 protected:
  void release_all(const std::string& label) {
    Json::Value j = release(label);
    EXPECT_EQ(j["terminated"].size(), 0u) << write_json(j) << consoles();
  }
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
  release_all("e2e-run-1");
  for (const auto& r : records()) {
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
  release_all("e2e-run-2");
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
  int idle = 0;
  table_->scan([&](const pool::InstanceRecord& r) { idle += r.state == State::kIdle; });
  EXPECT_EQ(idle, 2);
}

// scale-up warms a run-scoped pool ahead of the day: real agents register under a warm-up label,
// drain and deregister; the instances wait in the pool, and the day's first provision gets them warm.
TEST_F(Lifecycle, AScaleUpWarmsTheRunScopedPoolForTheFirstProvision) {
  CtlResult up = pool_->run({"--json", "scale-up", "--to", "2", "--resource-class", "small"}, {},
                            std::chrono::seconds(180));
  ASSERT_EQ(up.exit_code, 0) << describe(up) << consoles();
  std::optional<Json::Value> doc = try_parse_json(up.out);
  ASSERT_TRUE(doc) << describe(up);
  EXPECT_EQ((*doc)["classes"][0]["returned"].asInt(), 2) << up.out;
  int idle = 0;
  for (const auto& r : records()) idle += r.state == State::kIdle;
  EXPECT_EQ(idle, 2);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());

  // The warm-up launched the pool's usage class (usage_class); a provision of it claims them.
  Json::Value first = provision("e2e-morning", 2, {"--usage-class", "spot"});
  ASSERT_TRUE(first["ok"].asBool()) << write_json(first);
  EXPECT_EQ(first["warm"].asInt(), 2);
  EXPECT_EQ(first["launched"].asInt(), 0);
  int64_t id = queue_job("e2e-morning", "first-of-the-day", "true");
  ASSERT_TRUE(eventually([&] { return job(id)["state"].asString() == "completed"; }, std::chrono::seconds(60)))
      << write_json(job(id)) << consoles();
  EXPECT_EQ(job(id)["result"].asString(), "Succeeded");
  release_all("e2e-morning");
  EXPECT_TRUE(registered_runners().empty());
}

// A provision that cannot get all it needs fails, and the instance it had claimed from the pool —
// whose real agent had begun registering — drains back: idle again, its runner deregistered, and
// claimable by the next provision.
TEST_F(Lifecycle, AFailedProvisionReturnsItsClaimToThePool) {
  Json::Value first = provision("e2e-seed", 1);
  ASSERT_TRUE(first["ok"].asBool());
  release_all("e2e-seed");
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
  release_all("e2e-again");
  EXPECT_TRUE(registered_runners().empty());
}

}  // namespace
}  // namespace runpool::controller::e2e
