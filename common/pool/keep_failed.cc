#include "common/pool/keep_failed.h"

#include <algorithm>

#include "common/clock.h"

namespace runpool::pool {

KeepVerdict keep_verdict(const InstanceRecord& r, int64_t now_ms, int64_t keep_failed_ms, bool unregistered_failed) {
  if (r.state == State::kTerminating || r.state == State::kTerminated || r.state == State::kIdle) {
    return KeepVerdict::kNotKept;
  }
  if (r.kept_until_ms != 0) return now_ms < r.kept_until_ms ? KeepVerdict::kKept : KeepVerdict::kKeepOver;
  if (keep_failed_ms <= 0) return KeepVerdict::kNotKept;
  if (agent_reported(r, AgentSignal::kFailed)) return KeepVerdict::kKeep;
  const bool before_running = r.state == State::kCreated || r.state == State::kClaimed;
  if (unregistered_failed && before_running && !agent_reported(r, AgentSignal::kRegistered)) return KeepVerdict::kKeep;
  return KeepVerdict::kNotKept;
}

Step keep_for_inspection(const InstanceRecord& r, int64_t now_ms, int64_t keep_ms) {
  Step s;
  s.expect.states = {r.state};
  s.expect.generation = r.generation;
  const int64_t until = now_ms + keep_ms;
  s.change.kept_until_ms = until;
  s.change.deadline_ms = std::max(r.deadline_ms, until);
  if (r.hard_deadline_ms != 0) s.change.hard_deadline_ms = std::max(r.hard_deadline_ms, until);
  s.change.reg_token = Secret();
  s.change.jit_config = Secret();
  return s;
}

std::string kept_description(const InstanceRecord& r) {
  return "kept for inspection until " + format_iso8601(from_epoch_ms(r.kept_until_ms)) + " (keep_failed)";
}

}  // namespace runpool::pool
