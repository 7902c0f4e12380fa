// runpoolctl: parses the command line, assembles the configuration (file < RUNPOOL_* < flags;
// cli_global_options.h), builds the real clients and runs one command. Exit codes: 0 done, 1 the
// operation failed, 2 usage or configuration error (docs/runpoolctl.md).
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include "common/config.h"
#include "common/log.h"
#include "controller/backend.h"
#include "controller/cli_global_options.h"
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
#include "controller/status.h"
#include "controller/user_data.h"

#ifndef RUNPOOL_VERSION
#define RUNPOOL_VERSION "dev"
#endif

namespace {

using namespace runpool;
using namespace runpool::controller;

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "runpoolctl — a warm pool of EC2 instances as self-hosted GitHub Actions runners.\n\n"
      "Configuration comes from a file (key = value lines): --config FILE, else\n"
      "/etc/runpool/runpoolctl.conf when it exists; then RUNPOOL_<KEY> environment variables, then\n"
      "flags; later sources win. `runpoolctl config --reference` lists every key.\n"
      "Secrets (github_token, github_app_private_key) are read from the file or the environment only.\n\n"
      "Global options may come before or after the command.\n\n"
      "Exit codes: 0 done, 1 the operation failed, 2 usage or configuration error.",
      "runpoolctl"};
  app.require_subcommand(1);
  app.set_version_flag("--version", RUNPOOL_VERSION);
  // Options a command does not know fall through to these global ones, so that they may follow the
  // command (`runpoolctl scale-down --dry-run --json`). Set before the commands, which inherit it.
  app.fallthrough();
  app.set_help_all_flag("--help-all", "Show help for every command");
  // CLI11 quotes the offending argument back: shown printable and cut short, one line naming us.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "runpoolctl: " + printable(e.what(), 300) + "\nRun with --help for more information.\n";
  });

  GlobalOptions global;
  add_global_options(app, global);

  auto* init = app.add_subcommand("init",
                                  "Create or update the state table (and its by_label index), one pool queue per "
                                  "resource class and the launch template. Idempotent; safe to run concurrently.");

  auto* provision = app.add_subcommand(
      "provision",
      "Get N runners for one label: claim idle instances from the pool first, launch the rest (CreateFleet, spot "
      "with on-demand fallback when allowed), wait until each registered, mark them running. Prints the label; in "
      "GitHub Actions writes the step outputs label, instance-ids, warm, launched and a step summary. On timeout, "
      "failure or SIGINT/SIGTERM, claimed instances drain back to the pool and launched ones are terminated.");
  int count = 1;
  std::string resource_class, usage_class, allowed_types, label, timeout;
  provision->add_option("--count,-n", count, "How many runners (1..max_count)")->capture_default_str();
  provision->add_option("--resource-class,-c", resource_class, "Resource class (default: default_resource_class)");
  provision->add_option("--usage-class", usage_class, "spot or on-demand (default: usage_class)");
  provision->add_option("--allowed-instance-types", allowed_types,
                        "Instance type globs, e.g. 'c* m7i.*' (default: allowed_instance_types)");
  provision->add_option("--label", label,
                        "Assignment label (default: <pool>-<run id>-<attempt>-<job> in GitHub Actions, else random)");
  provision->add_option("--timeout", timeout, "Give up after this long, e.g. 10m (default: provision_timeout)");

  auto* release = app.add_subcommand(
      "release",
      "Return a label's instances to the pool: drain (the agent deregisters the runner), wait for drained, make "
      "them idle and advertise them. Not drained in time: terminated. Idempotent; safe to run concurrently.");
  std::string release_label, release_timeout;
  release->add_option("--label", release_label, "The label provision printed")->required();
  release->add_option("--timeout", release_timeout, "How long to wait for drained (default: release_timeout)");

  auto* refresh = app.add_subcommand(
      "refresh",
      "Keep the fleet honest (run it on a schedule): expire whatever passed its deadline, finish half-done "
      "handshakes, terminate tagged instances without a live record, close records of vanished instances, "
      "re-advertise idle instances missing from the pool, remove ghost runners, delete old terminated records.");
  bool dry_run = false;
  refresh->add_flag("--dry-run", dry_run, "Only say what would be done");

  auto* scale_down = app.add_subcommand(
      "scale-down",
      "The scale-down pass (run it on a schedule), a decision table after terraform-aws-github-runner's "
      "(docs/design.md): terminate confirmed orphans, then keep each resource class's idle quota "
      "(scale_down_schedule; with no schedule and no --idle, every idle instance is kept) and remove the idle "
      "instances beyond it — idle pool instances by a "
      "conditional retirement, idle shared runners by a drain and deregistration first. Busy runners (the agent's "
      "report or GitHub's flag), instances younger than the minimum running time and those marked bypass-removal "
      "are kept. Prints every instance's decision and the rule that made it.");
  bool sd_dry_run = false;
  int sd_idle = -1;
  scale_down->add_flag("--dry-run", sd_dry_run, "Only print the decisions");
  scale_down->add_option("--idle", sd_idle,
                         "Keep this many idle per class instead of the schedule's quota (default: the schedule's; "
                         "no schedule: all)")
      ->check(CLI::Range(0, 10000));

  auto* scale_up = app.add_subcommand(
      "scale-up",
      "Shared pools: launch runners until each resource class holds its idle quota (the schedule's, or --to N). "
      "They register once with shared_labels plus their class and serve any workflow's jobs.");
  int su_to = -1;
  std::string su_class, su_timeout;
  bool su_no_wait = false;
  scale_up->add_option("--to", su_to, "Idle runners per class to reach (default: the schedule's quota)")
      ->check(CLI::Range(0, 10000));
  scale_up->add_option("--resource-class,-c", su_class, "Only this class (default: every class)");
  scale_up->add_flag("--no-wait", su_no_wait, "Do not wait for the new runners to register");
  scale_up->add_option("--timeout", su_timeout, "How long to wait for registration (default: provision_timeout)");

  auto* bypass = app.add_subcommand(
      "bypass-removal", "Mark instances so that scale-down never removes them (--off clears the mark).");
  std::vector<std::string> bypass_ids;
  bool bypass_off = false;
  bypass->add_option("instance-ids", bypass_ids, "Instance ids (i-…)")->required();
  bypass->add_flag("--off", bypass_off, "Clear the mark instead");

  auto* retire_cmd = app.add_subcommand(
      "retire",
      "Roll a warm pool onto a new image, runner or agent: instances that do not match every given current value "
      "(or do not report it) are retired — idle ones terminated at once, assigned ones marked so that their release "
      "terminates them instead of returning them to the pool. Claims never take a marked instance; no job is lost.");
  std::string retire_ami, retire_runner, retire_agent;
  bool retire_dry_run = false;
  retire_cmd->add_option("--ami", retire_ami, "The current AMI id (ami-…)");
  retire_cmd->add_option("--runner-version", retire_runner, "The current runner version (e.g. 2.336.0)");
  retire_cmd->add_option("--agent-version", retire_agent, "The current agent version");
  retire_cmd->add_flag("--dry-run", retire_dry_run, "Only print the decisions");

  auto* status = app.add_subcommand(
      "status", "The pool's instances (state, label, class, type, age, heartbeat age, busy, deadline) and pool depth.");
  bool status_all = false;
  status->add_flag("--all", status_all, "Include terminated records");

  auto* config_cmd = app.add_subcommand("config", "Show the effective configuration and where each value came from.");
  bool reference = false;
  config_cmd->add_flag("--reference", reference, "Print the Markdown reference of every key instead");

  auto* user_data_cmd = app.add_subcommand(
      "user-data",
      "Print the user-data this configuration gives new instances (init writes it into the launch template): "
      "the #cloud-config document with the agent's configuration filled in. It holds no secret: no GitHub "
      "credential ever reaches user-data. Reads only the template file: no AWS or GitHub call.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // An unknown command is left over as an extra argument: say so, rather than only that a
    // command is required.
    for (const auto& extra : app.remaining()) {
      std::cerr << "runpoolctl: unknown command or argument '" << printable(extra, 80) << "'\n";
    }
    app.exit(e);
    return kExitUsage;
  }

  Config config(settings_schema());
  Settings settings;
  try {
    settings = configure(global, config);
  } catch (const ConfigError& e) {
    std::cerr << "runpoolctl: configuration error: " << printable(e.what(), 600) << "\n";
    return kExitUsage;
  }

  if (*config_cmd) {
    std::cout << (reference ? config.reference_markdown() : settings_text(config, settings));
    return kExitOk;
  }
  if (*user_data_cmd) {
    try {
      std::cout << render_user_data(read_template(settings.user_data_template), agent_config_text(settings.agent_config),
                                    settings.agent_binary);
      return kExitOk;
    } catch (const std::invalid_argument& e) {  // a value user-data cannot carry, or past EC2's 16 KiB
      std::cerr << "runpoolctl: configuration error: " << printable(e.what(), 600) << "\n";
      return kExitUsage;
    } catch (const std::exception& e) {  // the template cannot be read
      std::cerr << "runpoolctl: " << printable(e.what(), 600) << "\n";
      return kExitFailed;
    }
  }

  install_signal_handlers();
  try {
    if (*provision || *init) require_launch(settings);
    if (*provision || *release || *scale_down || *scale_up) require_github(settings);
    if (*scale_up) require_launch(settings);
    if (settings.shared && (*provision || *release)) {
      throw UsageError(std::string(*provision ? "provision" : "release") +
                       ": pool " + settings.pool + " is shared (pool_mode = shared): its runners serve any workflow; "
                       "use scale-up and scale-down");
    }
    Backend backend(settings);
    CommandMetrics metrics(settings, backend);  // its one PutLogEvents goes when it does, at the end
    Context ctx{settings, backend.clock(), backend.table(), backend.queue(), backend.compute(), backend.github(),
                std::cout, g_cancelled, metrics.sink()};
    if (*init) return run_init(settings, backend.dynamodb(), backend.sqs(), backend.ec2(), std::cout, global.json);
    if (*provision) {
      ProvisionOptions o;
      o.count = count;
      o.resource_class = resource_class;
      o.usage = parse_usage(usage_class);
      if (!allowed_types.empty()) o.allowed_types = split_list(allowed_types);  // like allowed_instance_types
      o.label = label;
      o.timeout = parse_timeout("--timeout", timeout);
      o.actions = actions_files(env);
      o.json = global.json;
      o.getenv = env;
      o.random = random_hex16;
      return run_provision(ctx, o);
    }
    if (*release) {
      return run_release(ctx, ReleaseOptions{release_label, parse_timeout("--timeout", release_timeout), global.json});
    }
    if (*status) return run_status(ctx, StatusOptions{global.json, status_all});
    if (*scale_down) {
      ScaleDownOptions o{sd_dry_run, global.json, std::nullopt};
      if (sd_idle >= 0) o.idle = sd_idle;
      return run_scale_down(ctx, o);
    }
    if (*scale_up) {
      ScaleUpOptions o;
      if (su_to >= 0) o.to = su_to;
      o.resource_class = su_class;
      o.wait = !su_no_wait;
      o.timeout = parse_timeout("--timeout", su_timeout);
      o.json = global.json;
      return run_scale_up(ctx, o);
    }
    if (*bypass) return run_bypass_removal(ctx, bypass_ids, !bypass_off, global.json);
    if (*retire_cmd) {
      RetireOptions o;
      if (!retire_ami.empty()) o.criteria.ami_id = retire_ami;
      if (!retire_runner.empty()) o.criteria.runner_version = retire_runner;
      if (!retire_agent.empty()) o.criteria.agent_version = retire_agent;
      o.dry_run = retire_dry_run;
      o.json = global.json;
      return run_retire(ctx, o);
    }
    if (*refresh) return run_refresh(ctx, RefreshOptions{dry_run, global.json});
  } catch (const ConfigError& e) {
    // Every error may quote outside input (an argument, a value from the table or an answer):
    // printed printable and short, one line.
    std::cerr << "runpoolctl: configuration error: " << printable(e.what(), 600) << "\n";
    return kExitUsage;
  } catch (const UsageError& e) {
    std::cerr << "runpoolctl: " << printable(e.what(), 600) << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "runpoolctl: " << printable(e.what(), 600) << "\n";
    return kExitFailed;
  }
  return kExitFailed;
}
