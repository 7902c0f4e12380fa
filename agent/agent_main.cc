#include "agent/agent_main.h"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include <spdlog/spdlog.h>

#include "agent/agent_loop.h"
#include "agent/aws_services.h"
#include "agent/heartbeat.h"
#include "agent/job_imds_guard.h"
#include "agent/local_runner_host.h"
#include "agent/poll_interval.h"
#include "agent/pre_run_boot.h"
#include "agent/process.h"
#include "agent/stop_flag.h"
#include "agent/systemd.h"
#include "agent/wake_listener.h"
#include "common/aws/aws_session.h"
#include "common/aws/credentials.h"
#include "common/aws/dynamodb.h"
#include "common/aws/ec2.h"
#include "common/aws/endpoints.h"
#include "common/aws/imds.h"
#include "common/aws_clock.h"
#include "common/metrics/file_sink.h"
#include "common/pool/dynamo_state_table.h"
#include "common/pool/wake_queue.h"

namespace runpool::agent {
namespace {

struct Identity {
  std::string instance_id;
  std::string region;
};

std::optional<Identity> learn_identity(aws::ImdsClient& imds, const AgentSettings& s, StopFlag& stop) {
  const auto deadline = std::chrono::steady_clock::now() + s.loop.boot_grace;
  std::string last_error;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      Identity id;
      id.instance_id = imds.instance_id();
      id.region = s.region.empty() ? imds.region() : s.region;
      return id;
    } catch (const std::exception& e) {
      if (e.what() != last_error) spdlog::warn("IMDS: {}", e.what());
      last_error = e.what();
    }
    if (stop.wait_for(std::chrono::seconds(1))) return std::nullopt;
  }
  return std::nullopt;
}

// The instance's resource class for the pre-run script, if known yet: the tag it was launched
// with (controller/compute.h's runpool:resource-class, through IMDS's instance tags), else its
// record's. Neither may be there this early; the script then goes without.
std::string known_resource_class(aws::ImdsClient& imds, pool::StateTable& table, const std::string& instance_id) {
  try {
    if (auto tag = imds.tag("runpool:resource-class"); tag && !tag->empty()) return *tag;
  } catch (const std::exception& e) {
    spdlog::debug("no resource class from IMDS: {}", e.what());
  }
  try {
    if (auto r = table.get(instance_id)) return r->resource_class;
  } catch (const std::exception& e) {
    spdlog::debug("no resource class from the record: {}", e.what());
  }
  return "";
}

constexpr const char* kSudoersDir = "/etc/sudoers.d";

RetryPolicy aws_retry(const AgentSettings& s) {
  RetryPolicy p;
  p.max_attempts = s.aws_max_attempts;
  p.base = std::chrono::milliseconds(100);
  p.cap = std::chrono::seconds(2);
  p.max_server_wait = std::chrono::seconds(10);
  return p;
}

}  // namespace

int run_agent(const AgentSettings& s, const std::string& version) {
  // SIGINT/SIGTERM go to one thread (sigwait); every other thread, and so every child until its
  // exec resets the mask, has them blocked. A write to a closed pipe is an error, not a death.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  StopFlag stop;
  std::thread signals([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    spdlog::info("signal {}: stopping (a running Listener is left to the next agent)", sig);
    stop.request();
  });
  signals.detach();

  const bool per_assignment = s.job_users == "per-assignment";
  // sudo's include directory: a sudo assignment's job user gets a drop-in of its own there.
  struct stat sudoers {};
  const bool has_sudoers_dir = stat(kSudoersDir, &sudoers) == 0 && S_ISDIR(sudoers.st_mode);
  std::optional<UserIdentity> user;
  if (!per_assignment) {
    user = lookup_user(s.runner_user);
    if (!user) {
      spdlog::critical("runner_user {} does not exist (create it: useradd --system {})", s.runner_user, s.runner_user);
      return kExitUsage;
    }
    if (user->uid == 0) {
      spdlog::critical("runner_user {} has uid 0: the runner must run unprivileged", s.runner_user);
      return kExitUsage;
    }
  } else if (s.job_privileges == "docker" && !lookup_group("docker")) {
    spdlog::critical("job_privileges = docker, but this machine has no docker group (install the Docker engine)");
    return kExitUsage;
  } else if (s.job_privileges == "sudo" && !has_sudoers_dir) {
    spdlog::critical("job_privileges = sudo, but this machine has no {} (install sudo)", kSudoersDir);
    return kExitUsage;
  }

  if (s.instance_role_id.empty()) {
    // Without it the record's key cannot be spelt, and IAM allows no other key.
    spdlog::critical("instance_role_id is not set: runpoolctl writes it into the agent's configuration; a "
                     "configuration written by hand must name the instance role's unique id (AROA…)");
    return kExitUsage;
  }

  aws::ImdsOptions imds_options;
  imds_options.endpoint = s.imds_endpoint;
  CurlHttpClient imds_http;
  aws::ImdsClient imds(imds_http, system_clock(), imds_options);
  auto id = learn_identity(imds, s, stop);
  if (!id) {
    if (stop.requested()) return kExitStopped;
    // Without an identity this instance can never be managed: end it rather than leak it.
    spdlog::critical("no identity from IMDS ({}) within the boot grace: shutting the OS down", imds.endpoint());
    shutdown_os();
    return kExitFailure;
  }
  spdlog::info("runpool-agent {} on {} in {} (pool {}, table {})", version, id->instance_id, id->region, s.pool,
               s.table);

  auto credentials = aws::default_credentials(&imds, system_clock());
  aws::AwsSession session(*credentials, system_clock(), aws::SessionSettings{id->region, aws_retry(s), s.aws_timeout});
  AwsClock& aws_clock = session.clock();
  aws::AwsSettings endpoints;
  endpoints.region = id->region;
  if (!s.endpoint_dynamodb.empty()) endpoints.endpoints["dynamodb"] = s.endpoint_dynamodb;
  if (!s.endpoint_ec2.empty()) endpoints.endpoints["ec2"] = s.endpoint_ec2;
  if (!s.endpoint_sqs.empty()) endpoints.endpoints["sqs"] = s.endpoint_sqs;
  const std::string ddb_url = aws::resolve_endpoint(endpoints, "dynamodb", id->region);
  const std::string ec2_url = aws::resolve_endpoint(endpoints, "ec2", id->region);
  // The heartbeat has a connection of its own: it beats while the loop's call waits.
  aws::DynamoDbClient db(session.caller("dynamodb", ddb_url)), db_beat(session.caller("dynamodb", ddb_url));
  pool::DynamoStateTable table(db, s.table, s.instance_role_id), table_beat(db_beat, s.table, s.instance_role_id);
  aws::Ec2Client ec2(session.caller("ec2", ec2_url));

  SystemdNotifier notifier;
  Watchdog watchdog(notifier, SystemdNotifier::watchdog_interval());
  RunnerHostSettings hs;
  hs.root = expand_instance_path(s.runner_root, id->instance_id);
  hs.ephemeral_mark = hs.root + ".ephemeral";
  hs.listener_mark = hs.root + ".listener";
  hs.template_dir = s.runner_template;
  std::unique_ptr<SystemTenantUsers> tenants;
  std::unique_ptr<JobCache> cache;
  std::unique_ptr<DockerEngineApi> docker;
  if (per_assignment) {
    TenantUsersSettings ts;
    ts.range = s.job_uid_range;
    ts.state_file = expand_instance_path(s.job_users_state, id->instance_id);
    ts.home = hs.root + "/_home";
    // Any assignment's record may ask for docker (its class's job_privileges): the engine is
    // there when its group is.
    if (lookup_group("docker")) {
      docker = std::make_unique<DockerEngineApi>(s.docker_socket, s.docker_timeout);
      hs.docker = docker.get();
      hs.docker_baseline = hs.root + ".docker-baseline";
    }
    if (has_sudoers_dir) hs.sudoers_file = std::string(kSudoersDir) + "/runpool-job";
    tenants = std::make_unique<SystemTenantUsers>(ts, [&] { watchdog.alive(); });
    hs.tenants = tenants.get();
    hs.job_privileges = s.job_privileges;
    hs.tenant_range = s.job_uid_range;
    hs.sweep.roots.clear();  // the configured roots, not the default's "/" besides them
    for (const auto& r : s.clean_sweep_roots) hs.sweep.roots.push_back(expand_instance_path(r, id->instance_id));
    if (s.job_cache_scope != CacheScope::kNone) {
      cache = std::make_unique<JobCache>(hs.root + ".caches", s.job_cache_dirs);
      hs.cache = cache.get();
      hs.cache_scope = s.job_cache_scope;
    }
    hs.sweep.roots.push_back(hs.root);  // whatever the roots, the runner root is swept
    // Mounts under the roots are compared with the assignment's start (kept beside the root), or
    // with this start when an agent restarted mid-assignment has none.
    hs.sweep.mount_baseline = hs.root + ".mounts";
    hs.unused_user_mark = hs.root + ".unused-user";
    hs.install_manifest_file = hs.root + ".installation";
    std::ifstream mountinfo(hs.sweep.mountinfo, std::ios::binary);
    hs.sweep.start_mountinfo.assign(std::istreambuf_iterator<char>(mountinfo), std::istreambuf_iterator<char>());
  } else {
    hs.user = *user;
  }
  hs.disable_update = s.runner_disable_update;
  hs.runner_group = s.runner_group;
  hs.path = s.runner_path;
  if (const char* lang = std::getenv("LANG"); lang && *lang) hs.lang = lang;
  hs.proxy_env = proxy_environment([](const char* name) { return std::getenv(name); });
  for (const auto& v : hs.proxy_env) spdlog::info("the runner gets {}", v.substr(0, v.find('=')));
  hs.config_sh_timeout = s.loop.config_sh_timeout;
  hs.cleanup_timeout = s.loop.cleanup_timeout;
  // Jobs cut off from IMDS (the role's credentials) unless job_imds_access: before every runner start.
  const ImdsGuardPlan imds_guard =
      per_assignment ? plan_job_imds_guard({s.job_imds_access, s.job_uid_range.first, imds.endpoint(), s.job_uid_range.last})
                     : plan_job_imds_guard({s.job_imds_access, user->uid, imds.endpoint()});
  spdlog::info("job IMDS guard: {}", imds_guard.reason);
  hs.confine_jobs = [&] { apply_job_imds_guard(imds_guard, [&] { watchdog.alive(); }); };
  LocalRunnerHost host(hs, [&] { watchdog.alive(); });
  Ec2SelfTerminator compute(ec2, id->instance_id);
  TableHealth health(system_clock());
  LoopSettings ls = loop_settings(s, id->instance_id, version);
  ls.seal_key_file = hs.root + ".seal-key";  // beside the runner root, in a directory only root writes
  AgentLoop loop(std::move(ls), table, host, compute, aws_clock, health);
  loop.on_status([&](const std::string& line) { notifier.status(line); });
  std::unique_ptr<metrics::FileSink> metrics_file;
  if (!s.metrics_file.empty()) {
    metrics_file = std::make_unique<metrics::FileSink>(s.metrics_file);
    loop.set_metrics(AgentMetrics(*metrics_file, s.metrics_namespace, s.pool, id->instance_id));
    spdlog::info("metrics: EMF lines to {}", s.metrics_file);
  }

  Heartbeat heartbeat(table_beat, id->instance_id, aws_clock, s.heartbeat_interval, [&] { return loop.busy(); }, health);
  heartbeat.start();

  CurlHttpClient notice_http;
  aws::ImdsClient notice_imds(notice_http, system_clock(), imds_options);
  ImdsNotices notices(notice_imds);
  std::thread notice_thread([&] {
    std::string last_error;
    do {
      try {
        if (auto n = notices.poll()) loop.notice(*n);
        last_error.clear();
      } catch (const std::exception& e) {
        if (e.what() != last_error) spdlog::warn("notice poll: {}", e.what());
        last_error = e.what();
      }
    } while (!stop.wait_for(s.notice_poll_interval));
  });

  // The wake-up queue's long poll, on a connection of its own that a stop cancels at once.
  std::atomic<bool> cancel_wake{false};
  aws::SqsClient sqs(session.caller("sqs", aws::resolve_endpoint(endpoints, "sqs", id->region), &cancel_wake));
  std::unique_ptr<WakeListener> wake;
  if (s.wake_queue) {
    if (auto name = pool::wake_queue_name(s.pool, id->instance_id)) {
      wake = std::make_unique<WakeListener>(sqs, *name);
    } else {
      spdlog::warn("no wake-up queue: a queue name for pool {} would be longer than SQS allows", s.pool);
    }
  }
  std::thread wake_thread([&] {
    if (wake) wake->run(stop);
  });

  notifier.ready();
  // The operator's pre-run script, before the first assignment: the heartbeat already beats, the
  // watchdog is fed while it runs, and a stop request ends it.
  if (!s.pre_run_script.empty()) {
    PreRunOptions pre;
    pre.script = s.pre_run_script;
    pre.timeout = s.pre_run_timeout;
    pre.instance_id = id->instance_id;
    pre.pool = s.pool;
    {
      // A connection of its own: the credentials' IMDS client is in use by other threads.
      CurlHttpClient tag_http;
      aws::ImdsClient tag_imds(tag_http, system_clock(), imds_options);
      pre.resource_class = known_resource_class(tag_imds, table, id->instance_id);
    }
    notifier.status("running the pre-run script " + s.pre_run_script);
    PreRunResult result = run_pre_run_once(pre, pre_run_state_file(id->instance_id), current_boot_id(),
                                           [&] { watchdog.alive(); }, [&] { return stop.requested(); });
    if (!result.cancelled) loop.set_pre_run(result.status, result.detail);
  }
  PollIntervals intervals{s.loop.poll_interval, s.idle_poll_interval, s.settle_poll_interval, s.settle_window};
  std::chrono::steady_clock::time_point settling_since{};  // meaningful while was_settling
  bool was_settling = false;
  int exit_code = kExitStopped;
  bool read = true;
  auto last_read = std::chrono::steady_clock::now();
  while (!stop.requested()) {
    watchdog.alive();
    if (read) last_read = std::chrono::steady_clock::now();
    if (!loop.tick(read)) {
      spdlog::critical("the instance did not terminate; exiting so that the service manager retries");
      exit_code = kExitNotTerminated;
      break;
    }
    watchdog.alive();
    const auto now = std::chrono::steady_clock::now();
    PollFacts facts;
    facts.idle = loop.state().phase == Phase::kIdle;
    facts.settling = loop.settling();
    if (facts.settling && !was_settling) settling_since = now;
    was_settling = facts.settling;
    if (facts.settling) facts.settling_for = std::chrono::duration_cast<Duration>(now - settling_since);
    facts.wake_active = wake && wake->active();
    bool woken = false;
    if (stop.wait_or_nudge(next_poll_interval(facts, intervals), &woken)) break;
    read = record_read_due(facts, intervals,
                           std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - last_read), woken);
  }
  notifier.stopping();
  stop.request();
  cancel_wake = true;
  heartbeat.stop();
  notice_thread.join();
  wake_thread.join();
  return exit_code;
}

}  // namespace runpool::agent
