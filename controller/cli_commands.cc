#include "controller/cli_commands.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>
#include <unistd.h>

#include "common/github/actions_service.h"
#include "common/github/scaleset_client.h"
#include "common/log.h"
#include "common/pool/lease_store.h"
#include "controller/backend.h"
#include "controller/config_file.h"
#include "controller/config_from_stack.h"
#include "controller/context.h"
#include "controller/init.h"
#include "controller/label.h"
#include "controller/metrics.h"
#include "controller/provision.h"
#include "controller/refresh.h"
#include "controller/release.h"
#include "controller/retire_command.h"
#include "controller/scale_down.h"
#include "controller/scale_up.h"
#include "controller/serve.h"
#include "controller/status.h"
#include "controller/user_data.h"

namespace runpool::controller {
namespace {

std::atomic<bool> g_cancelled{false};

extern "C" void on_signal(int) { g_cancelled.store(true); }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

const char* env(const char* name) { return std::getenv(name); }

std::optional<pool::UsageClass> parse_usage(const std::string& text) {
  if (text.empty()) return std::nullopt;
  auto u = pool::parse_usage_class(text);
  if (!u) throw UsageError("--usage-class must be spot or on-demand, not '" + text + "'");
  return u;
}

std::optional<Duration> parse_timeout(const std::string& flag, const std::string& text) {
  if (text.empty()) return std::nullopt;
  auto d = parse_duration(text);
  if (!d || d->count() <= 0) throw UsageError(flag + " must be a duration like 90s, 10m or 1h, not '" + text + "'");
  return d;
}

// Flags several commands take, each with its own help.
void add_dry_run(CLI::App& c, bool& value, const char* help) { c.add_flag("--dry-run", value, help); }
void add_timeout(CLI::App& c, std::string& value, const char* help) { c.add_option("--timeout", value, help); }
void add_resource_class(CLI::App& c, std::string& value, const char* help) {
  c.add_option("--resource-class,-c", value, help);
}

// provision and release serve one workflow's label; a shared pool's runners serve any workflow.
void refuse_shared(const Settings& s, const std::string& command) {
  if (!s.shared) return;
  throw UsageError(command + ": pool " + s.pool + " is shared (pool_mode = shared): its runners serve any workflow; "
                   "use scale-up and scale-down");
}

// Runs a command against the real AWS and GitHub clients: SIGINT/SIGTERM cancel its waits, and its
// metrics (one PutLogEvents) go out when it ends.
template <typename Run>
int with_backend(const Settings& settings, Run run) {
  install_signal_handlers();
  Backend backend(settings);
  CommandMetrics metrics(settings, backend);
  Context ctx{settings, backend.clock(), backend.table(), backend.queue(), backend.compute(), backend.github(),
              std::cout, g_cancelled, metrics.sink()};
  ctx.runs = &backend.run_assignments();
  return run(backend, ctx);
}

// ---- init

int run_init_command(const Invocation& in, const CommandFlags&) {
  require_launch(in.settings);
  return with_backend(in.settings, [&](Backend& backend, Context&) {
    return run_init(in.settings, backend.dynamodb(), backend.sqs(), backend.ec2(), std::cout, in.json);
  });
}

// ---- provision

void add_provision_flags(CLI::App& c, CommandFlags& flags) {
  auto& f = flags.provision;
  c.add_option("--count,-n", f.count, "How many runners (1..max_count)")->capture_default_str();
  add_resource_class(c, f.resource_class, "Resource class (default: default_resource_class)");
  c.add_option("--usage-class", f.usage_class, "spot or on-demand (default: usage_class)");
  c.add_option("--allowed-instance-types", f.allowed_types,
               "Instance type globs, e.g. 'c* m7i.*' (default: allowed_instance_types)");
  c.add_option("--label", f.label,
               "Assignment label (default: <pool>-<run id>-<attempt>-<job>-<check run id> in GitHub Actions, else "
               "random)");
  c.add_option("--check-run-id", f.check_run_id,
               "The job's check run id (${{ job.check_run_id }}; the action passes it): makes the default label "
               "unique per job execution, so two calls of one reusable workflow or two legs of a matrix do not "
               "share runners");
  add_timeout(c, f.timeout, "Give up after this long, e.g. 10m (default: provision_timeout)");
  c.add_option("--min-count", f.min_count,
               "Succeed once at least this many runners run; the rest get --straggler-wait more, then are let go "
               "(default: --count, all of them)");
  c.add_option("--straggler-wait", f.straggler_wait,
               "With --min-count: how much longer the rest may take once enough run (default: "
               "provision_straggler_wait)");
}

int run_provision_command(const Invocation& in, const CommandFlags& flags) {
  require_launch(in.settings);
  require_github(in.settings);
  refuse_shared(in.settings, "provision");
  return with_backend(in.settings, [&](Backend&, Context& ctx) {
    const auto& f = flags.provision;
    ProvisionOptions o;
    o.count = f.count;
    o.resource_class = f.resource_class;
    o.usage = parse_usage(f.usage_class);
    if (!f.allowed_types.empty()) o.allowed_types = split_list(f.allowed_types);  // like allowed_instance_types
    o.label = f.label;
    if (!f.check_run_id.empty()) {
      if (std::string problem = check_run_id_problem(f.check_run_id); !problem.empty()) {
        throw UsageError("--check-run-id: " + problem);
      }
      o.check_run_id = f.check_run_id;
    }
    o.timeout = parse_timeout("--timeout", f.timeout);
    o.min_count = f.min_count;
    if (!f.straggler_wait.empty()) {
      auto d = parse_duration(f.straggler_wait);
      if (!d) throw UsageError("--straggler-wait must be a duration like 30s or 2m, not '" + f.straggler_wait + "'");
      o.straggler_wait = *d;
    }
    o.actions = actions_files(env);
    o.json = in.json;
    o.getenv = env;
    o.random = random_hex16;
    o.keep_run = true;
    return run_provision(ctx, o);
  });
}

// ---- release

void add_release_flags(CLI::App& c, CommandFlags& flags) {
  c.add_option("--label", flags.release.label, "The label provision printed")->required();
  c.add_flag("--wait", flags.release.wait,
             "Wait until every instance is back in the pool (its agent's drained, its runner confirmed gone on "
             "GitHub), terminating those not drained within --timeout. Without it release returns once the drains "
             "are written: the agents finish them on their own, and the next provision of their class (which "
             "takes them) or refresh returns them to the pool");
  add_timeout(c, flags.release.timeout, "With --wait (implied): how long to wait for drained (default: release_timeout)");
}

int run_release_command(const Invocation& in, const CommandFlags& flags) {
  require_github(in.settings);
  refuse_shared(in.settings, "release");
  return with_backend(in.settings, [&](Backend&, Context& ctx) {
    ReleaseOptions o;
    o.label = flags.release.label;
    o.timeout = parse_timeout("--timeout", flags.release.timeout);
    o.wait = flags.release.wait || o.timeout.has_value();
    o.json = in.json;
    o.actions = actions_files(env);
    return run_release(ctx, o);
  });
}

// ---- refresh

void add_refresh_flags(CLI::App& c, CommandFlags& flags) {
  add_dry_run(c, flags.refresh.dry_run, "Only say what would be done");
}

int run_refresh_command(const Invocation& in, const CommandFlags& flags) {
  return with_backend(in.settings, [&](Backend& backend, Context& ctx) {
    pool::DynamoLeaseStore marker(backend.dynamodb(), in.settings.table);
    return run_refresh(ctx, RefreshOptions{flags.refresh.dry_run, in.json, &marker});
  });
}

// ---- scale-down

void add_scale_down_flags(CLI::App& c, CommandFlags& flags) {
  add_dry_run(c, flags.scale_down.dry_run, "Only print the decisions");
  c.add_option("--idle", flags.scale_down.idle,
               "Keep this many idle per class instead of the schedule's quota (default: the schedule's; "
               "no schedule: all)")
      ->check(CLI::Range(0, 10000));
}

int run_scale_down_command(const Invocation& in, const CommandFlags& flags) {
  require_github(in.settings);
  return with_backend(in.settings, [&](Backend&, Context& ctx) {
    ScaleDownOptions o{flags.scale_down.dry_run, in.json, std::nullopt};
    if (flags.scale_down.idle >= 0) o.idle = flags.scale_down.idle;
    return run_scale_down(ctx, o);
  });
}

// ---- scale-up

void add_scale_up_flags(CLI::App& c, CommandFlags& flags) {
  auto& f = flags.scale_up;
  c.add_option("--to", f.to, "Idle runners per class to reach (default: the schedule's quota)")
      ->check(CLI::Range(0, 10000));
  add_resource_class(c, f.resource_class, "Only this class (default: every class)");
  c.add_flag("--no-wait", f.no_wait, "Shared pools: do not wait for the new runners to register");
  add_timeout(c, f.timeout, "How long to wait for registration (default: provision_timeout)");
}

int run_scale_up_command(const Invocation& in, const CommandFlags& flags) {
  require_github(in.settings);
  require_launch(in.settings);
  return with_backend(in.settings, [&](Backend&, Context& ctx) {
    const auto& f = flags.scale_up;
    ScaleUpOptions o;
    if (f.to >= 0) o.to = f.to;
    o.resource_class = f.resource_class;
    o.wait = !f.no_wait;
    o.timeout = parse_timeout("--timeout", f.timeout);
    o.json = in.json;
    return run_scale_up(ctx, o);
  });
}

// ---- bypass-removal

void add_bypass_removal_flags(CLI::App& c, CommandFlags& flags) {
  c.add_option("instance-ids", flags.bypass_removal.instance_ids, "Instance ids (i-…)")->required();
  c.add_flag("--off", flags.bypass_removal.off, "Clear the mark instead");
}

int run_bypass_removal_command(const Invocation& in, const CommandFlags& flags) {
  return with_backend(in.settings, [&](Backend&, Context& ctx) {
    return run_bypass_removal(ctx, flags.bypass_removal.instance_ids, !flags.bypass_removal.off, in.json);
  });
}

// ---- retire

void add_retire_flags(CLI::App& c, CommandFlags& flags) {
  auto& f = flags.retire;
  c.add_option("--ami", f.ami, "The current AMI id (ami-…)");
  c.add_option("--runner-version", f.runner_version, "The current runner version (e.g. 2.336.0)");
  c.add_option("--agent-version", f.agent_version, "The current agent version");
  add_dry_run(c, f.dry_run, "Only print the decisions");
}

int run_retire_command(const Invocation& in, const CommandFlags& flags) {
  return with_backend(in.settings, [&](Backend&, Context& ctx) {
    const auto& f = flags.retire;
    RetireOptions o;
    if (!f.ami.empty()) o.criteria.ami_id = f.ami;
    if (!f.runner_version.empty()) o.criteria.runner_version = f.runner_version;
    if (!f.agent_version.empty()) o.criteria.agent_version = f.agent_version;
    o.dry_run = f.dry_run;
    o.json = in.json;
    return run_retire(ctx, o);
  });
}

// ---- status

void add_status_flags(CLI::App& c, CommandFlags& flags) {
  c.add_flag("--all", flags.status.all, "Include terminated records");
}

int run_status_command(const Invocation& in, const CommandFlags& flags) {
  return with_backend(in.settings, [&](Backend& backend, Context& ctx) {
    pool::DynamoLeaseStore leases(backend.dynamodb(), in.settings.table);
    return run_status(ctx, StatusOptions{in.json, flags.status.all}, &leases);
  });
}

// ---- config

void add_config_flags(CLI::App& c, CommandFlags& flags) {
  c.add_flag("--reference", flags.config.reference, "Print the Markdown reference of every key instead");
  CLI::App* from = c.add_subcommand(
      "from-stack",
      "Write the configuration file from a runpool CloudFormation stack's outputs (DescribeStacks): region, "
      "table, pool, instance_profile, instance_role_id, launch_template (the template's name) and "
      "metrics_log_group; prints what it wrote. Refuses to replace an existing file without --force.");
  from->add_option("stack", flags.config.stack, "the stack's name or id")->required();
  flags.config.output = kDefaultConfigFile;
  from->add_option("-o,--output", flags.config.output, "the file to write")->capture_default_str();
  from->add_flag("--force", flags.config.force, "replace the file when it exists");
}

std::string settings_text(const Config& c, const Settings& s) {
  std::string out;
  for (const auto& spec : c.schema()) {
    std::string v = spec.type == KeyType::kSecret ? (c.has(spec.key) ? Secret::kMask : "") : c.get_string(spec.key);
    std::string origin = c.origin(spec.key);
    // The GitHub URLs in use may be derived from one another or come from the job's environment.
    const std::string* used = spec.key == "github_api_url"      ? &s.github_api_url
                              : spec.key == "github_server_url" ? &s.github_server_url
                                                                : nullptr;
    if (used && *used != v) {
      v = *used;
      origin = "derived (the other GitHub URL, else the job's GITHUB_API_URL / GITHUB_SERVER_URL)";
    }
    out += spec.key + " = " + v + "    # " + origin + "\n";
  }
  return out;
}

int run_config_command(const Invocation& in, const CommandFlags& flags) {
  if (!flags.config.stack.empty()) {
    return run_config_from_stack(in.settings, flags.config.stack, flags.config.output, flags.config.force, std::cout);
  }
  std::cout << (flags.config.reference ? in.config.reference_markdown() : settings_text(in.config, in.settings));
  return kExitOk;
}

// ---- user-data

int run_user_data_command(const Invocation& in, const CommandFlags&) {
  const Settings& s = in.settings;
  try {
    std::cout << render_user_data(read_template(s.user_data_template), agent_config_text(s.agent_config),
                                  s.agent_binary);
    return kExitOk;
  } catch (const std::invalid_argument& e) {  // a value user-data cannot carry, or past EC2's 16 KiB
    std::cerr << "runpoolctl: configuration error: " << printable(e.what(), 600) << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {  // the template cannot be read
    std::cerr << "runpoolctl: " << printable(e.what(), 600) << "\n";
    return kExitFailed;
  }
}

// ---- serve

int run_serve_command(const Invocation& in, const CommandFlags&) {
  require_launch(in.settings);
  require_github(in.settings);
  refuse_shared(in.settings, "serve");
  return with_backend(in.settings, [&](Backend& backend, Context& ctx) {
    const Settings& s = in.settings;
    github::ActionsServiceSettings admin_settings;
    admin_settings.user_agent = std::string("runpool/") + RUNPOOL_VERSION;
    admin_settings.timeout = s.github_timeout;
    // The queue calls: quick retries, since a stop aborts their connection and the serving loop
    // retries a failed poll itself.
    github::ActionsServiceSettings queue_settings = admin_settings;
    queue_settings.retry = RetryPolicy{3, std::chrono::milliseconds(200), std::chrono::seconds(2), std::chrono::seconds(30)};
    CurlHttpClient admin_http, queue_http;
    std::atomic<bool> stop_queue{false};
    queue_http.cancel_when(&stop_queue);
    github::ActionsCaller admin(admin_http, backend.local_clock(), admin_settings);
    github::ActionsCaller queue(queue_http, backend.local_clock(), queue_settings);
    github::ActionsServiceAuth auth(backend.github_client(), s.github_api_url, admin);
    github::ScaleSetClient scale_sets(admin, auth);
    // Three more connections for runner configurations: a claim's batch of 10 is made in 3 rounds
    // of GitHub's answer time instead of 10, far below GitHub's limit on concurrent requests.
    constexpr int kExtraJitLanes = 3;
    std::vector<std::unique_ptr<CurlHttpClient>> lane_http;
    std::vector<std::unique_ptr<github::ActionsCaller>> lane_callers;
    std::vector<std::unique_ptr<github::ScaleSetClient>> lane_clients;
    std::vector<github::ScaleSetClient*> jit_lanes;
    for (int i = 0; i < kExtraJitLanes; ++i) {
      lane_http.push_back(std::make_unique<CurlHttpClient>());
      lane_callers.push_back(std::make_unique<github::ActionsCaller>(*lane_http.back(), backend.local_clock(), admin_settings));
      lane_clients.push_back(std::make_unique<github::ScaleSetClient>(*lane_callers.back(), auth));
      jit_lanes.push_back(lane_clients.back().get());
    }
    pool::DynamoLeaseStore leases(backend.dynamodb_for_lease(), s.table);
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof host, "unknown");
    ServeDeps deps{scale_sets, queue, stop_queue, leases, std::string(host) + ":" + std::to_string(getpid()), jit_lanes};
    return run_serve(ctx, deps);
  });
}

// ---- the table

constexpr Command kCommands[] = {
    {"init",
     "Create or update the state table (and its by_label index), one pool queue per "
     "resource class and the launch template. Idempotent; safe to run concurrently.",
     nullptr, run_init_command},
    {"provision",
     "Get N runners for one label: claim idle instances from the pool first, launch the rest (CreateFleet, spot "
     "with on-demand fallback when allowed), wait until each registered, mark them running. Prints the label; in "
     "GitHub Actions writes the step outputs label, instance-ids, warm, launched and a step summary. On timeout, "
     "failure or SIGINT/SIGTERM, claimed instances drain back to the pool and launched ones are terminated.",
     add_provision_flags, run_provision_command},
    {"release",
     "Return a label's instances to the pool: start their drains (the runners' labels removed, each agent "
     "deregisters its runner, cleans and reports drained) and return at once; the next provision of their class "
     "or refresh confirms each runner gone on GitHub and puts the instance back in the pool. With --wait, waits "
     "for drained and does that itself (not drained in time: terminated). Idempotent; safe to run concurrently.",
     add_release_flags, run_release_command},
    {"refresh",
     "Keep the fleet honest (run it on a schedule): expire whatever passed its deadline, finish half-done "
     "handshakes, terminate tagged instances without a live record, close records of vanished instances, "
     "re-advertise idle instances missing from the pool, remove ghost runners, delete old terminated records.",
     add_refresh_flags, run_refresh_command},
    {"scale-down",
     "The scale-down pass (run it on a schedule), a decision table after terraform-aws-github-runner's "
     "(docs/design.md): terminate confirmed orphans, then keep each resource class's idle quota "
     "(scale_down_schedule; with no schedule and no --idle, every idle instance is kept) and remove the idle "
     "instances beyond it — idle pool instances by a "
     "conditional retirement, idle shared runners by a drain and deregistration first. Busy runners (the agent's "
     "report or GitHub's flag), instances younger than the minimum running time and those marked bypass-removal "
     "are kept. Prints every instance's decision and the rule that made it.",
     add_scale_down_flags, run_scale_down_command},
    {"scale-up",
     "Fill the pool to each resource class's idle quota (the schedule's, or --to N). Shared pools: launch runners "
     "that register once with shared_labels plus their class and serve any workflow's jobs. Run-scoped pools: warm "
     "instances into the pool (launched, registered under a warm-up label, released at once), so the next provision "
     "claims them warm; only classes with reuse = always.",
     add_scale_up_flags, run_scale_up_command},
    {"serve",
     "Serve a runner scale set (scale_set_name, default the pool's name) until SIGTERM: workflows ask only "
     "runs-on: <scale set>. Learns demand from GitHub's scale-set message session and keeps min(max runners, "
     "armed + assigned jobs) just-in-time runners, each on an instance claimed warm from the pool (launched when "
     "the pool is empty) and cleaned back into it after its one job. Several may run: one holds the scale set's "
     "lease in the state table, the others stand by and take over when it stops renewing.",
     nullptr, run_serve_command},
    {"bypass-removal", "Mark instances so that scale-down never removes them (--off clears the mark).",
     add_bypass_removal_flags, run_bypass_removal_command},
    {"retire",
     "Roll a warm pool onto a new image, runner or agent: instances that do not match every given current value "
     "(or do not report it) are retired — idle ones terminated at once, assigned ones marked so that their release "
     "terminates them instead of returning them to the pool. Claims never take a marked instance; no job is lost.",
     add_retire_flags, run_retire_command},
    {"status",
     "The pool's instances (state, label, class, type, age, heartbeat age, busy, deadline) and pool depth.",
     add_status_flags, run_status_command},
    {"config", "Show the effective configuration and where each value came from.", add_config_flags,
     run_config_command},
    {"user-data",
     "Print the user-data this configuration gives new instances (init writes it into the launch template): "
     "the #cloud-config document with the agent's configuration filled in. It holds no secret: no GitHub "
     "credential ever reaches user-data. Reads only the template file: no AWS or GitHub call.",
     nullptr, run_user_data_command},
};

}  // namespace

std::span<const Command> commands() { return kCommands; }

}  // namespace runpool::controller
