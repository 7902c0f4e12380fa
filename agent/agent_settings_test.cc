#include "agent/agent_settings.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

namespace runpool::agent {
namespace {

std::string error_of(const std::string& text) {
  Config c(agent_schema());
  try {
    c.merge_text(text, "agent.conf");
    load_agent_settings(c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

const std::string kMinimal = "table = runpool-state\npool = ci\n";

TEST(AgentSettings, RunnerGroupIsANameThatCannotReadAsAnOption) {
  Config c(agent_schema());
  c.merge_text(kMinimal + "runner_group = Linux GPU\n", "agent.conf");
  EXPECT_EQ(load_agent_settings(c).runner_group, "Linux GPU");
  for (const char* bad : {"--url", "-x", "a/b", "$(id)", "a;b"}) {
    EXPECT_NE(error_of(kMinimal + "runner_group = " + bad + "\n").find("runner_group"), std::string::npos) << bad;
  }
}

TEST(AgentSettings, DefaultsAreTheDocumentedOnes) {
  Config c(agent_schema());
  c.merge_text(kMinimal, "agent.conf");
  AgentSettings s = load_agent_settings(c);
  EXPECT_EQ(s.table, "runpool-state");
  EXPECT_EQ(s.pool, "ci");
  EXPECT_EQ(s.runner_user, "runpool-runner");
  EXPECT_FALSE(s.drain_capable);
  EXPECT_TRUE(s.runner_disable_update);
  EXPECT_EQ(s.heartbeat_interval, std::chrono::seconds(30));
  EXPECT_EQ(s.loop.poll_interval, std::chrono::seconds(1));
  EXPECT_EQ(s.notice_poll_interval, std::chrono::seconds(5));
  EXPECT_EQ(s.loop.boot_grace, std::chrono::minutes(5));
  EXPECT_EQ(s.loop.table_unreachable_limit, std::chrono::minutes(10));
  EXPECT_EQ(s.loop.restart_backoff, std::chrono::seconds(2));
  EXPECT_EQ(s.loop.max_restarts, 10);
  EXPECT_EQ(s.region, "");
  EXPECT_EQ(s.endpoint_dynamodb, "");
  EXPECT_EQ(s.imds_endpoint, "");
  EXPECT_EQ(s.runner_template, "");
  EXPECT_EQ(s.metrics_file, "") << "metrics are off unless asked for";
  EXPECT_EQ(s.metrics_namespace, "runpool");
  EXPECT_EQ(s.pre_run_script, "") << "no pre-run script unless asked for";
  EXPECT_EQ(s.pre_run_timeout, std::chrono::minutes(10));
  EXPECT_FALSE(s.job_imds_access) << "jobs are cut off from IMDS unless allowed";
}

TEST(AgentSettings, JobUsersArePerAssignmentByDefault) {
  Config c(agent_schema());
  c.merge_text(kMinimal, "agent.conf");
  AgentSettings s = load_agent_settings(c);
  EXPECT_EQ(s.job_users, "per-assignment");
  EXPECT_EQ(s.job_uid_range.first, 1000000000u);
  EXPECT_EQ(s.job_uid_range.last, 1099999999u);
  EXPECT_EQ(s.clean_sweep_roots, std::vector<std::string>{"/"}) << "every local filesystem";
  EXPECT_EQ(s.job_privileges, "user");
  EXPECT_EQ(s.job_users_state, "/var/lib/runpool-agent/{instance_id}/job-users");

  Config d(agent_schema());
  d.merge_text(kMinimal + "job_users = fixed\nclean_sweep_roots = /srv/runners  /tmp /dev/shm\njob_uid_range = 5-9\n",
               "agent.conf");
  s = load_agent_settings(d);
  EXPECT_EQ(s.job_users, "fixed");
  EXPECT_EQ(s.clean_sweep_roots, (std::vector<std::string>{"/srv/runners", "/tmp", "/dev/shm"}));
  EXPECT_EQ(s.job_uid_range.first, 5u);

  for (const auto& [text, key] : std::vector<std::pair<std::string, std::string>>{
           {"job_users = shared\n", "job_users"},
           {"job_uid_range = 0-10\n", "job_uid_range"},
           {"job_uid_range = 10\n", "job_uid_range"},
           {"clean_sweep_roots = tmp\n", "clean_sweep_roots"},
           {"clean_sweep_roots = /a/../b\n", "clean_sweep_roots"},
           {"clean_sweep_roots = \"\"\n", "clean_sweep_roots"},
           {"job_users_state = relative\n", "job_users_state"},
           {"job_privileges = root\n", "job_privileges"},
           {"job_privileges = docker\njob_users = fixed\n", "job_privileges"},
       }) {
    EXPECT_NE(error_of(kMinimal + text).find(key), std::string::npos) << text;
  }
  EXPECT_EQ(error_of(kMinimal + "job_privileges = docker\n"), "");
  EXPECT_EQ(error_of(kMinimal + "job_privileges = sudo\n"), "");
  EXPECT_EQ(s.job_cache_scope, CacheScope::kNone);
  EXPECT_EQ(error_of(kMinimal + "job_cache_scope = repository\njob_cache_dirs = _work/_tool _home/.cache/pip\n"), "");
  for (const char* bad : {"job_cache_scope = all\n", "job_cache_dirs = /opt/cache\n", "job_cache_dirs = _work/../x\n",
                          "job_cache_dirs = bin\n", "job_cache_scope = owner\njob_users = fixed\n"}) {
    EXPECT_NE(error_of(kMinimal + bad), "") << bad;
  }
}

TEST(AgentSettings, JobImdsAccess) {
  Config c(agent_schema());
  c.merge_text(kMinimal + "job_imds_access = true\n", "agent.conf");
  EXPECT_TRUE(load_agent_settings(c).job_imds_access);
}

TEST(AgentSettings, PreRunScript) {
  Config c(agent_schema());
  c.merge_text(kMinimal + "pre_run_script = /usr/local/sbin/prepare-instance\npre_run_timeout = 90s\n", "agent.conf");
  AgentSettings s = load_agent_settings(c);
  EXPECT_EQ(s.pre_run_script, "/usr/local/sbin/prepare-instance");
  EXPECT_EQ(s.pre_run_timeout, std::chrono::seconds(90));
}

TEST(AgentSettings, Metrics) {
  Config c(agent_schema());
  c.merge_text(kMinimal + "metrics_file = /var/log/runpool/metrics.emf\nmetrics_namespace = acme/ci\n", "agent.conf");
  AgentSettings s = load_agent_settings(c);
  EXPECT_EQ(s.metrics_file, "/var/log/runpool/metrics.emf");
  EXPECT_EQ(s.metrics_namespace, "acme/ci");
}

// drain_signal_timeout and config_sh_timeout were drain_timeout and registration_timeout, names
// runpoolctl gives other meanings: the former names are still read, the current ones win.
TEST(AgentSettings, FormerKeyNamesAreStillReadAndTheCurrentOnesWin) {
  Config old_names(agent_schema());
  old_names.merge_text(kMinimal + "drain_timeout = 4s\nregistration_timeout = 20s\n", "agent.conf");
  AgentSettings s = load_agent_settings(old_names);
  EXPECT_EQ(s.loop.drain_signal_timeout.count(), 4000);
  EXPECT_EQ(s.loop.config_sh_timeout.count(), 20000);
  Config both(agent_schema());
  both.merge_text(kMinimal + "drain_timeout = 4s\ndrain_signal_timeout = 7s\nregistration_timeout = 20s\n"
                             "config_sh_timeout = 30s\n",
                  "agent.conf");
  s = load_agent_settings(both);
  EXPECT_EQ(s.loop.drain_signal_timeout.count(), 7000);
  EXPECT_EQ(s.loop.config_sh_timeout.count(), 30000);
  Config none(agent_schema());
  none.merge_text(kMinimal, "agent.conf");
  EXPECT_EQ(load_agent_settings(none).loop.drain_signal_timeout, LoopTimings{}.drain_signal_timeout);
}

// A default is written once, in AgentSettings: what loading nothing gives is what AgentSettings{} holds.
TEST(AgentSettings, LoadingNothingGivesTheStructsDefaults) {
  Config c(agent_schema());
  c.merge_text(kMinimal, "agent.conf");
  const AgentSettings s = load_agent_settings(c);
  const AgentSettings untouched;
  const LoopTimings& a = s.loop;
  const LoopTimings& b = untouched.loop;
  EXPECT_EQ(a.poll_interval, b.poll_interval);
  EXPECT_EQ(a.boot_grace, b.boot_grace);
  EXPECT_EQ(a.deadline_grace, b.deadline_grace);
  EXPECT_EQ(a.table_unreachable_limit, b.table_unreachable_limit);
  EXPECT_EQ(a.restart_backoff, b.restart_backoff);
  EXPECT_EQ(a.max_restarts, b.max_restarts);
  EXPECT_EQ(a.drain_signal_timeout, b.drain_signal_timeout);
  EXPECT_EQ(a.stock_idle_wait, b.stock_idle_wait);
  EXPECT_EQ(a.drain_poll_wait, b.drain_poll_wait);
  EXPECT_EQ(a.job_start_bound, b.job_start_bound);
  EXPECT_EQ(a.config_sh_timeout, b.config_sh_timeout);
  EXPECT_EQ(a.deregister_attempts, b.deregister_attempts);
  EXPECT_EQ(a.cleanup_timeout, b.cleanup_timeout);
  EXPECT_EQ(a.terminate_wait, b.terminate_wait);
  EXPECT_EQ(s.runner_root, untouched.runner_root);
  EXPECT_EQ(s.job_users_state, untouched.job_users_state);
  EXPECT_EQ(s.runner_path, untouched.runner_path);
  EXPECT_EQ(s.docker_socket, untouched.docker_socket);
}

TEST(AgentSettings, EveryTimeoutIsConfigurable) {
  Config c(agent_schema());
  c.merge_text(kMinimal +
                   "heartbeat_interval = 200ms\nassignment_poll_interval = 100ms\nnotice_poll_interval = 100ms\n"
                   "boot_grace = 2s\ntable_unreachable_limit = 3s\nlistener_restart_backoff = 50ms\n"
                   "listener_max_restarts = 3\ndrain_signal_timeout = 4s\nstock_idle_wait = 1s\nconfig_sh_timeout = 20s\n"
                   "cleanup_timeout = 2s\nterminate_wait = 5s\naws_timeout = 2s\naws_max_attempts = 5\n"
                   "drain_capable = true\nrunner_root = /tmp/rp/{instance_id}/runner\nrunner_template = /opt/tpl\n",
               "agent.conf");
  AgentSettings s = load_agent_settings(c);
  EXPECT_EQ(s.heartbeat_interval.count(), 200);
  EXPECT_EQ(s.loop.poll_interval.count(), 100);
  EXPECT_EQ(s.notice_poll_interval.count(), 100);
  EXPECT_EQ(s.loop.boot_grace.count(), 2000);
  EXPECT_EQ(s.loop.table_unreachable_limit.count(), 3000);
  EXPECT_EQ(s.loop.restart_backoff.count(), 50);
  EXPECT_EQ(s.loop.max_restarts, 3);
  EXPECT_EQ(s.loop.drain_signal_timeout.count(), 4000);
  EXPECT_EQ(s.loop.stock_idle_wait.count(), 1000);
  EXPECT_EQ(s.loop.config_sh_timeout.count(), 20000);
  EXPECT_EQ(s.loop.cleanup_timeout.count(), 2000);
  EXPECT_EQ(s.loop.terminate_wait.count(), 5000);
  EXPECT_EQ(s.aws_timeout.count(), 2000);
  EXPECT_EQ(s.aws_max_attempts, 5);
  EXPECT_TRUE(s.drain_capable);
  EXPECT_EQ(expand_instance_path(s.runner_root, "i-0123"), "/tmp/rp/i-0123/runner");
}

TEST(AgentSettings, EnvironmentAndFlagsWinOverTheFile) {
  Config c(agent_schema());
  c.merge_text(kMinimal, "agent.conf");
  std::map<std::string, std::string> env{{"RUNPOOL_POOL", "from-env"}, {"RUNPOOL_HEARTBEAT_INTERVAL", "5s"}};
  c.merge_env([&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  c.set("heartbeat_interval", "7s", "--set");
  AgentSettings s = load_agent_settings(c);
  EXPECT_EQ(s.pool, "from-env");
  EXPECT_EQ(s.heartbeat_interval, std::chrono::seconds(7));
}

TEST(AgentSettings, BadValuesNameTheKeyAndWhereTheyCameFrom) {
  struct Case {
    std::string text;
    std::string key;
  };
  const std::vector<Case> cases = {
      {"pool = ci\n", "table"},
      {"table = t\npool = ci\n", "table"},
      {"table = runpool\n", "pool"},
      {"table = runpool\npool = has space\n", "pool"},
      {kMinimal + "runner_user = root\n", "runner_user"},
      {kMinimal + "runner_disable_update = false\n", "runner_disable_update"},
      {kMinimal + "runner_user = Bad User\n", "runner_user"},
      {kMinimal + "runner_user = 9lives\n", "runner_user"},
      {kMinimal + "runner_root = relative/path\n", "runner_root"},
      {kMinimal + "runner_root = /\n", "runner_root"},
      {kMinimal + "runner_root = /opt/../etc\n", "runner_root"},
      {kMinimal + "runner_root = /usr/local/runner\n", "runner_root"},
      {kMinimal + "runner_root = /etc\n", "runner_root"},
      {kMinimal + "runner_root = /opt/./x\n", "runner_root"},
      {kMinimal + "runner_template = tpl\n", "runner_template"},
      {kMinimal + "runner_path = bin\n", "runner_path"},
      {kMinimal + "endpoint_dynamodb = localhost:8000\n", "endpoint_dynamodb"},
      {kMinimal + "endpoint_ec2 = ftp://x\n", "endpoint_ec2"},
      {kMinimal + "imds_endpoint = 169.254.169.254\n", "imds_endpoint"},
      {kMinimal + "heartbeat_interval = soon\n", "heartbeat_interval"},
      {kMinimal + "heartbeat_interval = 1ms\n", "heartbeat_interval"},
      {kMinimal + "assignment_poll_interval = 0\n", "assignment_poll_interval"},
      {kMinimal + "listener_max_restarts = -1\n", "listener_max_restarts"},
      {kMinimal + "drain_capable = maybe\n", "drain_capable"},
      {kMinimal + "job_imds_access = blocked\n", "job_imds_access"},
      {kMinimal + "aws_max_attempts = 0\n", "aws_max_attempts"},
      {kMinimal + "heartbeat_interval = 60s\ntable_unreachable_limit = 90s\n", "table_unreachable_limit"},
      {kMinimal + "assignment_poll_interval = 1m\nboot_grace = 90s\n", "boot_grace"},
      {kMinimal + "no_such_key = 1\n", "no_such_key"},
      {kMinimal + "metrics_file = metrics.emf\n", "metrics_file"},
      {kMinimal + "metrics_file = /var/log/../x\n", "metrics_file"},
      {kMinimal + "metrics_namespace = \n", "metrics_namespace"},
      {kMinimal + "pre_run_script = prepare.sh\n", "pre_run_script"},
      {kMinimal + "pre_run_script = /opt/../tmp/prepare.sh\n", "pre_run_script"},
      {kMinimal + "pre_run_script = /\n", "pre_run_script"},
      {kMinimal + "pre_run_timeout = 500ms\n", "pre_run_timeout"},
      {kMinimal + "pre_run_timeout = 3h\n", "pre_run_timeout"},
      {kMinimal + "pre_run_timeout = later\n", "pre_run_timeout"},
      {kMinimal + "metrics_namespace = " + std::string(256, 'n') + "\n", "metrics_namespace"},
  };
  for (const auto& c : cases) {
    std::string err = error_of(c.text);
    EXPECT_NE(err.find(c.key), std::string::npos) << c.text << " → " << err;
  }
  EXPECT_NE(error_of(kMinimal + "runner_user = root\n").find("agent.conf:3"), std::string::npos);
  EXPECT_EQ(error_of(kMinimal), "");
}

TEST(AgentSettings, SchemaDocumentsEveryKey) {
  for (const auto& k : agent_schema()) {
    EXPECT_FALSE(k.help.empty()) << k.key;
    // Every duration has a default, but a former name (its current key's default applies).
    if (k.type == KeyType::kDuration && k.help.rfind("the former name of ", 0) != 0) {
      EXPECT_FALSE(k.default_value.empty()) << k.key;
    }
  }
  Config c(agent_schema());
  EXPECT_NE(c.reference_markdown().find("RUNPOOL_TABLE_UNREACHABLE_LIMIT"), std::string::npos);
}

}  // namespace
}  // namespace runpool::agent

namespace runpool::agent {
namespace {

// docs/agent.md carries the generated reference (`runpool-agent --config-reference`) verbatim,
// so the documentation cannot drift from the schema.
TEST(AgentSettings, TheDocsCarryTheGeneratedReference) {
  std::ifstream in(std::string(RUNPOOL_SOURCE_DIR) + "/docs/agent.md");
  ASSERT_TRUE(in) << "docs/agent.md";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find(Config(agent_schema()).reference_markdown()), std::string::npos)
      << "docs/agent.md is out of date: replace its key table with `runpool-agent --config-reference`";
}

}  // namespace
}  // namespace runpool::agent
