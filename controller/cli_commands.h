// runpoolctl's commands as one table, as Ninja keeps its subcommands: each entry is a name, its
// one-line help, what registers its own flags on its CLI11 subcommand and what runs it. main()
// walks the table to build the command line and to run the command given; a new command is one
// more entry, its flags and its run function (cli_commands.cc).
#pragma once

#include <CLI/CLI.hpp>

#include <span>
#include <string>
#include <vector>

#include "common/config.h"
#include "controller/settings.h"

namespace runpool::controller {

// What a command runs with: the assembled configuration and the global --json.
struct Invocation {
  const Config& config;
  const Settings& settings;
  bool json = false;
};

// The values of every command's own flags, filled in by parsing.
struct CommandFlags {
  struct {
    int count = 1;
    int min_count = 0;  // 0: count
    std::string resource_class, usage_class, allowed_types, label, timeout, straggler_wait, check_run_id;
  } provision;
  struct {
    std::string label, timeout;
    bool wait = false;
  } release;
  struct {
    bool dry_run = false;
  } refresh;
  struct {
    bool dry_run = false;
    int idle = -1;  // -1: the schedule's quota
  } scale_down;
  struct {
    int to = -1;  // -1: the schedule's quota
    std::string resource_class, timeout;
    bool no_wait = false;
  } scale_up;
  struct {
    std::vector<std::string> instance_ids;
    bool off = false;
  } bypass_removal;
  struct {
    std::string ami, runner_version, agent_version;
    bool dry_run = false;
  } retire;
  struct {
    bool all = false;
  } status;
  struct {
    bool reference = false;
    std::string stack, output;  // config from-stack NAME [--output FILE]
    bool force = false;
  } config;
};

struct Command {
  const char* name;
  const char* help;
  void (*add_flags)(CLI::App& command, CommandFlags& flags);  // null: the command has no flags of its own
  // Returns the exit code (context.h). Throws ConfigError or UsageError (exit 2), or any other
  // std::exception when the operation fails (exit 1).
  int (*run)(const Invocation& invocation, const CommandFlags& flags);
};

// Every command, in the order --help lists them.
std::span<const Command> commands();

}  // namespace runpool::controller
