// runpool-agent: the instance-side loop. See docs/agent.md.
#include <malloc.h>

#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "agent/agent_main.h"
#include "agent/agent_settings.h"
#include "common/log.h"

#ifndef RUNPOOL_VERSION
#define RUNPOOL_VERSION "dev"
#endif

namespace {

std::string footer() {
  std::string out =
      "Configuration: the file (`key = value` lines, # comments), then RUNPOOL_<KEY> environment variables, then\n"
      "--set key=value flags; later ones win. Unknown keys and invalid values are refused, naming the key.\n"
      "Durations: 250ms, 30s, 5m, 2h, 1d.\n\nKeys:\n";
  for (const auto& k : runpool::agent::agent_schema()) {
    out += "  " + k.key + (k.default_value.empty() ? "" : " (default " + k.default_value + ")") + "\n      " + k.help +
           "\n";
  }
  out +=
      "\nExit codes:\n"
      "  0  stopped by SIGTERM or SIGINT (a running Listener is left for the next agent to take over)\n"
      "  1  could not start: no identity from IMDS within boot_grace (the OS is shut down first)\n"
      "  2  usage or configuration error (also: runner_user missing or root)\n"
      "  3  self-termination did not take effect: neither TerminateInstances nor the OS shutdown ended\n"
      "     the instance in time (the service manager restarts the agent, which tries again)\n"
      "\nUnder systemd (Type=notify): READY=1 once started, STATUS= with the phase, WATCHDOG=1 while the\n"
      "main loop is alive (WatchdogSec), logs to the journal with --log-format journal.\n";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // Two malloc arenas for the agent's five threads: each further arena is memory kept resident
  // for a thread that allocates little, and none of them allocates under contention.
  mallopt(M_ARENA_MAX, 2);
  CLI::App app{"runpool-agent: serves one instance of a runpool pool as a GitHub Actions runner host.\n"
               "Reads its record in the state table, registers and supervises the runner for each assignment,\n"
               "drains, deregisters and cleans between assignments, heartbeats, and terminates its own\n"
               "instance when its deadline passes or its control plane is gone."};
  app.footer(footer());
  std::string config_file = "/etc/runpool/agent.conf";
  std::string log_format = "text";
  std::string log_level = "info";
  std::vector<std::string> sets;
  bool check_only = false;
  bool reference = false;
  app.add_option("--config", config_file, "configuration file")->capture_default_str();
  app.add_option("--log-format", log_format, "text, json or journal")
      ->check(CLI::IsMember({"text", "json", "journal"}))
      ->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--set", sets, "override one key: key=value (repeatable)");
  app.add_flag("--check-config", check_only, "validate the configuration and exit (0 valid, 2 not)");
  app.add_flag("--config-reference", reference, "print the configuration keys as a Markdown table and exit");
  app.set_version_flag("--version", RUNPOOL_VERSION);
  // CLI11 quotes the offending argument back: shown printable and cut short, one line naming us.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "runpool-agent: " + runpool::printable(e.what(), 300) + "\nRun with --help for more information.\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : runpool::agent::kExitUsage;
  }

  runpool::Config config(runpool::agent::agent_schema());
  if (reference) {
    std::cout << config.reference_markdown();
    return 0;
  }
  runpool::LogFormat format = runpool::LogFormat::kText;
  runpool::parse_log_format(log_format, &format);
  runpool::init_logging(format, log_level);

  runpool::agent::AgentSettings settings;
  try {
    config.merge_file(config_file);
    config.merge_env([](const char* name) { return std::getenv(name); });
    for (const auto& kv : sets) {
      auto eq = kv.find('=');
      if (eq == std::string::npos) throw runpool::ConfigError("--set " + runpool::printable(kv, 80) + ": expected key=value");
      config.set(kv.substr(0, eq), kv.substr(eq + 1), "--set");
    }
    settings = runpool::agent::load_agent_settings(config);
  } catch (const runpool::ConfigError& e) {
    spdlog::critical("configuration: {}", e.what());
    return runpool::agent::kExitUsage;
  }
  if (check_only) {
    spdlog::info("configuration {} is valid", config_file);
    return 0;
  }
  try {
    return runpool::agent::run_agent(settings, RUNPOOL_VERSION);
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return runpool::agent::kExitFailure;
  }
}
