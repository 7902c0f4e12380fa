// A runner that updates itself: the agent's part of run-helper.sh (decide_runner_update,
// runner_update.h says what the runner does and why the agent lets it through only where the
// runner owns its installation).
#include <spdlog/spdlog.h>

#include "agent/agent_loop.h"

namespace runpool::agent {

UpdateFacts AgentLoop::update_facts(UpdateSign sign, UpdateMarker marker) const {
  UpdateFacts f;
  f.sign = sign;
  f.marker = marker;
  f.runner_owns_install = host_.runner_owns_installation();
  f.updates_done = as_.updates_done;
  f.failures_before = as_.update_failures;
  f.from_version = as_.runner_version;
  f.to_version = as_.update_to;
  return f;
}

void AgentLoop::on_update_failed(const std::string& words) {
  if (as_.failed || as_.stopping) return;
  UpdateFacts f = update_facts(UpdateSign::kFailedInPlace, UpdateMarker::kPending);
  f.failure = words;
  const UpdateDecision d = decide_runner_update(f);
  ++as_.update_failures;
  if (d.what == UpdateStep::kFail) {
    fail_assignment(d.reason);
    return;
  }
  spdlog::warn("{}", d.reason);
}

void AgentLoop::on_update_exit(const ExitStatus& status, const std::string& tail) {
  activity_ = RunnerActivity{};
  job_track_ = JobTrack{};
  set_busy(false);
  const UpdateDecision d = decide_runner_update(update_facts(UpdateSign::kExited, UpdateMarker::kPending));
  if (d.what == UpdateStep::kWait) {
    // update.sh is a plain child of the Listener, in its process group: the runner user's
    // processes are left running (a restart's cleanup would end the update half-way).
    spdlog::warn("{} (the Listener ended: {})", d.reason, describe(status));
    as_.update_wait_until = steady() + kUpdateWaitInterval * kUpdateWaitChecks;
    return;
  }
  // fail_assignment ends the runner user's processes, update.sh with them, before it swaps bin/.
  fail_assignment(d.reason + " (the Listener ended: " + describe(status) + ")" + (tail.empty() ? "" : ": " + tail));
}

bool AgentLoop::await_update() {
  const bool found = host_.take_update_finished();
  if (!found && steady() < *as_.update_wait_until) return false;
  as_.update_wait_until.reset();
  const UpdateDecision d =
      decide_runner_update(update_facts(UpdateSign::kExited, found ? UpdateMarker::kFound : UpdateMarker::kNeverCame));
  if (d.what == UpdateStep::kRestart) {
    spdlog::info("{}", d.reason);
    ++as_.updates_done;
    as_.runner_version.clear();
    return true;
  }
  fail_assignment(d.reason);
  return false;
}

}  // namespace runpool::agent
