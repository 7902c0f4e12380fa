// The operator's pre-run script on a real local-cloud instance running the real agent: a failing
// script leaves the record saying so (pre_run=failed, `failed` for its generation) and no runner
// anywhere; a passing one runs first — before any registration, with its clean environment — then
// the agent serves, and a restarted agent does not run it a second time on the same boot.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "agent/pre_run_boot.h"
#include "tests/support/agent_cloud.h"

namespace runpool::agent::testing {
namespace {

using pool::AgentSignal;
using pool::PreRun;

class AgentPreRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { env_ = new AgentCloud(); }
  static void TearDownTestSuite() {
    delete env_;
    env_ = nullptr;
  }
  void TearDown() override {
    // The agent keeps each boot's result under /run (shared by the local cloud's instances).
    for (const auto& id : launched_) {
      std::error_code ec;
      fs::remove(pre_run_state_file(id), ec);
    }
  }

  // An executable script in the suite's directory, which the instances (on this host) can reach.
  static std::string script(const std::string& name, const std::string& body) {
    const fs::path p = env_->base() / name;
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    chmod(p.c_str(), 0755);
    return p.string();
  }

  std::string launch_with(const std::string& script_path) {
    AgentOptions o;
    o.extra_config = "pre_run_script = " + script_path + "\npre_run_timeout = 20s\n";
    const std::string id = env_->launch(o);
    launched_.push_back(id);
    return id;
  }

  static inline AgentCloud* env_ = nullptr;
  std::vector<std::string> launched_;
};

TEST_F(AgentPreRun, AFailingScriptLeavesTheRecordFailedAndRegistersNoRunner) {
  const std::string path = script("pre-run-fail.sh",
                                  "echo 'checking the instance store'\n"
                                  "echo 'no disk at /dev/nvme9n1' >&2\n"
                                  "exit 3");
  const std::string id = launch_with(path);
  env_->write_launched_record(id, "run-prerun-fail");
  ASSERT_TRUE(eventually([&] { return pool::agent_reported(env_->record(id), AgentSignal::kFailed); }, 30s))
      << env_->console(id);
  pool::InstanceRecord r = env_->record(id);
  EXPECT_EQ(r.pre_run, PreRun::kFailed);
  EXPECT_EQ(r.pre_run_detail, "exit 3: no disk at /dev/nvme9n1");
  EXPECT_EQ(r.signal_generation, 1);
  EXPECT_EQ(r.signal_detail, "pre-run script failed: exit 3: no disk at /dev/nvme9n1");

  // It idles: still beating, still no runner a while later — on GitHub, in the record, on disk.
  const int64_t beat = r.heartbeat_ms;
  ASSERT_TRUE(eventually([&] { return env_->record(id).heartbeat_ms > beat; }, 5s));
  std::this_thread::sleep_for(1500ms);
  r = env_->record(id);
  EXPECT_TRUE(env_->runners_named(env_->runner_name(id, 1)).empty()) << "no runner registered on GitHub";
  EXPECT_EQ(r.runner_id, 0);
  EXPECT_FALSE(r.reg_token.empty()) << "the token was never taken: nothing used it";
  EXPECT_FALSE(fs::exists(env_->root_of(id) / ".runner"));
  EXPECT_TRUE(env_->pids_matching(id, "Runner.Listener").empty());
  EXPECT_EQ(env_->state_of(id), "running") << "ending it is the controller's (refresh: agent.failed)";
  const std::string console = env_->console(id);
  EXPECT_NE(console.find("pre-run| checking the instance store"), std::string::npos) << "its output is logged";
  EXPECT_NE(console.find("idle, serving nothing on this boot"), std::string::npos) << console;
}

TEST_F(AgentPreRun, APassingScriptRunsFirstThenTheAgentServesAndARestartDoesNotRunItAgain) {
  const fs::path out = env_->base() / "pre-run-ok";
  const std::string path = script(
      "pre-run-ok.sh",
      "set -e\n"
      "dir=" + out.string() + "-$RUNPOOL_INSTANCE_ID\n"
      "mkdir -p \"$dir\"\n"
      "env > \"$dir/env\"\n"
      // Before any registration: the runner root has no configuration yet.
      "if [ -e \"" + env_->base().string() + "/$RUNPOOL_INSTANCE_ID/runner/.runner\" ]; then echo configured > "
      "\"$dir/order\"; else echo first > \"$dir/order\"; fi\n"
      "echo run >> \"$dir/runs\"\n"
      "sleep 1\n"
      "echo 'cache warm'");
  const std::string id = launch_with(path);
  env_->write_launched_record(id, "run-prerun-ok");
  env_->wait_registered_and_mark_running(id, 1);
  pool::InstanceRecord r = env_->record(id);
  EXPECT_EQ(r.pre_run, PreRun::kOk);
  EXPECT_EQ(r.pre_run_detail.rfind("exit 0 after ", 0), 0u) << r.pre_run_detail;
  EXPECT_EQ(env_->runners_named(env_->runner_name(id, 1)).size(), 1u) << "the agent serves";

  const fs::path dir = fs::path(out.string() + "-" + id);
  EXPECT_EQ(read_text(dir / "order"), "first\n") << "the script ran before the runner was configured";
  const std::string env = read_text(dir / "env");
  EXPECT_NE(env.find("RUNPOOL_INSTANCE_ID=" + id + "\n"), std::string::npos) << env;
  EXPECT_NE(env.find(std::string("RUNPOOL_POOL=") + AgentCloud::kPool + "\n"), std::string::npos) << env;
  EXPECT_NE(env.find("RUNPOOL_RESOURCE_CLASS=small\n"), std::string::npos) << "from the instance's tag: " << env;
  EXPECT_NE(env.find("HOME=/root\n"), std::string::npos) << env;
  EXPECT_EQ(env.find("AWS_"), std::string::npos) << "nothing of the agent's environment: " << env;
  EXPECT_EQ(env.find("RUNPOOL_LOCALCLOUD"), std::string::npos) << env;

  // A job runs on it, as on any served instance.
  const int64_t job = env_->queue_job("run-prerun-ok", 200);
  ASSERT_TRUE(eventually([&] { return env_->job(job)["state"].asString() == "completed"; }, 20s));
  EXPECT_EQ(env_->job(job)["result"].asString(), "Succeeded");

  // The agent dies and is restarted on the same boot: the script is not run a second time.
  auto agents = env_->pids_matching(id, "runpool-agent --config");
  ASSERT_EQ(agents.size(), 1u);
  ASSERT_EQ(kill(agents[0], SIGKILL), 0);
  ASSERT_TRUE(eventually(
      [&] {
        auto now = env_->pids_matching(id, "runpool-agent --config");
        return now.size() == 1 && now[0] != agents[0];
      },
      10s));
  ASSERT_TRUE(eventually([&] { return env_->console(id).find("already run on this boot") != std::string::npos; }, 10s))
      << env_->console(id);
  EXPECT_EQ(read_text(dir / "runs"), "run\n");
  ASSERT_TRUE(eventually([&] { return env_->pids_matching(id, "Runner.Listener run").size() == 1; }, 15s));
  EXPECT_EQ(env_->record(id).pre_run, PreRun::kOk);
  ASSERT_TRUE(env_->drain(id)) << env_->console(id);
  EXPECT_TRUE(env_->runners_named(env_->runner_name(id, 1)).empty());
}

}  // namespace
}  // namespace runpool::agent::testing
