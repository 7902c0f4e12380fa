// runpool-agent serving scale-set assignments on a real local-cloud instance: the controller's
// part is played with the pure steps of transitions.h on the real table and the scale-set client
// against the local cloud's stand-in of GitHub's Actions service. A job of the scale set is
// acquired, a JIT configuration is generated for the instance's runner name and handed through
// the record; the agent takes it out of the record, starts the runner stand-in with it (in the
// environment, never argv), the ephemeral runner runs the one job and GitHub removes it; the
// drain cleans the instance, which then serves the next scale-set job warm.
#include <gtest/gtest.h>

#include <unistd.h>

#include "common/github/message_session.h"
#include "common/pool/runner_fate.h"
#include "tests/support/agent_cloud.h"
#include "tests/support/scale_set_stack.h"

namespace runpool::agent::testing {
namespace {

using pool::AgentSignal;
using runpool::testing::ScaleSetStack;

class AgentJit : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { env_ = new AgentCloud(); }
  static void TearDownTestSuite() {
    delete env_;
    env_ = nullptr;
  }
  void SetUp() override {
    Json::Value settings;
    settings["scaleSetPollMs"] = 500;
    settings["scaleSetSessionIdleMs"] = 8000;
    settings["scaleSetAssignment"] = "acquire";  // JobAvailable, then acquirejobs (GHES's flow)
    env_->cloud().control("POST", "/_control/github/settings", settings);
    stack_ = std::make_unique<ScaleSetStack>(env_->cloud(), env_->github_pat(),
                                             std::string(AgentCloud::kOwner) + "/" + AgentCloud::kRepo);
  }
  void TearDown() override {
    env_->cloud().clear_faults();
    Json::Value settings;
    settings["scaleSetAssignment"] = "service";
    env_->cloud().control("POST", "/_control/github/settings", settings);
  }

  // Polls (acknowledging every envelope) until a message of `type` for `request` comes; bounded.
  std::optional<github::JobMessage> wait_for(github::MessageSession& session, github::JobMessageType type,
                                             int64_t request) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      auto message = session.get_message(last_message_id_, 5);
      if (!message) continue;
      last_message_id_ = message->message_id;
      session.delete_message(message->message_id);
      for (const github::JobMessage& j : message->jobs) {
        if (j.type == type && j.runner_request_id == request) return j;
      }
    }
    return std::nullopt;
  }

  // A scale set whose only label is its name, as `runs-on: <name>` asks.
  github::ScaleSet create_set(const std::string& name) {
    github::ScaleSetSpec spec;
    spec.name = name;
    spec.labels = {{"System", name}};
    return stack_->client.create_scale_set(spec);
  }

  // One job of the scale set, from the queue to a JIT configuration for `runner_name`.
  Secret acquire_and_configure(github::MessageSession& session, int64_t set_id, const std::string& set_name,
                               const std::string& runner_name, int64_t* job_id, int64_t* runner_id) {
    *job_id = env_->queue_job(set_name, 1500, "echo hello from the scale set\n");
    EXPECT_TRUE(wait_for(session, github::JobMessageType::kJobAvailable, *job_id)) << "no JobAvailable";
    EXPECT_EQ(session.acquire_jobs({*job_id}), std::vector<int64_t>{*job_id});
    EXPECT_TRUE(wait_for(session, github::JobMessageType::kJobAssigned, *job_id)) << "no JobAssigned";
    github::ScaleSetJitConfig jit = stack_->client.generate_jit_config(set_id, runner_name);
    *runner_id = jit.runner.id;
    return Secret(jit.encoded_jit_config);
  }

  static inline AgentCloud* env_ = nullptr;
  std::unique_ptr<ScaleSetStack> stack_;
  int64_t last_message_id_ = 0;
};

TEST_F(AgentJit, ScaleSetJobsRunOnAJitRunnerAndTheInstanceServesTheNextOneWarm) {
  const std::string set_name = "itest-ss-" + std::to_string(getpid());
  github::ScaleSet set = create_set(set_name);
  github::MessageSession session(stack_->client, set.id, "agent-jit-test", &stack_->queue_caller);

  const std::string id = env_->launch();
  for (int64_t gen = 1; gen <= 2; ++gen) {
    SCOPED_TRACE("generation " + std::to_string(gen));
    const std::string name = env_->runner_name(id, gen);
    int64_t job = 0, runner_id = 0;
    Secret jit = acquire_and_configure(session, set.id, set_name, name, &job, &runner_id);
    if (gen == 1) {
      env_->write_launched_jit_record(id, set_name, jit);
    } else {
      env_->apply(id, pool::claim_jit(env_->record(id), set_name, jit, env_->reg_url(),
                                      to_epoch_ms(system_clock().now()), env_->timeouts()));
    }

    // The runner, configured from the JIT configuration, runs the job; `registered` names it.
    ASSERT_TRUE(wait_for(session, github::JobMessageType::kJobStarted, job)) << env_->console(id);
    env_->wait_registered_and_mark_running(id, gen);
    pool::InstanceRecord r = env_->record(id);
    EXPECT_TRUE(r.jit_config.empty()) << "the agent took the JIT configuration out of the record";
    EXPECT_EQ(r.runner_id, runner_id);
    EXPECT_EQ(r.runner_name, name);
    for (pid_t p : env_->pids_matching(id, "Runner.Listener")) {
      EXPECT_EQ(process_cmdline(p).find(jit.reveal().substr(0, 24)), std::string::npos) << "never in argv";
    }
    auto completed = wait_for(session, github::JobMessageType::kJobCompleted, job);
    ASSERT_TRUE(completed) << env_->console(id);
    EXPECT_EQ(completed->result, "succeeded");
    EXPECT_EQ(env_->job(job)["runnerName"].asString(), name);

    // The ephemeral runner is gone from GitHub and from the instance; that is no failure.
    ASSERT_TRUE(eventually([&] { return !stack_->client.get_runner(runner_id).has_value(); }, 15s));
    ASSERT_TRUE(eventually([&] { return env_->pids_matching(id, "Runner.Listener").empty(); }, 15s))
        << env_->console(id);
    EXPECT_TRUE(eventually([&] { return !env_->record(id).busy; }, 5s)) << "busy ends with the runner";
    r = env_->record(id);
    EXPECT_FALSE(pool::agent_reported(r, AgentSignal::kFailed)) << r.signal_detail;

    // The controller's release: a drain with no remove token (nothing is left to deregister).
    env_->apply(id, pool::start_drain(r, Secret(), to_epoch_ms(system_clock().now()), env_->timeouts()));
    ASSERT_TRUE(eventually([&] { return pool::agent_reported(env_->record(id), AgentSignal::kDrained); }, 30s))
        << env_->console(id);
    EXPECT_FALSE(fs::exists(env_->root_of(id) / ".runner"));
    EXPECT_FALSE(fs::exists(env_->root_of(id) / ".credentials"));
    EXPECT_FALSE(fs::exists(env_->root_of(id) / ".credentials_rsaparams"));
    env_->apply(id, pool::return_to_pool(env_->record(id), to_epoch_ms(system_clock().now()), env_->timeouts(), ""));
  }
}

// A runner build with the drain input of actions/runner pull request #4708 (the stand-in's
// drain-file mode): the agent starts the JIT runner with --drain-on-sigusr1, and an armed runner
// that no job reached is drained by SIGUSR1 — it takes nothing more and exits — never SIGINT. It
// ran no job, so GitHub still lists it: `drained` names it, and the controller deletes it.
TEST_F(AgentJit, AnArmedIdleJitRunnerIsDrainedWithTheRunnersOwnDrainInput) {
  const std::string set_name = "itest-ss-armed-" + std::to_string(getpid());
  github::ScaleSet set = create_set(set_name);

  AgentOptions o;
  o.runner_mode = "drain-file";
  const std::string id = env_->launch(o);
  github::ScaleSetJitConfig jit = stack_->client.generate_jit_config(set.id, env_->runner_name(id, 1));
  env_->write_launched_jit_record(id, set_name, Secret(jit.encoded_jit_config));
  env_->wait_registered_and_mark_running(id, 1);
  ASSERT_FALSE(env_->pids_matching(id, "--drain-on-sigusr1").empty()) << env_->console(id);

  pool::InstanceRecord r = env_->record(id);
  env_->apply(id, pool::start_drain(r, Secret(), to_epoch_ms(system_clock().now()), env_->timeouts()));
  ASSERT_TRUE(eventually([&] { return pool::agent_reported(env_->record(id), AgentSignal::kDrained); }, 30s))
      << env_->console(id);
  const std::string console = env_->console(id);
  EXPECT_NE(console.find("drain (drain-signal): listener-gone"), std::string::npos) << console;
  EXPECT_EQ(console.find("sending SIGINT"), std::string::npos) << console;
  r = env_->record(id);
  EXPECT_TRUE(pool::runner_left_registered(r)) << r.signal_detail;
  EXPECT_NE(r.signal_detail.find(std::to_string(jit.runner.id)), std::string::npos) << r.signal_detail;
  EXPECT_EQ(stack_->client.delete_runner(jit.runner.id), github::DeleteOutcome::kDeleted)
      << "still registered, as `drained` says";
}

}  // namespace
}  // namespace runpool::agent::testing
