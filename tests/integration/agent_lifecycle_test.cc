// runpool-agent on a real local-cloud instance, driven through whole assignments the way the
// controller drives it (the pure steps of transitions.h on the real table): it registers with the
// assignment's label only, takes the token, serves jobs from the broker and reports busy, drains
// (drain-capable runner and stock runner), really deregisters, leaves no file or process of the
// job behind, reports drained — and serves the next assignment.
#include <gtest/gtest.h>

#include <cstdlib>

#include "agent/testing/local_cloud_agent.h"

namespace runpool::agent::testing {
namespace {

using pool::AgentSignal;

class AgentLifecycle : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { env_ = new AgentCloud(); }
  static void TearDownTestSuite() {
    delete env_;
    env_ = nullptr;
  }
  void TearDown() override { env_->cloud().clear_faults(); }
  static inline AgentCloud* env_ = nullptr;
};

// A job that leaves a file in its work folder and a process that escaped the runner's own
// cleanup (RUNNER_TRACKING_ID cleared): the agent's cleaning must remove both.
std::string littering_job(const std::string& marker) {
  return "echo left > \"$GITHUB_WORKSPACE/" + marker + "\"; (RUNNER_TRACKING_ID= setsid sleep 313 > /dev/null 2>&1 &)";
}

void serve_one_assignment(AgentCloud& env, const std::string& id, const std::string& label, int64_t gen,
                          bool drain_capable) {
  const std::string name = env.runner_name(id, gen);
  env.wait_registered_and_mark_running(id, gen);
  pool::InstanceRecord r = env.record(id);
  EXPECT_TRUE(r.reg_token.empty()) << "the agent took its token out of the record";
  EXPECT_EQ(r.runner_name, name);
  auto runners = env.runners_named(name);
  ASSERT_EQ(runners.size(), 1u) << "registered on GitHub under its unique name";
  EXPECT_EQ(runners[0].id, r.runner_id);
  EXPECT_TRUE(runners[0].online());
  EXPECT_EQ(runners[0].label_names(), std::vector<std::string>{label}) << "the assignment label only";

  // Heartbeats on the AWS clock: recent, and advancing.
  const int64_t beat = env.record(id).heartbeat_ms;
  EXPECT_LT(std::abs(to_epoch_ms(system_clock().now()) - beat), 3000) << "heartbeat " << beat;
  EXPECT_TRUE(eventually([&] { return env.record(id).heartbeat_ms > beat; }, 3s));

  // A job: busy is reported from the runner's own output while it runs.
  const std::string marker = "marker-g" + std::to_string(gen);
  int64_t job = env.queue_job(label, 2500, littering_job(marker));
  ASSERT_TRUE(eventually([&] { return env.record(id).busy; }, 20s)) << env.console(id);
  ASSERT_TRUE(eventually([&] { return env.job(job)["state"].asString() == "completed"; }, 20s));
  EXPECT_EQ(env.job(job)["result"].asString(), "Succeeded");
  EXPECT_EQ(env.job(job)["runnerName"].asString(), name);
  ASSERT_TRUE(eventually([&] { return !env.record(id).busy; }, 10s)) << "idle reported after the job";
  const auto workspace = env.root_of(id) / "_work" / AgentCloud::kRepo / AgentCloud::kRepo;
  EXPECT_TRUE(fs::exists(workspace / marker));
  EXPECT_FALSE(env.pids_matching(id, "sleep 313").empty()) << "the job left a process behind: " << [&] {
    std::string out;
    for (pid_t p : env.pids(id)) out += std::to_string(p) + " " + process_cmdline(p) + "\n";
    for (auto& e : fs::recursive_directory_iterator(env.root_of(id) / "_diag")) {
      if (e.path().string().find("pages") != std::string::npos && e.is_regular_file()) out += read_text(e.path());
    }
    return out;
  }();

  // Release: drain → deregistered → cleaned → drained.
  ASSERT_TRUE(env.drain(id)) << env.console(id);
  r = env.record(id);
  EXPECT_TRUE(r.remove_token.empty()) << "the agent took its remove token";
  EXPECT_FALSE(r.busy);
  EXPECT_TRUE(env.runners_named(name).empty()) << "really deregistered on GitHub";
  EXPECT_FALSE(fs::exists(workspace / marker)) << "the work folder was wiped";
  EXPECT_FALSE(fs::exists(env.root_of(id) / ".runner"));
  EXPECT_FALSE(fs::exists(env.root_of(id) / ".credentials"));
  EXPECT_FALSE(fs::exists(env.root_of(id) / ".drain"));
  EXPECT_FALSE(fs::exists(env.root_of(id) / "_diag"));
  EXPECT_TRUE(env.pids_matching(id, "sleep 313").empty()) << "the leftover process was ended";
  EXPECT_TRUE(env.runner_user_pids(id).empty()) << "nothing of the runner user runs between assignments";
  EXPECT_TRUE(fs::exists(env.root_of(id) / "bin" / "Runner.Listener")) << "the installation stays";
  (void)drain_capable;
}

TEST_F(AgentLifecycle, DrainCapableRunnerServesTwoAssignmentsAndLeavesNothingBetween) {
  const std::string id = env_->launch({.drain_capable = true});
  env_->write_launched_record(id, "run-drain-1");
  serve_one_assignment(*env_, id, "run-drain-1", 1, true);
  EXPECT_NE(env_->console(id).find("drain (sentinel)"), std::string::npos) << "drained with .drain";

  // Back to the pool, claimed by the next workflow run.
  const int64_t now = to_epoch_ms(system_clock().now());
  env_->apply(id, pool::return_to_pool(env_->record(id), now, env_->timeouts()));
  env_->apply(id, pool::claim(env_->record(id), "run-drain-2", env_->github().create_registration_token().token,
                              env_->reg_url(), now, env_->timeouts()));
  serve_one_assignment(*env_, id, "run-drain-2", 2, true);
  EXPECT_EQ(env_->state_of(id), "running") << "a served instance stays up for the next claim";
}

TEST_F(AgentLifecycle, StockRunnerDrainsByDeregisteringWhenIdle) {
  const std::string id = env_->launch({.drain_capable = false});
  env_->write_launched_record(id, "run-stock-1");
  serve_one_assignment(*env_, id, "run-stock-1", 1, false);
  const std::string console = env_->console(id);
  EXPECT_NE(console.find("drain (stock)"), std::string::npos) << console;
  EXPECT_NE(console.find("deregistered the runner; waiting for the Listener to notice"), std::string::npos);
}

}  // namespace
}  // namespace runpool::agent::testing
