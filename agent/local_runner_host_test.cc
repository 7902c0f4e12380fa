// The runner root on disk and its processes, with a small fake runner (bash scripts) run as the
// real runpool-runner user. Needs root and that user (scripts/setup.sh); skipped otherwise.
#include "agent/local_runner_host.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "agent/testing/memory_docker_engine.h"

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const char* kListener = R"SH(#!/bin/bash
cd "$(dirname "$0")/.." || exit 1
if [ "$2" = --help ]; then
  echo "uid=$(id -u)" > .help-call
  [ "$(cat help.txt 2>/dev/null)" = hang ] && sleep 30
  cat help.txt 2>/dev/null; echo "Commands: configure ... run [--jitconfig B64 | --once]"; exit 0
fi
mkdir -p _diag
log="_diag/Runner_$(date +%Y%m%d-%H%M%S%N)-utc.log"
echo "Current runner version: '2.336.0'"
echo "deprecated_exit_code=$ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE" > .listener-env
echo "$(date -u '+%Y-%m-%d %H:%M:%SZ'): Listening for Jobs"
echo "[2026-01-01 10:00:00Z INFO BrokerMessageListener] Acknowledging runner request '5'." >> "$log"
trap 'echo Exiting...; exit 0' INT
while :; do sleep 0.05; done
)SH";

const char* kConfig = R"SH(#!/bin/bash
cd "$(dirname "$0")" || exit 1
{ echo "uid=$(id -u)"; echo "args=$*"; echo "argc=$#"; env | sort; } > .config-call
if [ "$1" = remove ]; then rm -f .runner .credentials .credentials_rsaparams; exit 0; fi
name=""
while [ $# -gt 0 ]; do [ "$1" = --name ] && name="$2"; shift; done
[ -e .runner ] && { echo "already configured"; exit 1; }
printf '\xef\xbb\xbf{"agentId": 5, "agentName": "%s"}' "$name" > .runner
echo '{}' > .credentials
echo '{}' > .credentials_rsaparams
echo "Settings Saved."
)SH";

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether `user` is a member of `group` by /etc/group's list (supplementary membership).
bool in_group(const std::string& user, const std::string& group) {
  std::ifstream in("/etc/group");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(group + ":", 0) != 0) continue;
    const std::string members = "," + line.substr(line.rfind(':') + 1) + ",";
    return members.find("," + user + ",") != std::string::npos;
  }
  return false;
}

class LocalRunnerHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    user_ = lookup_user("runpool-runner");
    if (geteuid() != 0 || !user_) GTEST_SKIP() << "needs root and the runpool-runner user (scripts/setup.sh)";
    char tmpl[] = "/tmp/runner-host-XXXXXX";
    base_ = mkdtemp(tmpl);
    chmod(base_.c_str(), 0755);
    tpl_ = base_ / "template";
    fs::create_directories(tpl_ / "bin");
    std::ofstream(tpl_ / "bin" / "Runner.Listener") << kListener;
    std::ofstream(tpl_ / "config.sh") << kConfig;
    fs::permissions(tpl_ / "bin" / "Runner.Listener", fs::perms(0755));
    fs::permissions(tpl_ / "config.sh", fs::perms(0755));
    std::ofstream(tpl_ / ".standin.json") << R"({"mode":"stock"})";
  }
  void TearDown() override {
    if (!base_.empty()) fs::remove_all(base_);
  }

  RunnerHostSettings settings(const fs::path& root) {
    RunnerHostSettings s;
    s.root = root.string();
    s.template_dir = tpl_.string();
    s.user = *user_;
    s.path = "/usr/local/bin:/usr/bin:/bin";
    s.config_sh_timeout = 20s;
    s.cleanup_timeout = 2s;
    s.end_processes = false;  // a shared machine: never end every process of the user here
    return s;
  }

  // Settings for a new job user per assignment in `root`, from a uid range of the test's own:
  // nothing else on the machine has it, and tests that may run at once each use their own.
  RunnerHostSettings job_user_settings(const fs::path& root, UidRange range) {
    TenantUsersSettings ts;
    ts.range = range;
    ts.state_file = (base_ / "job-users").string();
    ts.home = (root / "_home").string();
    users_ = std::make_unique<SystemTenantUsers>(ts, nullptr);
    RunnerHostSettings s = settings(root);
    s.tenants = users_.get();
    s.tenant_range = range;
    s.sweep.roots = {base_.string()};
    s.sweep.sysvipc_dir = (base_ / "no-sysvipc").string();
    return s;
  }

  std::optional<UserIdentity> user_;
  std::unique_ptr<SystemTenantUsers> users_;
  fs::path base_, tpl_;
};

// The ephemeral runner's mark: a root-owned file beside the runner root, readable by the next
// agent; none (or a malformed one) reads as no mark, and none is kept without a path.
TEST_F(LocalRunnerHostTest, TheEphemeralMarkOutlivesTheAgentThatWroteIt) {
  RunnerHostSettings s = settings(base_ / "root");
  s.ephemeral_mark = (base_ / "root.ephemeral").string();
  EXPECT_EQ(LocalRunnerHost(s, nullptr).ephemeral_mark(), std::nullopt);
  LocalRunnerHost(s, nullptr).mark_ephemeral(7);
  EXPECT_EQ(LocalRunnerHost(s, nullptr).ephemeral_mark(), std::optional<int64_t>(7)) << "read by the next agent";
  struct stat st {};
  ASSERT_EQ(stat(s.ephemeral_mark.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ofstream(s.ephemeral_mark, std::ios::trunc) << "7 or so\n";
  EXPECT_EQ(LocalRunnerHost(s, nullptr).ephemeral_mark(), std::nullopt) << "malformed";
  s.ephemeral_mark.clear();
  LocalRunnerHost(s, nullptr).mark_ephemeral(8);
  EXPECT_EQ(LocalRunnerHost(s, nullptr).ephemeral_mark(), std::nullopt);
}

TEST_F(LocalRunnerHostTest, ARootTheRunnerCannotReachIsRefusedClearly) {
  fs::create_directories(base_ / "private");
  chmod((base_ / "private").c_str(), 0700);
  LocalRunnerHost host(settings(base_ / "private" / "runner"), nullptr);
  try {
    host.prepare("");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not searchable"), std::string::npos) << e.what();
  }
}

TEST_F(LocalRunnerHostTest, ARunnerGroupIsOneArgumentAfterRunnergroup) {
  const fs::path root = base_ / "grouped";
  RunnerHostSettings hs = settings(root);
  hs.runner_group = "Linux GPU";
  LocalRunnerHost host(hs, nullptr);
  host.prepare("");
  ASSERT_TRUE(host.configure({"https://github.com/octo-org", "run-9", "ci-i-1-g3", Secret("t")}).ok());
  std::string call = read_file(root / ".config-call");
  EXPECT_NE(call.find("args=--url https://github.com/octo-org --labels run-9 --no-default-labels --name ci-i-1-g3 "
                      "--unattended --replace --work _work --disableupdate --runnergroup Linux GPU\n"),
            std::string::npos)
      << call;
  EXPECT_NE(call.find("argc=14\n"), std::string::npos) << "the name with its space is one argument: " << call;
}

TEST_F(LocalRunnerHostTest, PrepareInstallsTheTemplateRootOwnedInAStickyRoot) {
  const fs::path root = base_ / "i-1" / "runner";
  LocalRunnerHost host(settings(root), nullptr);
  host.prepare("");
  struct stat st {};
  ASSERT_EQ(stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, user_->gid);
  EXPECT_EQ(st.st_mode & 07777, 01770u);
  ASSERT_EQ(stat((root / "bin" / "Runner.Listener").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u) << "the installation stays root's";
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  ASSERT_EQ(stat((root / "_work").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, user_->uid);
  EXPECT_TRUE(fs::exists(root / ".standin.json"));
  EXPECT_FALSE(fs::exists(root.string() + ".staging-" + std::to_string(getpid())));
  // Idempotent, and a root with a Listener is not copied over again.
  fs::remove(root / ".standin.json");
  host.prepare("");
  EXPECT_FALSE(fs::exists(root / ".standin.json"));
}

// A proxy the agent's unit sets reaches config.sh and the runner; nothing else of the agent's does.
TEST_F(LocalRunnerHostTest, TheAgentsProxyVariablesReachTheRunner) {
  std::map<std::string, std::string> agent_env = {{"https_proxy", "http://proxy.internal:3128"},
                                                  {"NO_PROXY", "169.254.169.254,.internal"},
                                                  {"http_proxy", ""},
                                                  {"AWS_ACCESS_KEY_ID", "leak"}};
  auto getenv = [&](const char* name) -> const char* {
    auto it = agent_env.find(name);
    return it == agent_env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(proxy_environment(getenv),
            (std::vector<std::string>{"https_proxy=http://proxy.internal:3128", "NO_PROXY=169.254.169.254,.internal"}))
      << "set ones only, in a fixed order";

  const fs::path root = base_ / "runner";
  RunnerHostSettings s = settings(root);
  s.proxy_env = proxy_environment(getenv);
  LocalRunnerHost host(s, nullptr);
  host.prepare("");
  CommandResult r = host.configure({"https://github.com/o/r", "run-9", "ci-i-1-g3", Secret("tok")});
  ASSERT_TRUE(r.ok()) << r.output;
  std::string call = read_file(root / ".config-call");
  EXPECT_NE(call.find("https_proxy=http://proxy.internal:3128"), std::string::npos) << call;
  EXPECT_NE(call.find("NO_PROXY=169.254.169.254,.internal"), std::string::npos) << call;
  EXPECT_EQ(call.find("AWS_"), std::string::npos) << call;
}

TEST_F(LocalRunnerHostTest, ConfigureRunsAsTheRunnerWithTheTokenInTheEnvironmentOnly) {
  const fs::path root = base_ / "runner";
  LocalRunnerHost host(settings(root), nullptr);
  host.prepare("");
  std::ofstream(root / ".runner_migrated") << "stale";
  setenv("RUNPOOL_TABLE", "leak", 1);
  setenv("AWS_ACCESS_KEY_ID", "leak", 1);
  CommandResult r = host.configure({"https://github.com/o/r", "run-9", "ci-i-1-g3", Secret("s3cr3t-token")});
  unsetenv("RUNPOOL_TABLE");
  unsetenv("AWS_ACCESS_KEY_ID");
  ASSERT_TRUE(r.ok()) << r.output;
  EXPECT_FALSE(fs::exists(root / ".runner_migrated")) << "stale configuration goes first";
  std::string call = read_file(root / ".config-call");
  EXPECT_NE(call.find("uid=" + std::to_string(user_->uid)), std::string::npos) << call;
  EXPECT_NE(call.find("args=--url https://github.com/o/r --labels run-9 --no-default-labels --name ci-i-1-g3 "
                      "--unattended --replace --work _work --disableupdate"),
            std::string::npos)
      << call;
  EXPECT_NE(call.find("ACTIONS_RUNNER_INPUT_TOKEN=s3cr3t-token"), std::string::npos);
  const size_t args_at = call.find("args=");
  const std::string args_line = call.substr(args_at, call.find('\n', args_at) - args_at);
  EXPECT_EQ(args_line.find("s3cr3t"), std::string::npos) << "never in argv: " << args_line;
  EXPECT_NE(call.find("HOME=" + (root / "_home").string()), std::string::npos);
  EXPECT_EQ(call.find("RUNPOOL_"), std::string::npos) << call;
  EXPECT_EQ(call.find("AWS_"), std::string::npos) << call;
  auto id = host.configured();
  ASSERT_TRUE(id);
  EXPECT_EQ(id->id, 5);
  EXPECT_EQ(id->name, "ci-i-1-g3");

  CommandResult removed = host.remove(Secret("remove-token"));
  ASSERT_TRUE(removed.ok()) << removed.output;
  EXPECT_NE(read_file(root / ".config-call").find("ACTIONS_RUNNER_INPUT_TOKEN=remove-token"), std::string::npos);
  EXPECT_NE(read_file(root / ".config-call").find("args=remove\n"), std::string::npos);
  EXPECT_FALSE(host.configured());
}

TEST_F(LocalRunnerHostTest, TheListenerRunsAsTheRunnerAndItsOutputBecomesEvents) {
  const fs::path root = base_ / "runner";
  LocalRunnerHost host(settings(root), nullptr);
  host.prepare("");
  fs::create_directories(root / "_diag");
  ASSERT_EQ(chown((root / "_diag").c_str(), user_->uid, user_->gid), 0);
  std::ofstream(root / "_diag" / "Runner_0-old.log") << "[x INFO BrokerMessageListener] Acknowledging runner request '1'.\n";
  auto listener = host.start_listener(ListenerStart{});
  struct KillOnExit {
    ListenerProcess& l;
    ~KillOnExit() { l.kill(); }
  } guard{*listener};
  std::vector<RunnerEvent> events;
  // Bounds of 20 s: the stand-in is a node process, slow to start on a loaded two-core machine.
  for (int i = 0; i < 400 && events.size() < 3; ++i) {
    for (auto& e : listener->poll_events()) events.push_back(e);
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(events.size(), 3u);
  bool listening = false, requested = false, version = false;
  for (const auto& e : events) {
    listening = listening || e.kind == RunnerEvent::kListening;
    requested = requested || (e.kind == RunnerEvent::kJobRequested && e.job == "5");
    version = version || (e.kind == RunnerEvent::kVersion && e.result == "2.336.0");
  }
  EXPECT_TRUE(listening);
  EXPECT_TRUE(requested) << "only the new Listener's _diag lines count";
  EXPECT_TRUE(version);
  std::string env_seen;
  std::getline(std::ifstream(root / ".listener-env"), env_seen);
  EXPECT_EQ(env_seen, "deprecated_exit_code=1") << "a refused version must exit 7, not 1";
  EXPECT_FALSE(listener->exit_status());

  // The agent after a restart (another host) follows the running Listener: its output from now
  // on, its signals, its end.
  LocalRunnerHost again(settings(root), nullptr);
  auto adopted = again.adopt_listener();
  ASSERT_TRUE(adopted) << "a Listener of the runner user is found";
  EXPECT_FALSE(adopted->exit_status());
  adopted->interrupt();
  std::optional<ExitStatus> status, adopted_status;
  for (int i = 0; i < 400 && !(status && adopted_status); ++i) {
    listener->poll_events();
    adopted->poll_events();
    status = listener->exit_status();  // reaps it: this test is its parent
    adopted_status = adopted->exit_status();
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, (ExitStatus{false, 0}));
  listener->poll_events();  // what it wrote before exiting, as the agent reads it after an exit
  EXPECT_NE(listener->output_tail().find("Exiting..."), std::string::npos) << listener->output_tail();
  ASSERT_TRUE(adopted_status);
  EXPECT_TRUE(adopted_status->unknown) << "not the adopting host's child";
  adopted->poll_events();
  EXPECT_NE(adopted->output_tail().find("Exiting..."), std::string::npos) << adopted->output_tail();
  EXPECT_EQ(adopted->output_tail().find("Listening for Jobs"), std::string::npos)
      << "only what it wrote after the adoption: " << adopted->output_tail();
  EXPECT_FALSE(again.adopt_listener()) << "none left";
}

// The jobs' confinement (the IMDS guard) runs before any runner process: before the runner is
// installed or configured, and before each Listener; when it fails, neither happens.
TEST_F(LocalRunnerHostTest, JobsAreConfinedBeforeAnyRunnerProcessAndAFailedConfinementStartsNothing) {
  const fs::path root = base_ / "runner";
  RunnerHostSettings s = settings(root);
  int calls = 0;
  bool fail = true;
  s.confine_jobs = [&] {
    ++calls;
    if (fail) throw std::runtime_error("job IMDS guard: nft failed");
  };
  LocalRunnerHost host(s, nullptr);
  EXPECT_THROW(host.prepare(""), std::runtime_error);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(fs::exists(root / "bin" / "Runner.Listener")) << "nothing installed without the guard";
  fail = false;
  host.prepare("");
  EXPECT_EQ(calls, 2);
  host.prepare("");
  EXPECT_EQ(calls, 3) << "every time: the guard may have gone meanwhile";
  // An agent restarted mid-assignment (after a reboot the guard is gone) confines before it starts
  // the Listener again.
  fail = true;
  LocalRunnerHost restarted(s, nullptr);
  EXPECT_THROW(restarted.start_listener(ListenerStart{}), std::runtime_error);  // a Listener would be a process to find: none
  EXPECT_EQ(calls, 4);
}

TEST_F(LocalRunnerHostTest, DrainInputsAreReadFromRunHelpAsTheRunnerUserWithinABound) {
  const fs::path root = base_ / "runner";
  RunnerHostSettings st = settings(root);
  st.config_sh_timeout = 1s;
  LocalRunnerHost host(st, nullptr);
  host.prepare("");
  std::optional<RunnerDrainSupport> none = host.drain_support();
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(*none, (RunnerDrainSupport{}));
  EXPECT_EQ(read_file(root / ".help-call"), "uid=" + std::to_string(user_->uid) + "\n");
  std::ofstream(root / "help.txt") << " --drain-file PATH    drain\n --drain-on-sigusr1   drain on SIGUSR1\n";
  EXPECT_EQ(host.drain_support(), (RunnerDrainSupport{true, true}));
  std::ofstream(root / "help.txt", std::ios::trunc) << "hang\n";  // a Listener that never answers
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(host.drain_support(), std::nullopt);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
}

TEST_F(LocalRunnerHostTest, CleanRemovesEverythingTheRunnerLeftAndKeepsTheInstallation) {
  const fs::path root = base_ / "runner";
  LocalRunnerHost host(settings(root), nullptr);
  host.prepare("");
  ASSERT_TRUE(host.configure({"https://github.com/o/r", "l", "ci-i-1-g1", Secret("t")}).ok());
  std::ofstream(root / ".drain") << "";  // a sentinel someone left
  fs::create_directories(root / "_diag" / "pages");
  fs::create_directories(root / "_work" / "repo" / "repo");
  std::ofstream(root / "_work" / "repo" / "repo" / "left-behind.txt") << "x";
  std::ofstream(root / "_home" / ".cache") << "x";
  std::ofstream(root / ".env") << "LD_PRELOAD=/tmp/evil.so\n";
  std::ofstream(root / "planted") << "x";
  for (const char* f : {".env", "planted"}) {
    ASSERT_EQ(lchown((root / f).c_str(), user_->uid, user_->gid), 0);
  }
  host.clean();
  for (const char* gone : {".runner", ".credentials", ".credentials_rsaparams", ".drain", "_diag", ".env", "planted",
                           ".config-call", "_work/repo", "_home/.cache"}) {
    EXPECT_FALSE(fs::exists(root / gone)) << gone;
  }
  for (const char* kept : {"bin/Runner.Listener", "config.sh", ".standin.json", "_work", "_home"}) {
    EXPECT_TRUE(fs::exists(root / kept)) << kept;
  }
  struct stat st {};
  ASSERT_EQ(stat((root / "_work").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, user_->uid);
  EXPECT_FALSE(host.configured());
}

}  // namespace
}  // namespace runpool::agent

namespace runpool::agent {
namespace {

// Per-assignment job users: prepare() makes one (the root's group, _work and _home are its), the
// runner's commands run as it, and clean() ends its processes wherever they went, removes its
// files wherever they are, checks the installation and deletes the user; the next prepare()
// makes a new uid. A uid range of the test's own: nothing else on the machine has it.
TEST_F(LocalRunnerHostTest, JobUsersComeAndGoWithEveryAssignment) {
  if (access("/usr/sbin/useradd", X_OK) != 0) GTEST_SKIP() << "no useradd";
  const fs::path root = base_ / "runner";
  RunnerHostSettings s = job_user_settings(root, {1987000000, 1987000999});
  SystemTenantUsers& users = *users_;
  LocalRunnerHost host(s, nullptr);

  host.prepare("");
  const auto first = users.current();
  ASSERT_TRUE(first);
  EXPECT_TRUE(s.tenant_range.contains(first->uid));
  EXPECT_EQ(first->name, tenant_name(first->uid));
  struct stat st {};
  ASSERT_EQ(stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, first->gid) << "the root's group is the job user's";
  ASSERT_EQ(stat((root / "_work").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, first->uid);
  ASSERT_TRUE(host.configure({"https://github.com/o/r", "l", "ci-i-1-g1", Secret("t")}).ok());
  EXPECT_NE(read_file(root / ".config-call").find("uid=" + std::to_string(first->uid)), std::string::npos);

  // What a job leaves: a file in a scratch place outside the root, a process in its own session.
  fs::create_directories(base_ / "scratch");
  chmod((base_ / "scratch").c_str(), 01777);
  SpawnOptions job;
  job.argv = {"/bin/sh", "-c", "echo x > " + (base_ / "scratch" / "planted").string() + "; setsid sleep 300 &"};
  job.env = {"PATH=/usr/bin:/bin"};
  job.user = *first;
  ASSERT_EQ(run_command(job, 10s, nullptr).exit_code, 0);
  ASSERT_TRUE(fs::exists(base_ / "scratch" / "planted"));
  ASSERT_FALSE(processes_of_user(first->uid).empty());

  host.clean();
  EXPECT_TRUE(processes_of_user(first->uid).empty());
  EXPECT_FALSE(fs::exists(base_ / "scratch" / "planted"));
  EXPECT_FALSE(lookup_user(first->name)) << "the job user is deleted";
  EXPECT_FALSE(users.current());
  EXPECT_TRUE(fs::exists(root / "bin" / "Runner.Listener"));
  EXPECT_FALSE(host.configured());

  host.prepare("");
  const auto second = users.current();
  ASSERT_TRUE(second);
  EXPECT_GT(second->uid, first->uid) << "a uid is never handed out twice";

  // The installation changed during the assignment (by someone with root): the clean fails.
  std::ofstream(root / "bin" / "Runner.Listener", std::ios::app) << "# planted\n";
  try {
    host.clean();
    ADD_FAILURE() << "a changed installation passed the clean";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bin/Runner.Listener: changed"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(lookup_user(second->name)) << "the job user is retired all the same";
}

}  // namespace
}  // namespace runpool::agent

namespace runpool::agent {
namespace {

// job_privileges = docker: what the job did through the engine is undone after the assignment, from
// the engine's state when it started (kept in a file); what cannot be undone fails the clean, every
// time it is tried, while the job user is retired all the same.
TEST_F(LocalRunnerHostTest, TheDockerEngineIsCleanedBackToTheAssignmentsStart) {
  if (access("/usr/sbin/useradd", X_OK) != 0) GTEST_SKIP() << "no useradd";
  const fs::path root = base_ / "runner";
  EngineState start;
  start.images = {{"sha256:ubuntu", {"ubuntu:latest"}, 100}};
  start.networks = {{"n-none", "none"}};
  testing::MemoryDockerEngine engine(start);
  RunnerHostSettings s = job_user_settings(root, {1987001000, 1987001999});
  SystemTenantUsers& users = *users_;
  s.docker = &engine;
  s.docker_baseline = (base_ / "docker-baseline").string();
  LocalRunnerHost host(s, nullptr);

  host.prepare("docker");
  ASSERT_TRUE(fs::exists(s.docker_baseline));
  const auto first = users.current();
  ASSERT_TRUE(first);
  EXPECT_TRUE(in_group(first->name, "docker")) << "a docker assignment's job user is in the engine's group";
  engine.engine().images[0].tags.clear();  // the job moves ubuntu:latest to its own image …
  engine.engine().images.push_back({"sha256:evil", {"ubuntu:latest"}, 200});
  engine.engine().containers.push_back({"c1", "sha256:evil", "backdoor"});  // … and leaves a container
  engine.engine().volumes.push_back("loot");
  host.prepare("docker");  // a second registration attempt: the start stays the assignment's
  host.clean();
  EXPECT_TRUE(engine_differences(start, engine.state()).empty());
  EXPECT_FALSE(fs::exists(s.docker_baseline)) << "the next assignment keeps its own start";

  host.prepare("docker");
  const auto second = users.current();
  ASSERT_TRUE(second);
  engine.engine().images.clear();  // deleted: nothing can bring it back
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      host.clean();
      ADD_FAILURE() << "a deleted image passed the clean (attempt " << attempt << ")";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("image ubuntu (ubuntu:latest) was removed"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(lookup_user(second->name)) << "the job user is retired all the same";
  }

  // A baseline that cannot be read: the images cannot be vouched for.
  std::ofstream(s.docker_baseline, std::ios::trunc) << "{\"version\": 1, \"contain";
  engine.engine() = start;
  try {
    host.clean();
    ADD_FAILURE() << "images with no record of the start passed the clean";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be vouched for"), std::string::npos) << e.what();
  }

  // No baseline at all: no assignment started since the last clean (an agent's first clean after
  // boot): the image's own engine is left alone.
  fs::remove(s.docker_baseline);
  engine.engine() = start;
  engine.applied.clear();
  host.clean();
  EXPECT_TRUE(engine.applied.empty());
  EXPECT_TRUE(engine_differences(start, engine.state()).empty());

  // Each assignment's record says what its jobs may do; "" is the agent's own setting (user).
  host.prepare("");
  const auto plain = users.current();
  ASSERT_TRUE(plain);
  EXPECT_FALSE(in_group(plain->name, "docker"));
  EXPECT_FALSE(fs::exists(s.docker_baseline)) << "no engine state kept for an assignment without Docker";
  engine.engine().containers.push_back({"c2", "sha256:ubuntu", "not-a-job's"});
  engine.applied.clear();
  host.clean();
  EXPECT_TRUE(engine.applied.empty()) << "the engine is left alone after an assignment without Docker";
  EXPECT_THROW(host.prepare("root"), std::runtime_error);
  s.docker = nullptr;
  LocalRunnerHost no_engine(s, nullptr);
  try {
    no_engine.prepare("docker");
    ADD_FAILURE() << "a docker assignment on a machine without an engine";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no Docker engine"), std::string::npos) << e.what();
  }
}

// job_privileges = sudo: the assignment's job user, and no one else, may become root through a
// sudoers drop-in of its own, which the clean takes away; a machine without sudo refuses.
TEST_F(LocalRunnerHostTest, ASudoAssignmentsJobUserAloneMayBecomeRootUntilTheClean) {
  if (access("/usr/sbin/useradd", X_OK) != 0) GTEST_SKIP() << "no useradd";
  const fs::path root = base_ / "runner";
  RunnerHostSettings s = job_user_settings(root, {1987002000, 1987002999});
  SystemTenantUsers& users = *users_;
  fs::create_directories(base_ / "sudoers.d");
  s.sudoers_file = (base_ / "sudoers.d" / "runpool-job").string();
  LocalRunnerHost host(s, nullptr);

  host.prepare("sudo");
  const auto job = users.current();
  ASSERT_TRUE(job);
  std::stringstream rule;
  rule << std::ifstream(s.sudoers_file).rdbuf();
  EXPECT_NE(rule.str().find("\n" + job->name + " ALL=(ALL:ALL) NOPASSWD: ALL\n"), std::string::npos) << rule.str();
  struct stat st {};
  ASSERT_EQ(stat(s.sudoers_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0440u) << "sudo ignores a drop-in others can write";
  EXPECT_EQ(fs::directory_iterator(base_ / "sudoers.d")->path(), fs::path(s.sudoers_file)) << "no file but the rule";
  if (access("/usr/sbin/visudo", X_OK) == 0) {  // sudo's own parser, where installed
    const std::string check = "/usr/sbin/visudo -c -q -f " + s.sudoers_file;
    EXPECT_EQ(std::system(check.c_str()), 0) << check;
  }
  host.clean();
  EXPECT_FALSE(fs::exists(s.sudoers_file)) << "root is the assignment's only";
  EXPECT_FALSE(lookup_user(job->name));

  host.prepare("user");
  EXPECT_FALSE(fs::exists(s.sudoers_file)) << "a user assignment gets no sudo";
  host.clean();

  // The rule of an assignment an agent crashed in goes at the next clean all the same.
  std::ofstream(s.sudoers_file) << "left behind ALL=(ALL:ALL) NOPASSWD: ALL\n";
  host.clean();
  EXPECT_FALSE(fs::exists(s.sudoers_file));

  // With sudo installed, for real: the job user becomes root, a user assignment's job user cannot.
  if (access("/usr/bin/sudo", X_OK) == 0 && fs::is_directory("/etc/sudoers.d")) {
    s.sudoers_file = "/etc/sudoers.d/runpool-test-" + std::to_string(getpid());
    LocalRunnerHost real(s, nullptr);
    auto as_job = [&](const std::string& command) {
      const std::string line = "/usr/bin/sudo -n -u " + users.current()->name + " -- " + command + " 2>/dev/null";
      std::string out;
      if (FILE* f = popen(line.c_str(), "r")) {
        char buf[256];
        while (fgets(buf, sizeof buf, f)) out += buf;
        pclose(f);
      }
      return out;
    };
    real.prepare("sudo");
    EXPECT_EQ(as_job("/usr/bin/sudo -n /usr/bin/id -u"), "0\n");
    real.clean();
    EXPECT_FALSE(fs::exists(s.sudoers_file));
    real.prepare("user");
    EXPECT_EQ(as_job("/usr/bin/sudo -n /usr/bin/id -u"), "");
    EXPECT_EQ(as_job("/usr/bin/id -u"), std::to_string(users.current()->uid) + "\n") << "the check itself works";
    real.clean();
  }

  s.sudoers_file.clear();
  LocalRunnerHost no_sudo(s, nullptr);
  try {
    no_sudo.prepare("sudo");
    ADD_FAILURE() << "a sudo assignment on a machine without sudo";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no sudo"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(users.current()) << "refused before any job user is made";
}

// job_cache_scope = repository: the tool cache goes to the next job user of the same repository,
// never to another's.
TEST_F(LocalRunnerHostTest, CachesFollowTheScopeAcrossJobUsers) {
  if (access("/usr/sbin/useradd", X_OK) != 0) GTEST_SKIP() << "no useradd";
  const fs::path root = base_ / "runner";
  RunnerHostSettings s = job_user_settings(root, {1987003000, 1987003999});
  SystemTenantUsers& users = *users_;
  JobCache cache((base_ / "runner.caches").string(), {"_work/_tool"});
  s.cache = &cache;
  s.cache_scope = CacheScope::kRepository;
  LocalRunnerHost host(s, nullptr);
  auto assignment = [&](const std::string& url) {
    host.prepare("");
    EXPECT_TRUE(host.configure({url, "l", "ci-i-1-g1", Secret("t")}).ok());
    return *users.current();
  };
  const fs::path tool = root / "_work" / "_tool" / "node";
  const UserIdentity first = assignment("https://github.com/acme/app");
  fs::create_directories(tool);
  std::ofstream(tool / "bin") << "node";
  ASSERT_EQ(lchown(tool.parent_path().c_str(), first.uid, first.gid), 0);
  ASSERT_EQ(lchown(tool.c_str(), first.uid, first.gid), 0);
  ASSERT_EQ(lchown((tool / "bin").c_str(), first.uid, first.gid), 0);
  host.clean();

  const UserIdentity second = assignment("https://github.com/acme/app");
  struct stat st {};
  ASSERT_EQ(stat((tool / "bin").c_str(), &st), 0) << "the same repository's next assignment gets the cache";
  EXPECT_EQ(st.st_uid, second.uid);
  host.clean();

  assignment("https://github.com/other/repo");
  EXPECT_FALSE(fs::exists(tool)) << "another repository's assignment gets nothing";
  host.clean();
  EXPECT_FALSE(fs::exists(base_ / "runner.caches"));
}

}  // namespace
}  // namespace runpool::agent
