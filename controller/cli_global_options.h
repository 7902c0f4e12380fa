// runpoolctl's global options (--config, --set, the configuration-key flags, --log-*, --json) and
// the configuration they assemble: file < RUNPOOL_* < flags. Kept apart from the command table
// because every command shares them; main registers them once, on the application, and CLI11's
// fallthrough lets them follow the command too.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "common/config.h"
#include "controller/settings.h"

namespace runpool::controller {

// The global options' values, filled in by parsing.
struct GlobalOptions {
  std::string config_file, log_format, log_level;
  bool json = false;
  std::map<std::string, std::string> key_flags;  // configuration key → its flag's value (--table …)
  std::vector<std::string> sets;                  // --set key=value
};

void add_global_options(CLI::App& app, GlobalOptions& options);

// Merges the configuration file, RUNPOOL_* and the flags into `config` (made from
// settings_schema()), starts logging and returns the settings. Throws ConfigError.
Settings configure(const GlobalOptions& options, Config& config);

}  // namespace runpool::controller
