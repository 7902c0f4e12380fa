// What the agent does when GitHub makes the runner update itself (a JIT runner whose
// disableUpdate GitHub left off; config.sh runners are always --disableupdate).
//
// What the runner does (actions/runner, src/Runner.Listener): on a refresh message it downloads
// the new version into _work/_update, copies its bin/ and externals/ to bin.<v>/externals.<v> in
// the root and replaces the root's scripts by deleting and copying them (SelfUpdater.cs 460–492);
// then it writes _work/_update.sh and starts it with bash as a plain child — same process group
// — and exits 3 (4 when it runs once). update.sh waits for the Listener's pid to be gone, moves
// bin/ and externals/ aside, links bin -> bin.<v>, externals -> externals.<v>, and touches
// update.finished in its working directory (update.sh.template 28–35, 53–121, 205–208).
// run-helper.sh, on 3 or 4, waits up to 31 checks one second apart for that file, removes it and
// has run.sh start the Listener again (run-helper.sh.template 51–74). Where a step fails, the
// Listener says "Runner update failed: …" on stderr and goes on listening on the old version
// (SelfUpdater.cs 121–127, Runner.cs 561–564).
//
// The agent plays run-helper.sh's part. In its layout the installation is root's in a sticky
// root, so the runner can never replace the root's scripts: the update fails in place, at every
// refresh. An update is therefore never waited for there: the assignment fails at once, saying
// which runner to bake into the image. Only where the operator gave the runner user its root (one
// trust domain: the runner may change its own installation, and no manifest is kept for it) is
// the update let through as run-helper.sh would, once per assignment.
#pragma once

#include <string>

#include "agent/decisions.h"

namespace runpool::agent {

// run-helper.sh.template 54–61: `for i in {0..30}` with a one-second sleep.
inline constexpr int kUpdateWaitChecks = 31;
inline constexpr Duration kUpdateWaitInterval{std::chrono::seconds(1)};

// The Listener's exits for an update: RunnerUpdating 3, RunOnceRunnerUpdating 4 (Constants.cs 155–156).
bool is_update_exit(const ExitStatus& s);

enum class UpdateSign {
  kExited,         // the Listener exited 3 or 4: update.sh runs, or ran
  kFailedInPlace,  // "Runner update failed: …": the Listener goes on with the old version
};

enum class UpdateMarker {
  kPending,    // update.finished not seen yet, the wait not over
  kFound,      // seen (and removed)
  kNeverCame,  // not seen within kUpdateWaitChecks
};

struct UpdateFacts {
  UpdateSign sign = UpdateSign::kExited;
  // The runner user owns the runner root (the operator's choice): it can replace its installation.
  // Otherwise the installation is root's, as the agent lays it out.
  bool runner_owns_install = false;
  int updates_done = 0;     // updates of this assignment already finished and restarted after
  int failures_before = 0;  // updates of this assignment that already failed in place
  UpdateMarker marker = UpdateMarker::kPending;
  std::string from_version;  // the Listener's own ("" unknown)
  std::string to_version;    // what GitHub asked for ("" unknown)
  std::string failure;       // the runner's words, for kFailedInPlace
};

enum class UpdateStep {
  kWait,      // keep the update's processes; look for update.finished again
  kRestart,   // start the Listener again for the same assignment, at once
  kContinue,  // nothing: the Listener goes on as it is
  kFail,      // fail the assignment with `reason`; the update (if running) ends with the user's processes
};

struct UpdateDecision {
  UpdateStep what = UpdateStep::kFail;
  std::string reason;
};

UpdateDecision decide_runner_update(const UpdateFacts& f);

}  // namespace runpool::agent
