// What became of an assignment's runner on GitHub when its instance leaves the assignment. The
// agent deregisters it (config.sh remove); when it cannot, its `drained` detail says so and the
// controller deletes the runner with its own credentials before terminating or returning the
// instance. This file is the vocabulary both sides share, and the controller's decision as a pure
// function (tested in runner_fate_test.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/pool/instance_record.h"

namespace runpool::pool {

// How the agent's `drained` detail begins when the runner is still registered.
inline constexpr std::string_view kRunnerLeftRegistered = "runner left registered: ";

// "runner left registered: <name> (id <id>): <why>".
std::string runner_left_detail(const std::string& name, int64_t id, const std::string& why);

// True when the record's agent said, for the current generation, that its runner may still be on
// GitHub: `drained` with the detail above, or `failed` (a failed agent deregistered nothing).
bool runner_left_registered(const InstanceRecord& r);

// The controller's DELETE of the runner (github::DeleteOutcome, or the call failed).
enum class ControllerDelete { kNotTried, kDeleted, kAlreadyGone, kBusy, kFailed };

enum class RunnerFate {
  kDeregisteredByAgent,
  kDeletedByController,
  kAlreadyGone,     // the agent could not confirm, but GitHub no longer has the runner
  kNoRunner,        // the record names no runner: none was registered to remove
  kLeftRegistered,  // neither side removed it: still on GitHub
};
std::string_view runner_fate_name(RunnerFate f);

// GitHub's list, asked by the assignment's runner name (runner_identity.h). The agent's word —
// `drained` (deregistered), `failed`, its runner_id — is forgeable by anyone holding the instance
// role's credentials, so the runner to remove is the one GitHub lists under that name.
enum class GithubListing {
  kAbsent,   // GitHub lists no such runner: nothing to remove
  kPresent,  // listed (runner_id is then the listed one's): removed first
  kUnknown,  // GitHub could not be asked (delete_error says why): the instance waits
};

struct RunnerFateFacts {
  bool agent_left_runner = false;  // runner_left_registered(record), or the agent never confirmed
  GithubListing listing = GithubListing::kAbsent;  // what GitHub's list says
  std::string agent_detail;        // the record's signal_detail: the agent's evidence
  int64_t runner_id = 0;           // the listed runner's (never the record's alone); 0: none listed
  ControllerDelete deleted = ControllerDelete::kNotTried;
  std::string delete_error;        // kBusy / kFailed: GitHub's answer
  bool deadline_forces = false;    // a hard deadline: the instance goes even with its runner
};

struct RunnerFateDecision {
  bool delete_runner = false;  // ask GitHub to delete runner_id, then decide again
  RunnerFate fate = RunnerFate::kDeregisteredByAgent;
  bool proceed = false;        // the instance may be terminated (or returned to the pool) now
  std::string detail;          // for the report, the log and the JSON
};

RunnerFateDecision decide_runner_fate(const RunnerFateFacts& f);

}  // namespace runpool::pool
