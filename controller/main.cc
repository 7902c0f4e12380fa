// runpoolctl: builds the command line from the global options (cli_global_options.h) and the
// command table (cli_commands.h), assembles the configuration (file < RUNPOOL_* < flags) and runs
// the command given. Exit codes: 0 done, 1 the operation failed, 2 usage or configuration error
// (docs/runpoolctl.md).
#include <CLI/CLI.hpp>

#include <iostream>

#include "common/config.h"
#include "common/log.h"
#include "controller/cli_commands.h"
#include "controller/cli_global_options.h"
#include "controller/context.h"

#ifndef RUNPOOL_VERSION
#define RUNPOOL_VERSION "dev"
#endif

using namespace runpool;
using namespace runpool::controller;

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
  CommandFlags flags;
  for (const Command& command : commands()) {
    CLI::App* sub = app.add_subcommand(command.name, command.help);
    if (command.add_flags) command.add_flags(*sub, flags);
  }

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

  for (const Command& command : commands()) {
    if (!app.got_subcommand(command.name)) continue;
    try {
      return command.run(Invocation{config, settings, global.json}, flags);
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
  }
  return kExitFailed;
}
