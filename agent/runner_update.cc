#include "agent/runner_update.h"

namespace runpool::agent {
namespace {

std::string update_version(const std::string& v, const char* unknown) { return v.empty() ? unknown : "v" + v; }

// "runner self-update: GitHub asks runner v2.336.0 to update to v2.340.0"
std::string update_asked(const UpdateFacts& f) {
  return std::string(kRunnerSelfUpdate) + ": GitHub asks runner " + update_version(f.from_version, "(version unknown)") +
         " to update to " + update_version(f.to_version, "a newer version");
}

std::string update_bake(const UpdateFacts& f) { return "bake runner " + update_version(f.to_version, "the latest") + " into the image"; }

}  // namespace

bool is_update_exit(const ExitStatus& s) { return !s.signaled && !s.unknown && (s.code == 3 || s.code == 4); }

UpdateDecision decide_runner_update(const UpdateFacts& f) {
  if (!f.runner_owns_install) {
    // Root's installation in a sticky root: the runner cannot delete the root's scripts, so the
    // update fails at every refresh (or, had it got as far as exiting, would swap bin/ under a
    // manifest that forbids it). Not waited for, never retried.
    const std::string why = f.sign == UpdateSign::kFailedInPlace
                                ? "it cannot: the installation is root's (" + f.failure + ")"
                                : "the Listener exited to swap bin/, but the installation is root's: the update is stopped";
    return {UpdateStep::kFail, update_asked(f) + "; " + why + "; " + update_bake(f)};
  }
  if (f.sign == UpdateSign::kFailedInPlace) {
    // The runner's own choice in its own root: it goes on with the old version, as it would under
    // run.sh; a second failure in one assignment is one loop too many.
    if (f.failures_before == 0) {
      return {UpdateStep::kContinue, "the runner's update to " + update_version(f.to_version, "a newer version") +
                                         " failed (" + f.failure + "); it goes on listening"};
    }
    return {UpdateStep::kFail, update_asked(f) + "; the update failed again (" + f.failure + "); " + update_bake(f)};
  }
  if (f.updates_done > 0) {
    return {UpdateStep::kFail, update_asked(f) + " again after it updated in this assignment; " + update_bake(f)};
  }
  switch (f.marker) {
    case UpdateMarker::kPending:
      return {UpdateStep::kWait, "the runner is updating itself to " + update_version(f.to_version, "a newer version") +
                                     ": waiting for update.finished, as run-helper.sh does"};
    case UpdateMarker::kFound:
      return {UpdateStep::kRestart, "the runner updated itself to " + update_version(f.to_version, "a newer version") +
                                        "; starting it again for the same assignment"};
    case UpdateMarker::kNeverCame:
      break;
  }
  return {UpdateStep::kFail, update_asked(f) + "; update.finished did not appear within " +
                                 std::to_string(kUpdateWaitChecks) + " s (update.sh's log is _diag/SelfUpdate-*.log.failed); " +
                                 update_bake(f)};
}

}  // namespace runpool::agent
