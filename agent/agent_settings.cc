#include "agent/agent_settings.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "common/github/endpoint.h"
#include "common/pool/record_key.h"
#include "common/pool/reuse_policy.h"

namespace runpool::agent {
namespace {

constexpr int64_t kSec = 1000;
constexpr int64_t kMin = 60 * kSec;
constexpr int64_t kHour = 60 * kMin;
constexpr int64_t kDay = 24 * kHour;

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

std::vector<KeySpec> agent_schema() {
  return {
      {"table", KeyType::kString, "", "the DynamoDB state table (required)"},
      {"pool", KeyType::kString, "", "the pool's name: part of the runner's name (required)"},
      {"instance_role_id", KeyType::kString, "",
       "the unique id (AROA…) of the instance's role; the record is read and written under \"<role id>:<instance "
       "id>\", the caller id AWS gives this instance's requests (required to run; runpoolctl writes it)"},
      {"region", KeyType::kString, "", "AWS region; empty: the instance's region from IMDS"},
      {"endpoint_dynamodb", KeyType::kString, "", "DynamoDB endpoint URL; empty: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, else AWS's"},
      {"endpoint_ec2", KeyType::kString, "", "EC2 endpoint URL; empty: AWS_ENDPOINT_URL_EC2, AWS_ENDPOINT_URL, else AWS's"},
      {"endpoint_sqs", KeyType::kString, "", "SQS endpoint URL (the wake-up queue); empty: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL, else AWS's"},
      {"imds_endpoint", KeyType::kString, "", "IMDS URL; empty: AWS_EC2_METADATA_SERVICE_ENDPOINT, else http://169.254.169.254"},
      {"aws_timeout", KeyType::kDuration, "10s", "timeout of one AWS request", 100, 5 * kMin},
      {"aws_max_attempts", KeyType::kInt, "3", "attempts per AWS call (first one included)", 1, 20},
      {"runner_root", KeyType::kString, "/opt/runpool/runner",
       "the runner's installation directory; {instance_id} is replaced by the instance's id"},
      {"runner_template", KeyType::kString, "",
       "a runner installation copied into runner_root when it has no bin/Runner.Listener; empty: none"},
      {"job_users", KeyType::kString, "per-assignment",
       "who the runner and its jobs run as: per-assignment = a new unprivileged user and group for every assignment "
       "(uids from job_uid_range, never reused on this instance), whose every process and file is removed when the "
       "assignment ends; fixed = always runner_user (one trust domain: what a job leaves outside the runner root, the "
       "next job finds)"},
      {"job_uid_range", KeyType::kString, "1000000000-1099999999",
       "per-assignment job users: their uids and gids (FIRST-LAST), which no other user or file of the image may have"},
      {"job_users_state", KeyType::kString, "/var/lib/runpool-agent/{instance_id}/job-users",
       "per-assignment job users: the file that keeps the next uid and the user in place across agent restarts; "
       "{instance_id} is replaced by the instance's id (an image made from an instance carries no state of it)"},
      {"clean_sweep_roots", KeyType::kString, "/",
       "per-assignment job users: where the end of an assignment looks for the job user's files (space-separated "
       "absolute paths; every local, writable filesystem mounted at or under them is walked, the runner root "
       "always); narrowing it leaves what a job wrote elsewhere for the next"},
      {"job_cache_scope", KeyType::kString, "none",
       "per-assignment job users: keep job_cache_dirs for the next assignment of the same repository (repository) or "
       "owner (owner), made root's in between; another scope's assignment gets none and they are deleted; none: every "
       "assignment starts without (a cache shared within a scope is shared by every workflow and branch there)"},
      {"job_cache_dirs", KeyType::kString, "_work/_tool",
       "the directories job_cache_scope keeps (space-separated, relative to the runner root, under _work/ or _home/)"},
      {"job_privileges", KeyType::kString, "user",
       "what a job may do beyond its own files when its instance's record does not say (runpoolctl records each "
       "class's): user = nothing; docker = the job user joins the docker group (root "
       "on this machine in effect: the engine's state is cleaned after each assignment, what the job does as root "
       "through it is not); sudo = the job user may become root through a sudoers drop-in of its own, removed "
       "after the assignment (root can change anything: no cleaning vouches for the instance after it)"},
      {"docker_socket", KeyType::kString, "/var/run/docker.sock",
       "with job_privileges set to docker: the Docker engine's Unix socket, through which the engine is cleaned after "
       "every assignment (what the job made removed, the tags it moved put back, the rest verified unchanged)"},
      {"docker_timeout", KeyType::kDuration, "2m",
       "with job_privileges set to docker: the longest one request to the Docker engine may take while cleaning "
       "(removing a large image takes a while)", 1000, kHour},
      {"runner_user", KeyType::kString, "runpool-runner",
       "with job_users set to fixed: the unprivileged user the runner runs as (must exist; never root)"},
      {"drain_capable", KeyType::kBool, "false",
       "ignored, kept so older configuration parses: how a runner drains is detected from `bin/Runner.Listener run "
       "--help`, never configured"},
      {"runner_disable_update", KeyType::kBool, "true",
       "configure the runner with --disableupdate: the image pins its version (false is refused: the runner's "
       "self-update rewrites bin/, which no job may be able to change for the next tenant)"},
      {"runner_group", KeyType::kString, "",
       "the runner group to register in (config.sh --runnergroup; organization or enterprise runners); empty: the Default group"},
      {"runner_path", KeyType::kString, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
       "PATH of the runner's processes"},
      {"job_imds_access", KeyType::kBool, "false",
       "let the runner's jobs reach IMDS and so the instance role's credentials; false: an nftables rule rejects "
       "the runner user's packets to 169.254.169.254 and fd00:ec2::254 (needs nft; the agent keeps its access)"},
      {"pre_run_script", KeyType::kString, "",
       "an executable the agent runs as root once per boot before it takes its first assignment (mount disks, warm "
       "caches); if it fails or times out the instance serves nothing and is replaced; empty: none"},
      {"pre_run_timeout", KeyType::kDuration, "10m",
       "the pre-run script's bound: its whole process group is killed after this long, which counts as a failure", kSec,
       2 * kHour},
      {"heartbeat_interval", KeyType::kDuration, "30s", "how often the agent writes its heartbeat", 50, kHour},
      {"assignment_poll_interval", KeyType::kDuration, "1s",
       "how often the agent reads its record while it serves an assignment, and while idle without a wake-up queue",
       20, 5 * kMin},
      {"wake_queue", KeyType::kBool, "true",
       "long-poll the SQS queue runpoolctl made for this instance at launch (<pool>-wake-<instance id>) and "
       "signals after a claim or a drain request, so an idle agent reads its record at once"},
      {"idle_poll_interval", KeyType::kDuration, "15s",
       "how often an idle agent whose wake-up queue works reads its record anyway (a lost wake-up costs at most this)",
       20, kMin},
      {"settle_poll_interval", KeyType::kDuration, "100ms",
       "how often the main loop ticks while an assignment starts or ends (registering, draining, cleaning): its own "
       "steps go at once; the record is read only at a wake-up or the usual interval",
       10, 5 * kMin},
      {"settle_window", KeyType::kDuration, "30s",
       "how long a start or end of an assignment is polled at settle_poll_interval before assignment_poll_interval",
       0, kHour},
      {"notice_poll_interval", KeyType::kDuration, "5s", "how often IMDS is asked for spot and rebalance notices", 20, 5 * kMin},
      {"boot_grace", KeyType::kDuration, "5m", "no record for this instance this long after start: terminate it", 100, kDay},
      {"deadline_grace", KeyType::kDuration, "10m",
       "how long past its record's deadline the agent leaves retiring the instance to the controller (refresh) "
       "before terminating it itself", 0, kDay},
      {"table_unreachable_limit", KeyType::kDuration, "10m", "the table unreachable this long: terminate the instance", 100, kDay},
      {"listener_restart_backoff", KeyType::kDuration, "2s", "first wait before restarting a Listener (doubles, at most 32x)", 0, 10 * kMin},
      {"listener_max_restarts", KeyType::kInt, "10", "Listener restarts per assignment before it counts as failed", 0, 1000},
      {"drain_timeout", KeyType::kDuration, "5m",
       "a runner given its own drain signal and idle this long without exiting: fall back to the stock drain; also the "
       "job's bound after a deadline without a hard deadline", 50, kDay},
      {"drain_poll_wait", KeyType::kDuration, "50s",
       "stock drain: how long to wait after the drain request (the controller has removed the runner's labels) before "
       "deregistering an idle runner, so a job already dispatched to its open long poll arrives; one long poll of "
       "the runner (about 50 s on GitHub)", 0, kHour},
      {"stock_idle_wait", KeyType::kDuration, "60s",
       "stock runner: how long after deregistration to wait for the Listener to exit by itself before SIGINT", 0, kHour},
      {"job_start_bound", KeyType::kDuration, "5m",
       "a job request that shows no Worker and no completion this long after it arrived is over (the runner dropped "
       "it: acquire refused, first renew failed, cancelled before it)", 1000, kHour},
      {"registration_timeout", KeyType::kDuration, "2m", "bound on config.sh (configure and remove) and their retries", 100, kHour},
      {"deregister_attempts", KeyType::kInt, "5",
       "config.sh remove runs per assignment before the runner is left registered for the controller to delete", 0, 100},
      {"cleanup_timeout", KeyType::kDuration, "30s", "SIGTERM to SIGKILL for leftover processes; also SIGINT to SIGKILL for the Listener", 50, kHour},
      {"terminate_wait", KeyType::kDuration, "2m", "after TerminateInstances, how long to wait before shutting the OS down", 50, kHour},
      {"metrics_file", KeyType::kString, "",
       "append CloudWatch embedded-metric-format lines (registration, jobs, drains, cleaning, self-termination) to "
       "this file for the CloudWatch agent to ship; empty: no metrics"},
      {"metrics_namespace", KeyType::kString, "runpool", "the CloudWatch namespace of the agent's metrics"},
  };
}

AgentSettings load_agent_settings(const Config& c) {
  AgentSettings s;
  s.table = c.get_string("table");
  if (s.table.size() < 3 || s.table.size() > 255) c.reject("table", "must be set (3 to 255 characters)");
  s.pool = c.get_string("pool");
  if (!is_name(s.pool, 64)) c.reject("pool", "must be set: letters, digits, '-' and '_', at most 64");
  s.instance_role_id = c.get_string("instance_role_id");
  if (!s.instance_role_id.empty() && !pool::is_role_unique_id(s.instance_role_id)) {
    c.reject("instance_role_id", "is not a role's unique id (AROA followed by capital letters and digits)");
  }
  s.region = c.get_string("region");
  s.endpoint_dynamodb = c.get_string("endpoint_dynamodb");
  s.endpoint_ec2 = c.get_string("endpoint_ec2");
  s.endpoint_sqs = c.get_string("endpoint_sqs");
  s.imds_endpoint = c.get_string("imds_endpoint");
  for (const char* key : {"endpoint_dynamodb", "endpoint_ec2", "endpoint_sqs", "imds_endpoint"}) {
    if (!is_endpoint(c.get_string(key))) c.reject(key, "must be an http:// or https:// URL");
  }
  s.aws_timeout = c.get_duration("aws_timeout");
  s.aws_max_attempts = static_cast<int>(c.get_int("aws_max_attempts"));

  s.runner_root = c.get_string("runner_root");
  if (!is_safe_absolute_path(expand_instance_path(s.runner_root, "i-0"))) {
    c.reject("runner_root", "must be an absolute path other than / without . or .. parts");
  }
  // The packaged unit makes the first three read-only for the agent and the runner; /etc is no place for it.
  for (const char* system : {"/usr", "/boot", "/efi", "/etc"}) {
    const std::string dir = system;
    if (s.runner_root == dir || s.runner_root.rfind(dir + "/", 0) == 0) {
      c.reject("runner_root", "must not be under " + dir + " (read-only for the agent's systemd unit)");
    }
  }
  s.runner_template = c.get_string("runner_template");
  if (!s.runner_template.empty() && !is_safe_absolute_path(s.runner_template)) {
    c.reject("runner_template", "must be an absolute path without . or .. parts");
  }
  s.job_users = c.get_string("job_users");
  if (s.job_users != "per-assignment" && s.job_users != "fixed") c.reject("job_users", "must be per-assignment or fixed");
  if (auto range = parse_uid_range(c.get_string("job_uid_range"))) {
    s.job_uid_range = *range;
  } else {
    c.reject("job_uid_range", "must be FIRST-LAST, uids from 1 to 2147483646, FIRST not above LAST");
  }
  s.job_users_state = c.get_string("job_users_state");
  if (!is_safe_absolute_path(expand_instance_path(s.job_users_state, "i-0"))) {
    c.reject("job_users_state", "must be an absolute path without . or .. parts");
  }
  {
    std::istringstream roots(c.get_string("clean_sweep_roots"));
    for (std::string r; roots >> r;) {
      if (r != "/" && !is_safe_absolute_path(expand_instance_path(r, "i-0"))) {
        c.reject("clean_sweep_roots", "must be absolute paths without . or .. parts");
      }
      s.clean_sweep_roots.push_back(r);
    }
    if (s.clean_sweep_roots.empty()) c.reject("clean_sweep_roots", "must name at least one path (/: everywhere)");
  }
  if (auto scope = parse_cache_scope(c.get_string("job_cache_scope"))) {
    s.job_cache_scope = *scope;
  } else {
    c.reject("job_cache_scope", "must be none, repository or owner");
  }
  {
    std::istringstream dirs(c.get_string("job_cache_dirs"));
    for (std::string d; dirs >> d;) {
      const bool under = d.rfind("_work/", 0) == 0 || d.rfind("_home/", 0) == 0;
      if (!under || d.size() <= 6 || !is_safe_absolute_path("/" + d)) {
        c.reject("job_cache_dirs", "must be relative paths under _work/ or _home/ without . or .. parts");
      }
      s.job_cache_dirs.push_back(d);
    }
  }
  if (s.job_cache_scope != CacheScope::kNone && s.job_users != "per-assignment") {
    c.reject("job_cache_scope", "needs job_users = per-assignment");
  }
  s.job_privileges = c.get_string("job_privileges");
  if (!pool::parse_job_privileges(s.job_privileges)) {
    c.reject("job_privileges", "must be user, docker or sudo");
  }
  if (s.job_privileges != "user" && s.job_users != "per-assignment") {
    c.reject("job_privileges", "needs job_users = per-assignment");
  }
  s.docker_socket = c.get_string("docker_socket");
  if (s.docker_socket.empty() || s.docker_socket[0] != '/') c.reject("docker_socket", "must be an absolute path");
  s.docker_timeout = c.get_duration("docker_timeout");
  s.runner_user = c.get_string("runner_user");
  if (!is_user_name(s.runner_user)) c.reject("runner_user", "is not a valid user name");
  if (s.runner_user == "root") c.reject("runner_user", "must not be root: the runner runs unprivileged");
  s.drain_capable = c.get_bool("drain_capable");
  s.runner_disable_update = c.get_bool("runner_disable_update");
  if (!s.runner_disable_update) {
    // update.sh runs as the runner user and swaps bin/ and externals/: a root that allowed it would let a
    // job replace the runner the next tenant's job runs in. Versions rotate with the image instead.
    c.reject("runner_disable_update",
             "must be true: a runner that updates itself needs its bin/ writable by the runner user, so one job "
             "could replace the runner for the next; pin the version in the image and roll images "
             "(runpoolctl's max_instance_age and retire --runner-version)");
  }
  s.runner_group = c.get_string("runner_group");
  if (!s.runner_group.empty() && !github::valid_runner_group(s.runner_group)) {
    c.reject("runner_group", "letters, digits, spaces and - _ . only, starting with a letter or digit, at most 100");
  }
  s.runner_path = c.get_string("runner_path");
  if (s.runner_path.empty() || s.runner_path[0] != '/') c.reject("runner_path", "must be a PATH of absolute directories");
  s.job_imds_access = c.get_bool("job_imds_access");
  s.pre_run_script = c.get_string("pre_run_script");
  if (!s.pre_run_script.empty() && !is_safe_absolute_path(s.pre_run_script)) {
    c.reject("pre_run_script", "must be an absolute path without . or .. parts");
  }
  s.pre_run_timeout = c.get_duration("pre_run_timeout");

  s.heartbeat_interval = c.get_duration("heartbeat_interval");
  s.assignment_poll_interval = c.get_duration("assignment_poll_interval");
  s.wake_queue = c.get_bool("wake_queue");
  s.idle_poll_interval = c.get_duration("idle_poll_interval");
  s.settle_poll_interval = c.get_duration("settle_poll_interval");
  s.settle_window = c.get_duration("settle_window");
  s.notice_poll_interval = c.get_duration("notice_poll_interval");
  s.boot_grace = c.get_duration("boot_grace");
  s.deadline_grace = c.get_duration("deadline_grace");
  s.table_unreachable_limit = c.get_duration("table_unreachable_limit");
  s.listener_restart_backoff = c.get_duration("listener_restart_backoff");
  s.listener_max_restarts = static_cast<int>(c.get_int("listener_max_restarts"));
  s.drain_timeout = c.get_duration("drain_timeout");
  s.stock_idle_wait = c.get_duration("stock_idle_wait");
  s.drain_poll_wait = c.get_duration("drain_poll_wait");
  s.job_start_bound = c.get_duration("job_start_bound");
  s.registration_timeout = c.get_duration("registration_timeout");
  s.deregister_attempts = static_cast<int>(c.get_int("deregister_attempts"));
  s.cleanup_timeout = c.get_duration("cleanup_timeout");
  s.terminate_wait = c.get_duration("terminate_wait");
  s.metrics_file = c.get_string("metrics_file");
  if (!s.metrics_file.empty() && !is_safe_absolute_path(s.metrics_file)) {
    c.reject("metrics_file", "must be an absolute path without . or .. parts");
  }
  s.metrics_namespace = c.get_string("metrics_namespace");
  if (s.metrics_namespace.empty() || s.metrics_namespace.size() > 255) {
    c.reject("metrics_namespace", "must be 1-255 characters");
  }

  // Relations: a short table outage (a couple of heartbeats) must never terminate an instance,
  // and the agent must look at its record at least once within the boot grace.
  if (s.table_unreachable_limit < 2 * s.heartbeat_interval) {
    c.reject("table_unreachable_limit", "must be at least two heartbeat_interval (" +
                                            format_duration(s.heartbeat_interval) + ")");
  }
  if (s.boot_grace < 2 * s.assignment_poll_interval) {
    c.reject("boot_grace", "must be at least two assignment_poll_interval (" +
                               format_duration(s.assignment_poll_interval) + ")");
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
