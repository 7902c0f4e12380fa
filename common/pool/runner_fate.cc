#include "common/pool/runner_fate.h"

namespace runpool::pool {

std::string runner_left_detail(const std::string& name, int64_t id, const std::string& why) {
  return std::string(kRunnerLeftRegistered) + name + " (id " + std::to_string(id) + "): " + why;
}

bool runner_left_registered(const InstanceRecord& r) {
  if (r.signal_generation != r.generation) return false;
  if (r.signal == AgentSignal::kFailed) return true;
  return r.signal == AgentSignal::kDrained && r.signal_detail.rfind(kRunnerLeftRegistered, 0) == 0;
}

std::string_view runner_fate_name(RunnerFate f) {
  switch (f) {
    case RunnerFate::kDeregisteredByAgent: return "deregistered-by-agent";
    case RunnerFate::kDeletedByController: return "deleted-by-runpoolctl";
    case RunnerFate::kAlreadyGone: return "already-gone";
    case RunnerFate::kNoRunner: return "no-runner";
    case RunnerFate::kLeftRegistered: return "left-registered";
  }
  return "?";
}

RunnerFateDecision decide_runner_fate(const RunnerFateFacts& f) {
  const std::string agent = f.agent_detail.empty() ? "" : " (agent: " + f.agent_detail + ")";
  if (f.listing == GithubListing::kUnknown) {
    const std::string why = std::string(f.agent_left_runner ? "its agent left its runner registered"
                                                            : "its agent says its runner is deregistered") +
                            ", but GitHub could not be asked for it (" +
                            (f.delete_error.empty() ? "no answer" : f.delete_error) + ")";
    if (f.deadline_forces) return {false, RunnerFate::kLeftRegistered, true, why + "; the hard deadline forces the instance out"};
    return {false, RunnerFate::kLeftRegistered, false, why + "; the instance is left for the next pass or refresh"};
  }
  if (!f.agent_left_runner && f.listing == GithubListing::kAbsent) {
    return {false, RunnerFate::kDeregisteredByAgent, true, "runner deregistered by its agent"};
  }
  // The agent left it, or its word is contradicted (still listed): removed as a left one.
  if (f.runner_id == 0) {
    return {false, RunnerFate::kNoRunner, true, "GitHub lists no runner of this assignment: nothing to remove" + agent};
  }
  const std::string runner = "runner " + std::to_string(f.runner_id);
  switch (f.deleted) {
    case ControllerDelete::kNotTried: return {true, RunnerFate::kLeftRegistered, false, ""};
    case ControllerDelete::kDeleted:
      return {false, RunnerFate::kDeletedByController, true,
              (f.agent_left_runner ? "the agent could not deregister " : "GitHub still listed ") + runner +
                  "; runpoolctl deleted it" + agent};
    case ControllerDelete::kAlreadyGone:
      return {false, RunnerFate::kAlreadyGone, true, runner + " was already gone from GitHub" + agent};
    case ControllerDelete::kBusy:
    case ControllerDelete::kFailed: break;
  }
  const std::string why = runner + " is still registered: neither its agent" + agent +
                          " nor runpoolctl (" + (f.delete_error.empty() ? "refused" : f.delete_error) +
                          ") could remove it";
  if (f.deadline_forces) {
    return {false, RunnerFate::kLeftRegistered, true,
            why + "; the hard deadline forces the instance out, refresh's ghost sweep removes the runner"};
  }
  return {false, RunnerFate::kLeftRegistered, false, why + "; the instance is left for the next pass or refresh"};
}

}  // namespace runpool::pool
