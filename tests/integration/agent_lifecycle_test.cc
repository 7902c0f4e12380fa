// runpool-agent on a real local-cloud instance, driven through whole assignments the way the
// controller drives it (the pure steps of transitions.h on the real table): it registers with the
// assignment's label only, takes the token, serves jobs from the broker and reports busy, drains
// (stock, pull request #4461 and drain-file runner builds: the stock drain, as detected), really deregisters, leaves no file or process of the
// job behind, reports drained — and serves the next assignment.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/support/agent_cloud.h"

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

// A job that first checks it finds nothing of an earlier job (an empty work folder, no process
// of it), then leaves a file in its work folder and a process that escaped the runner's own
// cleanup (RUNNER_TRACKING_ID cleared): the agent's cleaning must remove both.
std::string littering_job(const std::string& marker) {
  return "[ -z \"$(ls -A \"$GITHUB_WORKSPACE\")\" ]\n"
         "! pgrep -f 'sleep 31[3]|stubborn-31[5]' > /dev/null\n"
         "echo left > \"$GITHUB_WORKSPACE/" + marker + "\"\n"
         "(RUNNER_TRACKING_ID= setsid sleep 313 > /dev/null 2>&1 &)\n"
         // and one that ignores SIGTERM: only the SIGKILL after cleanup_timeout ends it
         "(RUNNER_TRACKING_ID= setsid bash -c 'trap \"\" TERM; while :; do sleep 0.2; done; : stubborn-315' "
         "> /dev/null 2>&1 &)\n";
}

void serve_one_assignment(AgentCloud& env, const std::string& id, const std::string& label, int64_t gen) {
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
  int64_t job = env.queue_job(label, 3000, littering_job(marker));
  ASSERT_TRUE(eventually([&] { return env.record(id).busy; }, 20s)) << env.console(id);
  const auto workspace = env.root_of(id) / "_work" / AgentCloud::kRepo / AgentCloud::kRepo;
  ASSERT_TRUE(eventually([&] { return fs::exists(workspace / marker); }, 10s));
  ASSERT_TRUE(eventually([&] { return !env.pids_matching(id, "sleep 313").empty(); }, 10s))
      << "the job leaves a process behind";
  ASSERT_TRUE(eventually([&] { return !env.pids_matching(id, "stubborn-315").empty(); }, 10s));

  // Release while the job runs: it is never cut short. drain → deregistered → cleaned → drained.
  ASSERT_TRUE(env.drain(id)) << env.console(id);
  EXPECT_EQ(env.job(job)["state"].asString(), "completed");
  EXPECT_EQ(env.job(job)["result"].asString(), "Succeeded") << "the job in hand ran to its end";
  EXPECT_EQ(env.job(job)["runnerName"].asString(), name);
  pool::InstanceRecord r2 = env.record(id);
  EXPECT_TRUE(r2.remove_token.empty()) << "the agent took its remove token";
  EXPECT_FALSE(r2.busy);
  EXPECT_TRUE(env.runners_named(name).empty()) << "really deregistered on GitHub";
  EXPECT_FALSE(fs::exists(workspace / marker)) << "the work folder was wiped";
  EXPECT_FALSE(fs::exists(env.root_of(id) / ".runner"));
  EXPECT_FALSE(fs::exists(env.root_of(id) / ".credentials"));
  EXPECT_FALSE(fs::exists(env.root_of(id) / ".drain"));
  EXPECT_FALSE(fs::exists(env.root_of(id) / "_diag"));
  EXPECT_TRUE(env.pids_matching(id, "sleep 313").empty()) << "the leftover process was ended";
  EXPECT_TRUE(env.pids_matching(id, "stubborn-315").empty()) << "even one that ignores SIGTERM";
  EXPECT_TRUE(env.runner_user_pids(id).empty()) << "nothing of the runner user runs between assignments";
  EXPECT_TRUE(fs::exists(env.root_of(id) / "bin" / "Runner.Listener")) << "the installation stays";
}

TEST_F(AgentLifecycle, ADrainFileRunnerServesTwoAssignmentsAndLeavesNothingBetween) {
  const std::string id = env_->launch({.runner_mode = "drain-file"});
  env_->write_launched_record(id, "run-drain-1");
  serve_one_assignment(*env_, id, "run-drain-1", 1);
  const std::string console = env_->console(id);
  EXPECT_NE(console.find("runner drain inputs: --drain-file --drain-on-sigusr1"), std::string::npos) << console;
  // Its drain inputs take ephemeral runners only; the agent's are persistent: the stock drain.
  EXPECT_NE(console.find("drain (stock)"), std::string::npos) << console;

  // Back to the pool, claimed by the next workflow run.
  const int64_t now = to_epoch_ms(system_clock().now());
  env_->apply(id, pool::return_to_pool(env_->record(id), now, env_->timeouts()));
  env_->apply(id, pool::claim(env_->record(id), "run-drain-2", env_->github().create_registration_token().token,
                              env_->reg_url(), now, env_->timeouts()));
  serve_one_assignment(*env_, id, "run-drain-2", 2);
  EXPECT_EQ(env_->state_of(id), "running") << "a served instance stays up for the next claim";
}

TEST_F(AgentLifecycle, StockRunnerDrainsByDeregisteringWhenIdle) {
  const std::string id = env_->launch({.runner_mode = "stock"});
  env_->write_launched_record(id, "run-stock-1");
  serve_one_assignment(*env_, id, "run-stock-1", 1);
  const std::string console = env_->console(id);
  EXPECT_NE(console.find("runner drain inputs: none (a stock runner)"), std::string::npos) << console;
  EXPECT_NE(console.find("drain (stock)"), std::string::npos) << console;
  EXPECT_NE(console.find("deregistered the runner; waiting for the Listener to notice"), std::string::npos);
}

TEST_F(AgentLifecycle, APr4461RunnerIsDrainedTheStockWayNeverWithItsSentinel) {
  // Its .drain sentinel cancels the job in hand when it fires: the agent never writes it.
  const std::string id = env_->launch({.runner_mode = "pr4461"});
  env_->write_launched_record(id, "run-pr-1");
  serve_one_assignment(*env_, id, "run-pr-1", 1);
  const std::string console = env_->console(id);
  EXPECT_NE(console.find("runner drain inputs: none (a stock runner)"), std::string::npos) << console;
  EXPECT_NE(console.find("drain (stock)"), std::string::npos) << console;
  EXPECT_EQ(console.find("Canceled"), std::string::npos) << console;
}

}  // namespace
}  // namespace runpool::agent::testing
