// runpool-agent against the real runner's paths where a job request never ends in "completed with
// result": acquire answered 404, 409 or 422 ("Skipping message Job", nothing on stdout), the first
// renew failing or a cancel before it ("Running job" and no Worker), a send to the Worker that
// times out (the Worker killed, no completion). On each, busy is reported and then ends — by
// job_start_bound or job_completion_wait after the Worker's exit — so the runner goes on serving and a drain deregisters
// it. And a deregistration GitHub keeps refusing: the agent gives up after its attempts, says in
// `drained` that the runner is left registered, and nothing overwrites that evidence.
#include <gtest/gtest.h>

#include "common/json.h"
#include "common/pool/runner_fate.h"
#include "tests/support/agent_cloud.h"

namespace runpool::agent::testing {
namespace {

class AgentBusy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { env_ = new AgentCloud(); }
  static void TearDownTestSuite() {
    delete env_;
    env_ = nullptr;
  }
  void TearDown() override { env_->cloud().clear_faults(); }

  static size_t count_of(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  }

  static inline AgentCloud* env_ = nullptr;
};

// The bound is short here so each dropped request ends within seconds (5 minutes by default).
constexpr const char* kShortBound = "job_start_bound = 3s\njob_completion_wait = 2s\n";

struct DroppedRequest {
  std::string fault;
  std::string broker_state;  // the job's fate on the broker, once the runner dropped it
  std::string busy_ends;     // how the agent's log says busy ended
};

TEST_F(AgentBusy, EveryJobRequestThatNeverCompletesEndsBusyAndTheRunnerServesOnAndDrains) {
  const std::string id = env_->launch({.runner_mode = "stock", .extra_config = kShortBound});
  const std::string label = "busy-paths";
  env_->write_launched_record(id, label);
  env_->wait_registered_and_mark_running(id, 1);
  const std::string runner = env_->runner_name(id, 1);

  const std::string dropped = "produced no Worker and no completion within 3s: the runner dropped it";
  const std::vector<DroppedRequest> cases = {
      {"acquire404", "refused", dropped},
      {"acquire409", "refused", dropped},
      {"acquire422", "refused", dropped},
      {"renewFails", "", dropped},
      {"cancelBeforeRenew", "completed", dropped},
      {"workerSendTimeout", "", "its Worker exited and no completion line came within 2s"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fault);
    const size_t ended_before = count_of(env_->console(id), "busy ends: ");
    const int64_t job = env_->queue_job(label, 5000, "", c.fault);
    ASSERT_TRUE(eventually([&] { return env_->record(id).busy; }, 20s))
        << "the request is a job in hand until it is known to be over\n"
        << env_->console(id);
    ASSERT_TRUE(eventually([&] { return !env_->record(id).busy; }, 20s)) << "busy stuck\n" << env_->console(id);
    const std::string console = env_->console(id);
    EXPECT_EQ(count_of(console, "busy ends: "), ended_before + 1) << console;
    EXPECT_NE(console.rfind(c.busy_ends), std::string::npos) << console;
    if (!c.broker_state.empty()) {
      EXPECT_TRUE(eventually([&] { return env_->job(job)["state"].asString() == c.broker_state; }, 10s))
          << write_json(env_->job(job));
    }
    EXPECT_NE(env_->job(job)["state"].asString(), "queued") << "the runner took it";
  }

  // The runner, never restarted, serves the next job to its end, then drains the stock way.
  EXPECT_EQ(count_of(env_->console(id), "; restarting"), 0u) << env_->console(id);
  const int64_t good = env_->queue_job(label, 200, "true");
  ASSERT_TRUE(eventually([&] { return env_->job(good)["state"].asString() == "completed"; }, 20s))
      << write_json(env_->job(good));
  EXPECT_EQ(env_->job(good)["result"].asString(), "Succeeded");
  EXPECT_EQ(env_->job(good)["runnerName"].asString(), runner);
  ASSERT_TRUE(env_->drain(id)) << env_->console(id);
  EXPECT_FALSE(env_->record(id).busy);
  EXPECT_TRUE(env_->runners_named(runner).empty()) << "deregistered";
  EXPECT_EQ(env_->record(id).signal_detail.find(pool::kRunnerLeftRegistered), std::string::npos);
}

TEST_F(AgentBusy, ADeregistrationGithubKeepsRefusingLeavesTheRunnerRegisteredAndSaysSo) {
  const std::string id = env_->launch({.runner_mode = "stock", .extra_config = "deregister_attempts = 2\n"});
  const std::string label = "refused-removal";
  env_->write_launched_record(id, label);
  env_->wait_registered_and_mark_running(id, 1);
  const std::string runner = env_->runner_name(id, 1);
  auto registered = env_->runners_named(runner);
  ASSERT_EQ(registered.size(), 1u);

  // Every removal by the runner itself (config.sh remove) answers GitHub's 500.
  Json::Value errors;
  errors["count"] = 50;
  errors["status"] = 500;
  errors["via"] = "runner";
  env_->cloud().control("POST", "/_control/github/runners/" + std::to_string(registered[0].id) + "/removal-errors",
                        errors);

  ASSERT_TRUE(env_->drain(id, 60s)) << env_->console(id);
  const pool::InstanceRecord r = env_->record(id);
  EXPECT_TRUE(pool::runner_left_registered(r)) << r.signal_detail;
  EXPECT_EQ(r.signal_detail.rfind(std::string(pool::kRunnerLeftRegistered) + runner, 0), 0u) << r.signal_detail;
  EXPECT_NE(r.signal_detail.find("(id " + std::to_string(registered[0].id) + ")"), std::string::npos)
      << r.signal_detail;
  EXPECT_EQ(r.runner_id, registered[0].id) << "the controller deletes it by the record's runner_id";
  EXPECT_EQ(env_->runners_named(runner).size(), 1u) << "still on GitHub: the report does not say otherwise";
  const std::string console = env_->console(id);
  EXPECT_EQ(count_of(console, "config.sh remove failed ("), 2u) << console;
  EXPECT_NE(console.find("attempt 2/2"), std::string::npos) << console;
  EXPECT_FALSE(fs::exists(env_->root_of(id) / ".runner")) << "the local configuration is removed all the same";

  // Heartbeats go on; the evidence stays as written.
  const int64_t beat = env_->record(id).heartbeat_ms;
  ASSERT_TRUE(eventually([&] { return env_->record(id).heartbeat_ms > beat + 500; }, 10s));
  EXPECT_EQ(env_->record(id).signal_detail, r.signal_detail);
  EXPECT_TRUE(pool::agent_reported(env_->record(id), pool::AgentSignal::kDrained));
}

}  // namespace
}  // namespace runpool::agent::testing

namespace runpool::agent::testing {
namespace {

// A job over within one read of the runner's output (one that fails at once): its request, in the
// perf log, is read after its completion on stdout. That request is recognised as the finished
// job's: busy ends with the completion, not at job_start_bound (5 minutes by default, kept here).
TEST_F(AgentBusy, AJobOverWithinOneReadLeavesTheRunnerIdleAtOnce) {
  const std::string id = env_->launch({.runner_mode = "stock"});
  const std::string label = "busy-fast";
  env_->write_launched_record(id, label);
  env_->wait_registered_and_mark_running(id, 1);
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    const int64_t job = env_->queue_job(label, 0, "exit 1");
    ASSERT_TRUE(eventually([&] { return env_->job(job)["state"].asString() == "completed"; }, 20s))
        << write_json(env_->job(job));
    EXPECT_EQ(env_->job(job)["result"].asString(), "Failed");
    ASSERT_TRUE(eventually([&] { return !env_->record(id).busy; }, 10s)) << "busy stuck\n" << env_->console(id);
  }
  EXPECT_EQ(count_of(env_->console(id), "busy ends: "), 0u) << "no request was left open:\n" << env_->console(id);
  ASSERT_TRUE(env_->drain(id)) << env_->console(id);
}

}  // namespace
}  // namespace runpool::agent::testing
