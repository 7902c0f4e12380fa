#include "agent/agent_settings.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "common/cloud_init/agent_key_bounds.h"
#include "common/github/endpoint.h"
#include "common/pool/record_key.h"
#include "common/pool/reuse_policy.h"

namespace runpool::agent {
namespace {

constexpr Duration kMs{1};
constexpr Duration kSec{1000};
constexpr Duration kMin = 60 * kSec;
constexpr Duration kHour = 60 * kMin;
constexpr Duration kDay = 24 * kHour;

bool is_name(const std::string& s, size_t max) {
  return !s.empty() && s.size() <= max && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
         });
}

// POSIX-portable user names (useradd's default rule): [a-z_][a-z0-9_-]*, at most 32.
bool is_user_name(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  if (!(std::islower(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_' ||
           c == '-';
  });
}

// Absolute, not "/", no "." or ".." components, no empty components but a trailing slash.
bool is_safe_absolute_path(const std::string& p) {
  if (p.size() < 2 || p[0] != '/') return false;
  size_t start = 1;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    std::string part = p.substr(start, end - start);
    if (part == "." || part == "..") return false;
    if (part.empty() && end != p.size()) return false;
    start = end + 1;
  }
  return true;
}

bool is_endpoint(const std::string& s) {
  return s.empty() || s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0;
}

}  // namespace

namespace {

using Row = SettingsRow<AgentSettings>;
using S = AgentSettings;

Row endpoint_row(const char* key, std::string S::*member, std::string help) {
  return checked<S>(string_row(key, member, std::move(help)), [key, member](const Config& c, S& s) {
    if (!is_endpoint(s.*member)) c.reject(key, "must be an http:// or https:// URL");
  });
}

// An absolute path without . or .. parts, or empty.
Row path_row(const char* key, std::string S::*member, std::string help) {
  return checked<S>(string_row(key, member, std::move(help)), [key, member](const Config& c, S& s) {
    if (!(s.*member).empty() && !is_safe_absolute_path(s.*member)) {
      c.reject(key, "must be an absolute path without . or .. parts");
    }
  });
}

template <class At>
Row loop_duration(const char* key, At at, std::string help, Duration min, Duration max) {
  return duration_row_at<S>(key, at, std::move(help), min, max);
}

std::vector<Row> make_agent_table() {
  return {
      checked<S>(string_row("table", &S::table, "the DynamoDB state table (required)"),
                 [](const Config& c, S& s) {
                   if (s.table.size() < 3 || s.table.size() > 255) c.reject("table", "must be set (3 to 255 characters)");
                 }),
      checked<S>(string_row("pool", &S::pool, "the pool's name: part of the runner's name (required)"),
                 [](const Config& c, S& s) {
                   if (!is_name(s.pool, 64)) c.reject("pool", "must be set: letters, digits, '-' and '_', at most 64");
                 }),
      checked<S>(string_row("instance_role_id", &S::instance_role_id,
                            "the unique id (AROA…) of the instance's role; the record is read and written under "
                            "\"<role id>:<instance id>\", the caller id AWS gives this instance's requests (required "
                            "to run; runpoolctl writes it)"),
                 [](const Config& c, S& s) {
                   if (!s.instance_role_id.empty() && !pool::is_role_unique_id(s.instance_role_id)) {
                     c.reject("instance_role_id",
                              "is not a role's unique id (AROA followed by capital letters and digits)");
                   }
                 }),
      string_row("region", &S::region, "AWS region; empty: the instance's region from IMDS"),
      endpoint_row("endpoint_dynamodb", &S::endpoint_dynamodb,
                   "DynamoDB endpoint URL; empty: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, else AWS's"),
      endpoint_row("endpoint_ec2", &S::endpoint_ec2,
                   "EC2 endpoint URL; empty: AWS_ENDPOINT_URL_EC2, AWS_ENDPOINT_URL, else AWS's"),
      endpoint_row("endpoint_sqs", &S::endpoint_sqs,
                   "SQS endpoint URL (the wake-up queue); empty: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL, else AWS's"),
      endpoint_row("imds_endpoint", &S::imds_endpoint,
                   "IMDS URL; empty: AWS_EC2_METADATA_SERVICE_ENDPOINT, else http://169.254.169.254"),
      duration_row("aws_timeout", &S::aws_timeout, "timeout of one AWS request", 100 * kMs, 5 * kMin),
      int_row("aws_max_attempts", &S::aws_max_attempts, "attempts per AWS call (first one included)", 1, 20),
      checked<S>(string_row("runner_root", &S::runner_root,
                            "the runner's installation directory; {instance_id} is replaced by the instance's id"),
                 [](const Config& c, S& s) {
                   if (!is_safe_absolute_path(expand_instance_path(s.runner_root, "i-0"))) {
                     c.reject("runner_root", "must be an absolute path other than / without . or .. parts");
                   }
                   // The packaged unit makes the first three read-only for the agent and the runner; /etc is no
                   // place for it.
                   for (const char* system : {"/usr", "/boot", "/efi", "/etc"}) {
                     const std::string dir = system;
                     if (s.runner_root == dir || s.runner_root.rfind(dir + "/", 0) == 0) {
                       c.reject("runner_root", "must not be under " + dir + " (read-only for the agent's systemd unit)");
                     }
                   }
                 }),
      path_row("runner_template", &S::runner_template,
               "a runner installation copied into runner_root when it has no bin/Runner.Listener; empty: none"),
      checked<S>(string_row("job_users", &S::job_users,
                            "who the runner and its jobs run as: per-assignment = a new unprivileged user and group for "
                            "every assignment (uids from job_uid_range, never reused on this instance), whose every "
                            "process and file is removed when the assignment ends; fixed = always runner_user (one "
                            "trust domain: what a job leaves outside the runner root, the next job finds)"),
                 [](const Config& c, S& s) {
                   if (s.job_users != "per-assignment" && s.job_users != "fixed") {
                     c.reject("job_users", "must be per-assignment or fixed");
                   }
                 }),
      {{"job_uid_range", KeyType::kString, "1000000000-1099999999",
        "per-assignment job users: their uids and gids (FIRST-LAST), which no other user or file of the image may "
        "have"},
       [](const Config& c, S& s) {
         if (auto range = parse_uid_range(c.get_string("job_uid_range"))) {
           s.job_uid_range = *range;
         } else {
           c.reject("job_uid_range", "must be FIRST-LAST, uids from 1 to 2147483646, FIRST not above LAST");
         }
       }},
      checked<S>(string_row("job_users_state", &S::job_users_state,
                            "per-assignment job users: the file that keeps the next uid and the user in place across "
                            "agent restarts; {instance_id} is replaced by the instance's id (an image made from an "
                            "instance carries no state of it)"),
                 [](const Config& c, S& s) {
                   if (!is_safe_absolute_path(expand_instance_path(s.job_users_state, "i-0"))) {
                     c.reject("job_users_state", "must be an absolute path without . or .. parts");
                   }
                 }),
      {{"clean_sweep_roots", KeyType::kString, "/",
        "per-assignment job users: where the end of an assignment looks for the job user's files (space-separated "
        "absolute paths; every local, writable filesystem mounted at or under them is walked, the runner root "
        "always); narrowing it leaves what a job wrote elsewhere for the next"},
       [](const Config& c, S& s) {
         std::istringstream roots(c.get_string("clean_sweep_roots"));
         for (std::string r; roots >> r;) {
           if (r != "/" && !is_safe_absolute_path(expand_instance_path(r, "i-0"))) {
             c.reject("clean_sweep_roots", "must be absolute paths without . or .. parts");
           }
           s.clean_sweep_roots.push_back(r);
         }
         if (s.clean_sweep_roots.empty()) c.reject("clean_sweep_roots", "must name at least one path (/: everywhere)");
       }},
      {{"job_cache_scope", KeyType::kString, "none",
        "per-assignment job users: keep job_cache_dirs for the next assignment of the same repository (repository) "
        "or owner (owner), made root's in between; another scope's assignment gets none and they are deleted; none: "
        "every assignment starts without (a cache shared within a scope is shared by every workflow and branch "
        "there)"},
       [](const Config& c, S& s) {
         if (auto scope = parse_cache_scope(c.get_string("job_cache_scope"))) {
           s.job_cache_scope = *scope;
         } else {
           c.reject("job_cache_scope", "must be none, repository or owner");
         }
         if (s.job_cache_scope != CacheScope::kNone && s.job_users != "per-assignment") {
           c.reject("job_cache_scope", "needs job_users = per-assignment");
         }
       }},
      {{"job_cache_dirs", KeyType::kString, "_work/_tool",
        "the directories job_cache_scope keeps (space-separated, relative to the runner root, under _work/ or "
        "_home/)"},
       [](const Config& c, S& s) {
         std::istringstream dirs(c.get_string("job_cache_dirs"));
         for (std::string d; dirs >> d;) {
           const bool under = d.rfind("_work/", 0) == 0 || d.rfind("_home/", 0) == 0;
           if (!under || d.size() <= 6 || !is_safe_absolute_path("/" + d)) {
             c.reject("job_cache_dirs", "must be relative paths under _work/ or _home/ without . or .. parts");
           }
           s.job_cache_dirs.push_back(d);
         }
       }},
      checked<S>(string_row("job_privileges", &S::job_privileges,
                            "what a job may do beyond its own files when its instance's record does not say "
                            "(runpoolctl records each class's): user = nothing; docker = the job user joins the docker "
                            "group (root on this machine in effect: the engine's state is cleaned after each "
                            "assignment, what the job does as root through it is not); sudo = the job user may become "
                            "root through a sudoers drop-in of its own, removed after the assignment (root can change "
                            "anything: no cleaning vouches for the instance after it)"),
                 [](const Config& c, S& s) {
                   if (!pool::parse_job_privileges(s.job_privileges)) {
                     c.reject("job_privileges", "must be user, docker or sudo");
                   }
                   if (s.job_privileges != "user" && s.job_users != "per-assignment") {
                     c.reject("job_privileges", "needs job_users = per-assignment");
                   }
                 }),
      checked<S>(string_row("docker_socket", &S::docker_socket,
                            "with job_privileges set to docker: the Docker engine's Unix socket, through which the "
                            "engine is cleaned after every assignment (what the job made removed, the tags it moved "
                            "put back, the rest verified unchanged)"),
                 [](const Config& c, S& s) {
                   if (s.docker_socket.empty() || s.docker_socket[0] != '/') {
                     c.reject("docker_socket", "must be an absolute path");
                   }
                 }),
      duration_row("docker_timeout", &S::docker_timeout,
                   "with job_privileges set to docker: the longest one request to the Docker engine may take while "
                   "cleaning (removing a large image takes a while)",
                   kSec, kHour),
      checked<S>(string_row("runner_user", &S::runner_user,
                            "with job_users set to fixed: the unprivileged user the runner runs as (must exist; never "
                            "root)"),
                 [](const Config& c, S& s) {
                   if (!is_user_name(s.runner_user)) c.reject("runner_user", "is not a valid user name");
                   if (s.runner_user == "root") c.reject("runner_user", "must not be root: the runner runs unprivileged");
                 }),
      bool_row("drain_capable", &S::drain_capable,
               "ignored, kept so older configuration parses: how a runner drains is detected from "
               "`bin/Runner.Listener run --help`, never configured"),
      checked<S>(bool_row("runner_disable_update", &S::runner_disable_update,
                          "configure the runner with --disableupdate: the image pins its version (false is refused: "
                          "the runner's self-update rewrites bin/, which no job may be able to change for the next "
                          "tenant)"),
                 [](const Config& c, S& s) {
                   if (s.runner_disable_update) return;
                   // update.sh runs as the runner user and swaps bin/ and externals/: a root that allowed it
                   // would let a job replace the runner the next tenant's job runs in. Versions rotate with
                   // the image instead.
                   c.reject("runner_disable_update",
                            "must be true: a runner that updates itself needs its bin/ writable by the runner user, "
                            "so one job could replace the runner for the next; pin the version in the image and roll "
                            "images (runpoolctl's max_instance_age and retire --runner-version)");
                 }),
      checked<S>(string_row("runner_group", &S::runner_group,
                            "the runner group to register in (config.sh --runnergroup; organization or enterprise "
                            "runners); empty: the Default group"),
                 [](const Config& c, S& s) {
                   if (!s.runner_group.empty() && !github::valid_runner_group(s.runner_group)) {
                     c.reject("runner_group",
                              "letters, digits, spaces and - _ . only, starting with a letter or digit, at most 100");
                   }
                 }),
      checked<S>(string_row("runner_path", &S::runner_path, "PATH of the runner's processes"),
                 [](const Config& c, S& s) {
                   if (s.runner_path.empty() || s.runner_path[0] != '/') {
                     c.reject("runner_path", "must be a PATH of absolute directories");
                   }
                 }),
      bool_row("job_imds_access", &S::job_imds_access,
               "let the runner's jobs reach IMDS and so the instance role's credentials; false: an nftables rule "
               "rejects every non-root uid's packets to 169.254.169.254 and fd00:ec2::254 (needs nft; the agent, "
               "root, keeps its access)"),
      path_row("pre_run_script", &S::pre_run_script,
               "an executable the agent runs as root once per boot before it takes its first assignment (mount disks, "
               "warm caches); if it fails or times out the instance serves nothing and is replaced; empty: none"),
      duration_row("pre_run_timeout", &S::pre_run_timeout,
                   "the pre-run script's bound: its whole process group is killed after this long, which counts as a "
                   "failure",
                   kSec, 2 * kHour),
      duration_row("heartbeat_interval", &S::heartbeat_interval, "how often the agent writes its heartbeat",
                   cloud_init::kHeartbeatIntervalBounds.min, cloud_init::kHeartbeatIntervalBounds.max),
      loop_duration("assignment_poll_interval", [](S& s) -> Duration& { return s.loop.poll_interval; },
                    "how often the agent reads its record while it serves an assignment, and while idle without a "
                    "wake-up queue",
                    cloud_init::kAssignmentPollIntervalBounds.min, cloud_init::kAssignmentPollIntervalBounds.max),
      bool_row("wake_queue", &S::wake_queue,
               "long-poll the SQS queue runpoolctl made for this instance at launch (<pool>-wake-<instance id>) and "
               "signals after a claim or a drain request, so an idle agent reads its record at once"),
      duration_row("idle_poll_interval", &S::idle_poll_interval,
                   "how often an idle agent whose wake-up queue works reads its record anyway (a lost wake-up costs at "
                   "most this)",
                   20 * kMs, kMin),
      duration_row("settle_poll_interval", &S::settle_poll_interval,
                   "how often the main loop ticks while an assignment starts or ends (registering, draining, "
                   "cleaning): its own steps go at once; the record is read only at a wake-up or the usual interval",
                   10 * kMs, 5 * kMin),
      duration_row("settle_window", &S::settle_window,
                   "how long a start or end of an assignment is polled at settle_poll_interval before "
                   "assignment_poll_interval",
                   Duration{0}, kHour),
      duration_row("notice_poll_interval", &S::notice_poll_interval,
                   "how often IMDS is asked for spot and rebalance notices", 20 * kMs, 5 * kMin),
      loop_duration("boot_grace", [](S& s) -> Duration& { return s.loop.boot_grace; },
                    "no record for this instance this long after start: terminate it", 100 * kMs, kDay),
      loop_duration("deadline_grace", [](S& s) -> Duration& { return s.loop.deadline_grace; },
                    "how long past its record's deadline the agent leaves retiring the instance to the controller "
                    "(refresh) before terminating it itself",
                    Duration{0}, kDay),
      loop_duration("table_unreachable_limit", [](S& s) -> Duration& { return s.loop.table_unreachable_limit; },
                    "the table unreachable this long: terminate the instance", 100 * kMs, kDay),
      loop_duration("listener_restart_backoff", [](S& s) -> Duration& { return s.loop.restart_backoff; },
                    "first wait before restarting a Listener (doubles, at most 32x)", Duration{0}, 10 * kMin),
      int_row_at<S>("listener_max_restarts", [](S& s) -> int& { return s.loop.max_restarts; },
                    "Listener restarts per assignment before it counts as failed", 0, 1000),
      loop_duration("drain_signal_timeout", [](S& s) -> Duration& { return s.loop.drain_signal_timeout; },
                    "a runner given its own drain signal and idle this long without exiting: fall back to the stock "
                    "drain; also the job's bound after a deadline without a hard deadline",
                    50 * kMs, kDay),
      former_duration_name<S>("drain_timeout", "drain_signal_timeout",
                              [](S& s) -> Duration& { return s.loop.drain_signal_timeout; }, 50 * kMs, kDay),
      loop_duration("drain_poll_wait", [](S& s) -> Duration& { return s.loop.drain_poll_wait; },
                    "stock drain: how long to wait after the drain request (the controller has removed the runner's "
                    "labels) before deregistering an idle runner, so a job already dispatched to its open long poll "
                    "arrives; one long poll of the runner (about 50 s on GitHub)",
                    Duration{0}, kHour),
      loop_duration("stock_idle_wait", [](S& s) -> Duration& { return s.loop.stock_idle_wait; },
                    "stock runner: how long after deregistration to wait for the Listener to exit by itself before "
                    "SIGINT",
                    Duration{0}, kHour),
      loop_duration("job_start_bound", [](S& s) -> Duration& { return s.loop.job_start_bound; },
                    "a job request that shows no Worker and no completion this long after it arrived is over (the "
                    "runner dropped it: acquire refused, first renew failed, cancelled before it)",
                    kSec, kHour),
      loop_duration("job_completion_wait", [](S& s) -> Duration& { return s.loop.job_completion_wait; },
                    "after a job's Worker exits, how long the job stays in hand waiting for the runner's completion "
                    "line (the Listener prints it after the Worker's exit; for a crashed Worker, after sending its output to "
                    "GitHub)",
                    Duration{0}, kHour),
      loop_duration("config_sh_timeout", [](S& s) -> Duration& { return s.loop.config_sh_timeout; },
                    "bound on config.sh (configure and remove) and their retries", 100 * kMs, kHour),
      former_duration_name<S>("registration_timeout", "config_sh_timeout",
                              [](S& s) -> Duration& { return s.loop.config_sh_timeout; }, 100 * kMs, kHour),
      int_row_at<S>("deregister_attempts", [](S& s) -> int& { return s.loop.deregister_attempts; },
                    "config.sh remove runs per assignment before the runner is left registered for the controller to "
                    "delete",
                    0, 100),
      loop_duration("cleanup_timeout", [](S& s) -> Duration& { return s.loop.cleanup_timeout; },
                    "SIGTERM to SIGKILL for leftover processes; also SIGINT to SIGKILL for the Listener", 50 * kMs,
                    kHour),
      loop_duration("terminate_wait", [](S& s) -> Duration& { return s.loop.terminate_wait; },
                    "after TerminateInstances, how long to wait before shutting the OS down", 50 * kMs, kHour),
      path_row("metrics_file", &S::metrics_file,
               "append CloudWatch embedded-metric-format lines (registration, jobs, drains, cleaning, "
               "self-termination) to this file for the CloudWatch agent to ship; empty: no metrics"),
      checked<S>(string_row("metrics_namespace", &S::metrics_namespace, "the CloudWatch namespace of the agent's metrics"),
                 [](const Config& c, S& s) {
                   if (s.metrics_namespace.empty() || s.metrics_namespace.size() > 255) {
                     c.reject("metrics_namespace", "must be 1-255 characters");
                   }
                 }),
  };
}

}  // namespace

const SettingsTable<AgentSettings>& agent_settings_table() {
  static const SettingsTable<AgentSettings> table = make_agent_table();
  return table;
}

std::vector<KeySpec> agent_schema() { return schema_of(agent_settings_table()); }

AgentSettings load_agent_settings(const Config& c) {
  AgentSettings s;
  load_rows(agent_settings_table(), c, s);
  // Relations: a short table outage (a couple of heartbeats) must never terminate an instance,
  // and the agent must look at its record at least once within the boot grace.
  if (s.loop.table_unreachable_limit < 2 * s.heartbeat_interval) {
    c.reject("table_unreachable_limit", "must be at least two heartbeat_interval (" +
                                            format_duration(s.heartbeat_interval) + ")");
  }
  if (s.loop.boot_grace < 2 * s.loop.poll_interval) {
    c.reject("boot_grace", "must be at least two assignment_poll_interval (" + format_duration(s.loop.poll_interval) + ")");
  }
  return s;
}

std::string expand_instance_path(const std::string& path, const std::string& instance_id) {
  static const std::string kToken = "{instance_id}";
  std::string out = path;
  for (size_t pos = out.find(kToken); pos != std::string::npos; pos = out.find(kToken, pos + instance_id.size())) {
    out.replace(pos, kToken.size(), instance_id);
  }
  return out;
}

}  // namespace runpool::agent
