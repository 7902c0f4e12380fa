#include "common/pool/scale_set_upkeep.h"

#include "common/pool/agent_text.h"
#include "common/pool/runner_name.h"
#include "common/pool/transitions.h"

namespace runpool::pool {
namespace {

bool serves(const InstanceRecord& r, const std::string& pool, const std::string& label) {
  return r.pool == pool && !r.label.empty() && r.label == label && !r.shared;
}

// The set's runner of this assignment is the one named for the record's generation: a
// JobCompleted of an earlier generation says nothing about the current one.
bool finished_now(const InstanceRecord& r, const std::set<std::string>& finished) {
  return finished.count(runner_name(r.pool, r.instance_id, r.generation)) > 0;
}

bool registered_now(const InstanceRecord& r) { return agent_reported(r, AgentSignal::kRegistered); }

}  // namespace

const char* upkeep_kind_name(UpkeepKind k) {
  switch (k) {
    case UpkeepKind::kMarkRunning: return "mark-running";
    case UpkeepKind::kDrainFinished: return "drain-finished";
    case UpkeepKind::kSettle: return "settle";
    case UpkeepKind::kRetireFailed: return "retire-failed";
  }
  return "?";
}

std::vector<ScaleSetRunner> scale_set_runners(const std::vector<InstanceRecord>& records, const std::string& pool,
                                              const std::string& label, const std::set<std::string>& finished,
                                              int64_t now_ms) {
  std::vector<ScaleSetRunner> out;
  for (const InstanceRecord& r : records) {
    if (!serves(r, pool, label)) continue;
    ScaleSetRunner s{r.instance_id, RunnerPhase::kStarting, r.state_since_ms};
    switch (r.state) {
      case State::kCreated:
      case State::kClaimed:
      case State::kRunning:
        if (finished_now(r, finished)) {
          s.phase = RunnerPhase::kEnding;
          s.since_ms = now_ms;
        } else if (agent_reported(r, AgentSignal::kFailed)) {
          s.phase = RunnerPhase::kEnding;
        } else if (r.state == State::kRunning || registered_now(r)) {
          s.phase = r.busy ? RunnerPhase::kBusy : RunnerPhase::kArmed;
        }
        break;
      case State::kDraining:
        s.phase = RunnerPhase::kEnding;
        break;
      case State::kIdle:
      case State::kTerminating:
      case State::kTerminated:
        continue;
    }
    out.push_back(s);
  }
  return out;
}

std::vector<Upkeep> plan_upkeep(const std::vector<InstanceRecord>& records, const std::string& pool,
                                const std::string& label, const std::set<std::string>& finished) {
  std::vector<Upkeep> out;
  for (const InstanceRecord& r : records) {
    if (!serves(r, pool, label)) continue;
    if (r.kept_until_ms != 0) continue;  // a failed instance kept for inspection: refresh ends it
    const bool live = r.state == State::kCreated || r.state == State::kClaimed || r.state == State::kRunning;
    if ((live || r.state == State::kDraining) && agent_reported(r, AgentSignal::kFailed)) {
      out.push_back({UpkeepKind::kRetireFailed, r, "its agent reported failed: " + agent_text(r.signal_detail)});
    } else if (r.state == State::kDraining && agent_reported(r, AgentSignal::kDrained)) {
      out.push_back({UpkeepKind::kSettle, r, "drained"});
    } else if (live && finished_now(r, finished)) {
      out.push_back({UpkeepKind::kDrainFinished, r, "its runner's job completed"});
    } else if ((r.state == State::kCreated || r.state == State::kClaimed) && registered_now(r)) {
      out.push_back({UpkeepKind::kMarkRunning, r, "its runner is listening"});
    }
  }
  return out;
}

}  // namespace runpool::pool
