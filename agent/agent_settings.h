// runpool-agent's configuration: one schema (agent_schema) read from the file user-data writes,
// RUNPOOL_* variables and flags (common/config.h), turned into typed AgentSettings with every value
// checked up front, so a bad value stops the agent at start with a message naming the key.
#pragma once

#include <string>
#include <vector>

#include "agent/job_cache.h"
#include "agent/tenant_users.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/settings_table.h"

namespace runpool::agent {

// The main loop's bounds (agent_loop.h), each under its configuration key.
struct LoopTimings {
  Duration poll_interval{std::chrono::seconds(1)};  // assignment_poll_interval
  Duration boot_grace{std::chrono::minutes(5)};
  Duration deadline_grace{std::chrono::minutes(10)};
  Duration table_unreachable_limit{std::chrono::minutes(10)};
  Duration restart_backoff{std::chrono::seconds(2)};  // listener_restart_backoff
  int max_restarts = 10;                              // listener_max_restarts
  Duration drain_signal_timeout{std::chrono::minutes(5)};
  Duration stock_idle_wait{std::chrono::seconds(60)};
  Duration drain_poll_wait{std::chrono::seconds(50)};
  Duration job_start_bound{std::chrono::minutes(5)};  // a job request with no Worker and no completion is over
  Duration job_completion_wait{std::chrono::seconds(30)};  // after the Worker's exit, for the completion line
  Duration config_sh_timeout{std::chrono::minutes(2)};
  int deregister_attempts = 5;  // config.sh remove runs per assignment, then the controller deletes the runner
  Duration cleanup_timeout{std::chrono::seconds(30)};
  Duration terminate_wait{std::chrono::minutes(2)};
};

struct AgentSettings {
  // Where the pool's state lives and how AWS is reached.
  std::string table;
  std::string pool;
  std::string region;             // "" = from IMDS
  std::string endpoint_dynamodb;  // "" = AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL / public
  std::string endpoint_ec2;
  std::string endpoint_sqs;
  std::string instance_role_id;  // AROA…; the record's key is "<role id>:<instance id>"
  std::string imds_endpoint;      // "" = AWS_EC2_METADATA_SERVICE_ENDPOINT / 169.254.169.254
  Duration aws_timeout{std::chrono::seconds(10)};
  int aws_max_attempts = 3;

  // The runner.
  std::string runner_root = "/opt/runpool/runner";  // may contain {instance_id}; expanded once the identity is known
  std::string runner_template;  // "" = none; copied into runner_root when it has no bin/Runner.Listener
  std::string job_users = "per-assignment";  // or "fixed": always runner_user
  UidRange job_uid_range{1000000000, 1099999999};
  std::string job_users_state = "/var/lib/runpool-agent/{instance_id}/job-users";  // may contain {instance_id}
  std::vector<std::string> clean_sweep_roots;  // may contain {instance_id}
  std::string job_privileges = "user";         // or "docker"
  std::string docker_socket = "/var/run/docker.sock";  // job_privileges = docker: the engine cleaned after each job
  Duration docker_timeout{std::chrono::minutes(2)};
  CacheScope job_cache_scope = CacheScope::kNone;
  std::vector<std::string> job_cache_dirs;     // relative to the runner root
  std::string runner_user = "runpool-runner";  // job_users = fixed
  bool drain_capable = false;  // ignored (kept so older configuration parses): the drain follows detection
  bool runner_disable_update = true;
  std::string runner_group;  // config.sh --runnergroup; "": the Default group
  std::string runner_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";  // PATH of the runner's processes
  bool job_imds_access = false;  // false: the runner user's packets to IMDS are rejected (job_imds_guard.h)

  // The operator's pre-run script (pre_run.h): run once per boot before the first assignment.
  std::string pre_run_script;  // "" = none
  Duration pre_run_timeout{std::chrono::minutes(10)};

  // Timing.
  Duration heartbeat_interval{std::chrono::seconds(30)};
  bool wake_queue = true;
  Duration idle_poll_interval{std::chrono::seconds(15)};
  Duration settle_poll_interval{std::chrono::milliseconds(100)};
  Duration settle_window{std::chrono::seconds(30)};
  Duration notice_poll_interval{std::chrono::seconds(5)};
  LoopTimings loop;  // the main loop's bounds, handed to it as they are

  // Metrics (docs/observability.md): EMF lines appended to metrics_file; "" = off.
  std::string metrics_file;
  std::string metrics_namespace = "runpool";
};

// Every key bound to its AgentSettings member (common/settings_table.h), in loading order.
const SettingsTable<AgentSettings>& agent_settings_table();
// The table's keys, with their type, default and help.
std::vector<KeySpec> agent_schema();

// Typed, validated settings. Throws ConfigError naming the key (and where its value came from).
AgentSettings load_agent_settings(const Config& config);

// runner_root with "{instance_id}" replaced.
std::string expand_instance_path(const std::string& path, const std::string& instance_id);

}  // namespace runpool::agent
