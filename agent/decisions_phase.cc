#include "agent/decisions.h"

#include <algorithm>

namespace runpool::agent {

std::string_view phase_event_name(PhaseEvent e) {
  switch (e) {
    case PhaseEvent::kConfigured: return "configured";
    case PhaseEvent::kServing: return "serving";
    case PhaseEvent::kFailed: return "failed";
    case PhaseEvent::kDrainBegun: return "drain begun";
    case PhaseEvent::kListenerGone: return "listener gone";
    case PhaseEvent::kRunnerDone: return "runner done";
    case PhaseEvent::kCleaned: return "cleaned";
    case PhaseEvent::kTerminating: return "terminating";
  }
  return "?";
}

AgentState advance(AgentState s, PhaseEvent e, int64_t generation) {
  switch (e) {
    case PhaseEvent::kConfigured:
      s.phase = Phase::kStopped;  // until it is known to listen: stopping it means deregistering it
      s.generation = generation;
      break;
    case PhaseEvent::kServing:
      s.phase = Phase::kServing;
      s.generation = generation;
      break;
    case PhaseEvent::kFailed:
    case PhaseEvent::kListenerGone:
      s.phase = Phase::kStopped;
      break;
    case PhaseEvent::kDrainBegun:
      if (s.phase == Phase::kServing) s.phase = Phase::kDraining;
      break;
    case PhaseEvent::kRunnerDone:
      // Left to the controller's drain; a drain or stop already under way goes on as it is.
      if (s.phase == Phase::kServing) s.phase = Phase::kStopped;
      break;
    case PhaseEvent::kCleaned:
      s.last_served = std::max(s.last_served, s.generation);
      s.phase = Phase::kIdle;
      s.next_ready = false;  // cleaning removed the job user
      break;
    case PhaseEvent::kTerminating:
      s.phase = Phase::kTerminating;
      break;
  }
  return s;
}

}  // namespace runpool::agent
