// runpool-agent with a JIT runner that GitHub tells to update itself (the GitHub stand-in's
// POST /runners/<id>/refresh; the runner stand-in updates as actions/runner does). In the agent's
// layout (root's installation in a sticky root, a job user per assignment) the update cannot
// succeed: the assignment fails at once saying which runner to bake into the image, the
// installation is as it was, and refresh would terminate the instance. Where the operator gave the
// runner user its root (job_users = fixed), the agent waits for update.sh as run-helper.sh does
// and starts the updated runner again for the same assignment, which then runs its job.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include "common/github/message_session.h"
#include "common/pool/refresh_plan.h"
#include "common/pool/runner_fate.h"
#include "tests/support/agent_cloud.h"
#include "tests/support/scale_set_stack.h"

namespace runpool::agent::testing {
namespace {

using pool::AgentSignal;
using runpool::testing::ScaleSetStack;

constexpr const char* kTarget = "2.340.0";

class AgentUpdate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { env_ = new AgentCloud(); }
  static void TearDownTestSuite() {
    delete env_;
    env_ = nullptr;
  }
  void SetUp() override {
    Json::Value settings;
    settings["scaleSetPollMs"] = 500;
    settings["scaleSetAssignment"] = "acquire";  // JobAvailable, then acquirejobs (GHES's flow)
    env_->cloud().control("POST", "/_control/github/settings", settings);
    stack_ = std::make_unique<ScaleSetStack>(env_->cloud(), env_->github_pat(),
                                             std::string(AgentCloud::kOwner) + "/" + AgentCloud::kRepo);
  }

  // A scale set with updates left on (runpool's own sets ask for disableUpdate; one made by other
  // tooling may not) and a JIT runner of it for the instance's first generation, handed through
  // the record; returns the runner's id (and the set's in `set_id`).
  int64_t serve_jit(const std::string& id, const std::string& set_name, int64_t* set_id = nullptr) {
    github::ScaleSetSpec spec;
    spec.name = set_name;
    spec.labels = {{"System", set_name}};
    spec.disable_update = false;
    github::ScaleSet set = stack_->client.create_scale_set(spec);
    if (set_id) *set_id = set.id;
    github::ScaleSetJitConfig jit = stack_->client.generate_jit_config(set.id, env_->runner_name(id, 1));
    env_->write_launched_jit_record(id, set_name, Secret(jit.encoded_jit_config));
    env_->wait_registered_and_mark_running(id, 1);
    return jit.runner.id;
  }
  // Polls the set's queue (acknowledging every envelope) until `request` is offered; bounded.
  bool offered(github::MessageSession& session, int64_t request) {
    int64_t last = 0;
    for (const auto end = std::chrono::steady_clock::now() + 30s; std::chrono::steady_clock::now() < end;) {
      auto message = session.get_message(last, 5);
      if (!message) continue;
      last = message->message_id;
      session.delete_message(message->message_id);
      for (const github::JobMessage& j : message->jobs) {
        if (j.type == github::JobMessageType::kJobAvailable && j.runner_request_id == request) return true;
      }
    }
    return false;
  }
  void refresh(int64_t runner_id) {
    Json::Value body;
    body["version"] = kTarget;
    Json::Value r = env_->cloud().control("POST", "/_control/github/runners/" + std::to_string(runner_id) + "/refresh", body);
    ASSERT_EQ(r["refreshTo"].asString(), kTarget) << r.toStyledString();
  }
  // What refresh would do with the instance now, GitHub's view of its runner included.
  pool::Action refresh_verdict(const std::string& id) {
    pool::RefreshSnapshot s;
    s.pool = AgentCloud::kPool;
    s.now_ms = to_epoch_ms(system_clock().now());
    s.records = {env_->record(id)};
    s.runners.emplace();
    for (const github::Runner& r : env_->runners_named(env_->runner_name(id, 1))) {
      s.runners->push_back({r.id, r.name, r.busy, r.online()});
    }
    const pool::RefreshPlan plan = pool::plan_refresh(s, pool::RefreshPolicy{});
    for (const pool::Action& a : plan.actions) {
      if (a.instance_id == id) return a;
    }
    pool::Action none;
    none.kind = pool::ActionKind::kKeep;
    none.rule = "none";
    none.reason = "no action for the instance";
    return none;
  }

  void TearDown() override {
    Json::Value settings;
    settings["scaleSetAssignment"] = "service";
    env_->cloud().control("POST", "/_control/github/settings", settings);
  }

  static inline AgentCloud* env_ = nullptr;
  std::unique_ptr<ScaleSetStack> stack_;
};

TEST_F(AgentUpdate, InTheAgentsLayoutTheUpdateFailsTheAssignmentAtOnceSayingWhichRunnerToBake) {
  const std::string id = env_->launch();
  const int64_t runner_id = serve_jit(id, "itest-upd-root-" + std::to_string(getpid()));
  const fs::path root = env_->root_of(id);
  refresh(runner_id);

  ASSERT_TRUE(eventually([&] { return pool::agent_reported(env_->record(id), AgentSignal::kFailed); }, 30s))
      << env_->console(id);
  pool::InstanceRecord r = env_->record(id);
  EXPECT_EQ(r.generation, 1);
  EXPECT_EQ(r.signal_detail.rfind("runner self-update: GitHub asks runner v2.336.0 to update to v2.340.0; it "
                                  "cannot: the installation is root's (Access to the path '" +
                                      root.string() + "/",
                                  0),
            0u)
      << r.signal_detail;
  EXPECT_NE(r.signal_detail.find("bake runner v2.340.0 into the image"), std::string::npos) << r.signal_detail;

  // Stopped, not restarted into a loop; the installation as it was (no link, no marker).
  ASSERT_TRUE(eventually([&] { return env_->pids_matching(id, "Runner.Listener").empty(); }, 15s)) << env_->console(id);
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(env_->pids_matching(id, "Runner.Listener").empty()) << "started again: " << env_->console(id);
  EXPECT_FALSE(fs::is_symlink(root / "bin"));
  EXPECT_TRUE(fs::is_regular_file(root / "bin" / "Runner.Listener"));
  EXPECT_FALSE(fs::exists(root / "update.finished"));
  const std::string console = env_->console(id);
  EXPECT_EQ(console.find("waiting for update.finished"), std::string::npos) << console;

  // The pool's state: out of service, and refresh terminates it (GitHub lists its runner offline).
  r = env_->record(id);
  EXPECT_FALSE(r.busy);
  EXPECT_TRUE(r.reg_token.empty() && r.jit_config.empty());
  const pool::Action a = refresh_verdict(id);
  EXPECT_EQ(a.kind, pool::ActionKind::kTerminate) << a.rule << ": " << a.reason;
  EXPECT_EQ(a.rule, "agent.failed") << a.reason;
  EXPECT_NE(a.reason.find("runner self-update"), std::string::npos) << a.reason;
}

TEST_F(AgentUpdate, ARunnerThatOwnsItsRootUpdatesAndTheSameAssignmentRunsItsJob) {
  // The operator's choice: one runner user that owns the runner root (made before the agent's
  // first assignment by the pre-run script, as an image would).
  const fs::path script = env_->base() / "own-root.sh";
  std::ofstream(script) << "#!/bin/sh\nset -e\nr=" << env_->base().string()
                        << "/$RUNPOOL_INSTANCE_ID/runner\nmkdir -p \"$r\"\nchown runpool-runner:runpool-runner \"$r\"\n"
                        << "chmod 0755 \"$r\"\n";
  chmod(script.c_str(), 0755);
  AgentOptions o;
  o.extra_config = "job_users = fixed\npre_run_script = " + script.string() + "\n";
  const std::string id = env_->launch(o);
  const std::string set_name = "itest-upd-own-" + std::to_string(getpid());
  int64_t set_id = 0;
  const int64_t runner_id = serve_jit(id, set_name, &set_id);
  const fs::path root = env_->root_of(id);
  struct stat st {};
  ASSERT_EQ(stat(root.c_str(), &st), 0);
  ASSERT_NE(st.st_uid, 0u) << "the runner user owns the root";
  refresh(runner_id);

  // update.sh swaps bin/ and the agent starts the new version for the same assignment.
  ASSERT_TRUE(eventually([&] { return env_->record(id).runner_version == kTarget; }, 40s)) << env_->console(id);
  EXPECT_TRUE(fs::is_symlink(root / "bin"));
  EXPECT_EQ(fs::read_symlink(root / "bin"), root / (std::string("bin.") + kTarget));
  EXPECT_FALSE(fs::exists(root / "update.finished")) << "taken by the agent, as run-helper.sh removes it";
  pool::InstanceRecord r = env_->record(id);
  EXPECT_EQ(r.generation, 1);
  EXPECT_FALSE(pool::agent_reported(r, AgentSignal::kFailed)) << r.signal_detail;
  const std::string console = env_->console(id);
  EXPECT_NE(console.find("waiting for update.finished"), std::string::npos) << console;
  EXPECT_NE(console.find("starting it again for the same assignment"), std::string::npos) << console;

  // The job reaches the updated runner, which runs it and ends as an ephemeral runner does.
  github::MessageSession session(stack_->client, set_id, "agent-update-test", &stack_->queue_caller);
  const int64_t job = env_->queue_job(set_name, 500, "echo updated\n");
  ASSERT_TRUE(offered(session, job));
  ASSERT_EQ(session.acquire_jobs({job}), std::vector<int64_t>{job});
  ASSERT_TRUE(eventually([&] { return env_->job(job)["state"].asString() == "completed"; }, 30s))
      << env_->job(job).toStyledString() << env_->console(id);
  EXPECT_EQ(env_->job(job)["result"].asString(), "Succeeded");
  EXPECT_EQ(env_->job(job)["runnerName"].asString(), env_->runner_name(id, 1));
  ASSERT_TRUE(eventually([&] { return env_->pids_matching(id, "Runner.Listener").empty(); }, 15s)) << env_->console(id);
  r = env_->record(id);
  EXPECT_FALSE(pool::agent_reported(r, AgentSignal::kFailed)) << r.signal_detail;

  // Released: drained and back in the pool, its runner the updated one.
  env_->apply(id, pool::start_drain(r, Secret(), to_epoch_ms(system_clock().now()), env_->timeouts()));
  ASSERT_TRUE(eventually([&] { return pool::agent_reported(env_->record(id), AgentSignal::kDrained); }, 30s))
      << env_->console(id);
  EXPECT_EQ(env_->record(id).runner_version, kTarget);
  EXPECT_TRUE(fs::is_symlink(root / "bin")) << "the runner's own root keeps its update";
}

}  // namespace
}  // namespace runpool::agent::testing
