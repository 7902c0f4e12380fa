#include "common/pool/handshake.h"

#include <fmt/format.h>

#include "common/aws/ec2_types.h"
#include "common/pool/agent_text.h"
#include "common/pool/transitions.h"

namespace runpool::pool {
namespace {

std::string seconds(int64_t ms) { return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0); }

bool dead_in_ec2(const std::string& ec2_state) {
  return aws::instance_gone(ec2_state) || aws::instance_stopped(ec2_state);
}

HandshakeDecision registered(const HandshakeFacts& f) {
  const InstanceRecord& w = *f.written;
  const InstanceRecord& r = *f.current;
  if (r.generation != w.generation || r.label != w.label) {
    return {Verdict::kMovedOn, "was taken over by another assignment"};
  }
  if (r.state == State::kRunning) return {Verdict::kDone, ""};
  if (r.state != State::kCreated && r.state != State::kClaimed) {
    return {Verdict::kFail, fmt::format("is {} ({})", state_name(r.state),
                                        r.signal_detail.empty() ? "before registering" : agent_text(r.signal_detail))};
  }
  if (agent_reported(r, AgentSignal::kFailed)) return {Verdict::kFail, "its agent failed to register: " + agent_text(r.signal_detail)};
  if (agent_reported(r, AgentSignal::kInterrupted)) {
    return {Verdict::kFail, "was interrupted before registering: " + agent_text(r.signal_detail)};
  }
  if (agent_reported(r, AgentSignal::kRegistered)) return {Verdict::kWrite, ""};
  // An instance that died (spot reclaimed, killed, its agent's self-termination) never
  // registers: EC2 says so long before any deadline does.
  if (dead_in_ec2(f.ec2_state)) return {Verdict::kGone, "is " + f.ec2_state + " in EC2", true};
  // A claimed instance's agent was beating when it was claimed: silence now means it is gone.
  if (f.claimed_warm && f.max_heartbeat_age_ms > 0 && r.heartbeat_ms != 0 &&
      f.now_ms - r.heartbeat_ms > f.max_heartbeat_age_ms) {
    return {Verdict::kFail, "its agent has been silent for " + seconds(f.now_ms - r.heartbeat_ms)};
  }
  return {Verdict::kWait, ""};
}

HandshakeDecision drained(const HandshakeFacts& f) {
  const InstanceRecord& w = *f.written;
  const InstanceRecord& r = *f.current;
  if (r.generation != w.generation || r.state == State::kIdle) {
    return {Verdict::kMovedOn, "was returned to the pool by another runpoolctl"};
  }
  if (r.state == State::kTerminating || r.state == State::kTerminated) {
    return {Verdict::kGone, "is " + std::string(state_name(r.state))};
  }
  if (r.state == State::kDraining && agent_reported(r, AgentSignal::kDrained)) return {Verdict::kDone, ""};
  if (agent_reported(r, AgentSignal::kFailed)) return {Verdict::kFail, "its agent failed while draining: " + agent_text(r.signal_detail)};
  if (wants_remove_token(r)) return {Verdict::kWrite, ""};
  // No agent is left to drain it: waiting for `drained` would only wait out the timeout.
  if (dead_in_ec2(f.ec2_state)) return {Verdict::kGone, "is " + f.ec2_state + " in EC2", true};
  return {Verdict::kWait, ""};
}

}  // namespace

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kDone: return "done";
    case Verdict::kWrite: return "write";
    case Verdict::kWait: return "wait";
    case Verdict::kFail: return "fail";
    case Verdict::kGone: return "gone";
    case Verdict::kMovedOn: return "moved-on";
  }
  return "?";
}

std::string handshake_problem(const std::string& instance_id, const HandshakeDecision& d) {
  const bool verb = d.reason.rfind("is ", 0) == 0 || d.reason.rfind("was ", 0) == 0;
  return "instance " + instance_id + (verb ? " " : ": ") + d.reason;
}

HandshakeDecision judge_handshake(const HandshakeFacts& f) {
  if (!f.current) return {Verdict::kGone, "its record disappeared"};
  return f.awaited == Awaited::kRegistered ? registered(f) : drained(f);
}

}  // namespace runpool::pool
