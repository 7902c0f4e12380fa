// The runner scale-set API's values (GitHub's Actions service, "AS"), as typed C++: scale sets,
// runner groups, message sessions, the job messages a session's queue delivers, JIT configs.
// A scale set is how GitHub hands a controller demand: jobs for the set's labels arrive as
// messages, the controller acquires them and starts just-in-time runners to run them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/secret.h"

namespace runpool::github {

struct ScaleSetLabel {
  std::string type = "System";
  std::string name;
  bool operator==(const ScaleSetLabel&) const = default;
};

// The set's "RunnerSetting" (the service spells it with a capital R).
struct ScaleSetRunnerSetting {
  bool ephemeral = false;
  bool is_elastic = false;
  bool disable_update = false;
};

// Counts as the service saw them when it answered. total_assigned_jobs (acquired + running) is
// the demand a controller scales to.
struct ScaleSetStatistics {
  int64_t total_available_jobs = 0;  // offered, not acquired
  int64_t total_acquired_jobs = 0;   // acquired, no runner started them yet
  int64_t total_assigned_jobs = 0;
  int64_t total_running_jobs = 0;
  int64_t total_registered_runners = 0;
  int64_t total_busy_runners = 0;
  int64_t total_idle_runners = 0;
  bool operator==(const ScaleSetStatistics&) const = default;
};

struct ScaleSet {
  int64_t id = 0;
  std::string name;
  int64_t runner_group_id = 0;
  std::string runner_group_name;
  std::vector<ScaleSetLabel> labels;
  ScaleSetRunnerSetting runner_setting;
  std::optional<WallTime> created_on;
  std::string runner_jit_config_url;
  std::optional<ScaleSetStatistics> statistics;
};

// What create_scale_set sends. No labels: the set's name is its one label.
struct ScaleSetSpec {
  std::string name;
  int64_t runner_group_id = 1;  // the Default group
  std::vector<ScaleSetLabel> labels;
  bool disable_update = true;  // JIT runners must not update themselves mid-job
  bool ephemeral = false;      // sent only when true (older clients did)
};

// A partial update: only what is set is sent, and only that changes.
struct ScaleSetUpdate {
  std::optional<std::string> name;
  std::optional<int64_t> runner_group_id;
  std::optional<std::vector<ScaleSetLabel>> labels;
  std::optional<bool> disable_update;
  std::optional<bool> ephemeral;
};

struct RunnerGroup {
  int64_t id = 0;
  std::string name;
  int64_t size = 0;
  bool is_default = false;
};

// A message session: the set's one live listener. Its queue token authorizes the queue calls
// (poll, acknowledge, acquire) and is replaced by a refresh.
struct MessageSessionInfo {
  std::string session_id;
  std::string owner_name;
  std::string message_queue_url;
  Secret message_queue_token;
  std::optional<ScaleSetStatistics> statistics;
};

enum class JobMessageType { kJobAvailable, kJobAssigned, kJobStarted, kJobCompleted };
std::string_view to_string(JobMessageType type);

// One job event. Times the service leaves unset (Go's zero time) are nullopt.
struct JobMessage {
  JobMessageType type = JobMessageType::kJobAvailable;
  int64_t runner_request_id = 0;  // what acquire_jobs takes
  std::string repository_name;
  std::string owner_name;
  std::string job_id;
  std::string job_workflow_ref;  // owner/repo/.github/workflows/f.yml@refs/heads/main
  std::string job_display_name;
  int64_t workflow_run_id = 0;
  std::string event_name;
  std::vector<std::string> request_labels;
  std::optional<WallTime> queue_time, scale_set_assign_time, runner_assign_time, finish_time;
  std::string acquire_job_url;  // JobAvailable
  int64_t runner_id = 0;        // JobStarted, JobCompleted
  std::string runner_name;      // JobStarted, JobCompleted
  std::string result;           // JobCompleted: "succeeded", "failed", "canceled", …
};

// One envelope from the queue: acknowledge it (delete_message) once handled, else it comes again.
struct ScaleSetMessage {
  int64_t message_id = 0;
  std::optional<ScaleSetStatistics> statistics;
  std::vector<JobMessage> jobs;
  int skipped = 0;  // job messages of types this client does not know
};

struct ScaleSetRunner {
  int64_t id = 0;
  std::string name;
  int64_t scale_set_id = 0;  // 0: a runner of no set
};

struct ScaleSetJitConfig {
  ScaleSetRunner runner;
  Secret encoded_jit_config;  // for ACTIONS_RUNNER_INPUT_JITCONFIG; single use
};

}  // namespace runpool::github
