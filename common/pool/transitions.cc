#include "common/pool/transitions.h"

#include "common/pool/record_codec.h"

namespace runpool::pool {

namespace {

// An assignment's credentials leave the record with it, whether the agent took them or not.
void drop_assignment_secrets(LifecycleChange& c) {
  c.reg_token = Secret();
  c.remove_token = Secret();
  c.jit_config = Secret();
}

// A token as the record holds it: sealed for `generation` when the instance has a seal key.
Secret as_stored(const InstanceRecord& r, int64_t generation, const char* field, const Secret& value) {
  if (value.empty() || r.seal_key.empty()) return value;
  return seal_field(r.seal_key, generation, field, value);
}

}  // namespace

void give_seal_keys(InstanceRecord& r, const SealKeys& keys) {
  r.seal_key = keys.public_key;
  r.open_key = keys.private_key;
  r.reg_token = as_stored(r, r.generation, attr::kRegToken, r.reg_token);
  r.jit_config = as_stored(r, r.generation, attr::kJitConfig, r.jit_config);
}

InstanceRecord launched_record(const std::string& instance_id, const std::string& pool, const std::string& label,
                               const std::string& resource_class, UsageClass usage, const std::string& type,
                               const Secret& reg_token, const std::string& reg_url, int64_t now_ms,
                               const Timeouts& t) {
  InstanceRecord r;
  r.instance_id = instance_id;
  r.pool = pool;
  r.state = State::kCreated;
  r.generation = 1;
  r.label = label;
  r.resource_class = resource_class;
  r.usage_class = usage;
  r.instance_type = type;
  r.reg_token = reg_token;
  r.reg_url = reg_url;
  r.created_ms = now_ms;
  r.state_since_ms = now_ms;
  r.deadline_ms = now_ms + t.boot_ms;
  return r;
}

Step claim(const InstanceRecord& idle, const std::string& label, const Secret& reg_token, const std::string& reg_url,
           int64_t now_ms, const Timeouts& t) {
  Step s;
  s.expect.states = {State::kIdle};
  s.expect.generation = idle.generation;
  s.expect.unmarked = true;  // a retire or keep mark written since the read wins
  s.change.state = State::kClaimed;
  s.change.generation = idle.generation + 1;
  s.change.label = label;
  s.change.reg_token = as_stored(idle, idle.generation + 1, attr::kRegToken, reg_token);
  s.change.reg_url = reg_url;
  s.change.deadline_ms = now_ms + t.registration_ms;
  s.change.state_since_ms = now_ms;
  s.change.advertise_pending = false;
  s.change.orphan_since_ms = 0;  // a mark was about the previous assignment
  return s;
}

Step claim_jit(const InstanceRecord& idle, const std::string& label, const Secret& jit_config, const std::string& reg_url,
               int64_t now_ms, const Timeouts& t) {
  Step s = claim(idle, label, Secret(), reg_url, now_ms, t);
  s.change.jit_config = as_stored(idle, idle.generation + 1, attr::kJitConfig, jit_config);
  return s;
}

Step mark_running(const InstanceRecord& r, int64_t now_ms, const Timeouts& t) {
  Step s;
  s.expect.states = {State::kCreated, State::kClaimed};
  s.expect.generation = r.generation;
  s.expect.label = r.label;
  s.expect.signal = AgentSignal::kRegistered;
  s.expect.signal_generation = r.generation;
  s.change.state = State::kRunning;
  s.change.deadline_ms = now_ms + t.max_runtime_ms;
  s.change.hard_deadline_ms = now_ms + t.max_runtime_ms + t.hard_grace_ms;
  s.change.state_since_ms = now_ms;
  return s;
}

Step start_drain(const InstanceRecord& r, const Secret& remove_token, int64_t now_ms, const Timeouts& t) {
  Step s;
  s.expect.states = {State::kCreated, State::kClaimed, State::kRunning};
  s.expect.generation = r.generation;
  if (!r.label.empty()) s.expect.label = r.label;
  s.change.state = State::kDraining;
  s.change.remove_token = as_stored(r, r.generation, attr::kRemoveToken, remove_token);
  s.change.deadline_ms = now_ms + t.drain_ms;
  // A drain that started from running keeps the hard deadline it had, if sooner.
  int64_t hard = now_ms + t.drain_ms;
  if (r.hard_deadline_ms != 0 && r.hard_deadline_ms < hard) hard = r.hard_deadline_ms;
  s.change.hard_deadline_ms = hard;
  s.change.state_since_ms = now_ms;
  return s;
}

bool wants_remove_token(const InstanceRecord& r) {
  return r.state == State::kDraining && r.remove_token.empty() && !agent_reported(r, AgentSignal::kDrained) &&
         !agent_reported(r, AgentSignal::kFailed);
}

Step refresh_remove_token(const InstanceRecord& r, const Secret& remove_token) {
  Step s;
  s.expect.states = {State::kDraining};
  s.expect.generation = r.generation;
  s.change.remove_token = as_stored(r, r.generation, attr::kRemoveToken, remove_token);
  return s;
}

Step drain_idle_shared(const InstanceRecord& r, const Secret& remove_token, int64_t now_ms, const Timeouts& t) {
  Step s = start_drain(r, remove_token, now_ms, t);
  s.expect.states = {State::kRunning};
  s.expect.agent_not_busy = true;
  return s;
}

Step mark_orphan(const InstanceRecord& r, int64_t now_ms) {
  Step s;
  s.expect.states = {r.state};
  s.expect.generation = r.generation;
  s.change.orphan_since_ms = now_ms;
  return s;
}

Step unmark_orphan(const InstanceRecord& r) {
  Step s;
  s.expect.generation = r.generation;
  s.change.orphan_since_ms = 0;
  return s;
}

Step set_bypass_removal(const InstanceRecord&, bool bypass) {
  Step s;  // an empty Expect: the item must exist, nothing more
  s.change.bypass_removal = bypass;
  return s;
}

Step mark_retire(const InstanceRecord& r) {
  Step s;
  s.expect.states = {r.state};
  s.expect.generation = r.generation;
  s.change.retire_pending = true;
  return s;
}

Step return_to_pool(const InstanceRecord& r, int64_t now_ms, const Timeouts& t, const std::string& reuse_scope_key) {
  Step s;
  s.expect.states = {State::kDraining};
  s.expect.generation = r.generation;
  s.expect.signal = AgentSignal::kDrained;
  s.expect.signal_generation = r.generation;
  s.expect.unmarked = true;  // a retire or keep mark written since the read wins
  s.change.state = State::kIdle;
  s.change.label = "";
  drop_assignment_secrets(s.change);
  s.change.deadline_ms = now_ms + t.idle_ttl_ms;
  s.change.hard_deadline_ms = 0;
  s.change.state_since_ms = now_ms;
  s.change.advertise_pending = true;
  s.change.orphan_since_ms = 0;  // drained and clean: whatever scale-down suspected is over
  s.change.reuse_scope_key = reuse_scope_key;
  s.change.awaited_until_ms = 0;  // the wait for its drain is over
  return s;
}

Step await_drain(const InstanceRecord& r, int64_t until_ms, int64_t now_ms) {
  Step s;
  s.expect.states = {State::kDraining};
  s.expect.generation = r.generation;
  s.expect.not_awaited_at = now_ms;
  s.change.awaited_until_ms = until_ms;
  return s;
}

Step advertised(const InstanceRecord& r) {
  Step s;
  s.expect.states = {State::kIdle};
  s.expect.generation = r.generation;
  s.change.advertise_pending = false;
  return s;
}

Step begin_terminate(const InstanceRecord& r, int64_t now_ms, const Timeouts& t) {
  Step s;
  s.expect.states = {r.state};
  s.expect.generation = r.generation;
  s.change.state = State::kTerminating;
  s.change.deadline_ms = now_ms + t.terminate_ms;
  s.change.state_since_ms = now_ms;
  drop_assignment_secrets(s.change);
  s.change.advertise_pending = false;
  return s;
}

Step close_record(const InstanceRecord& r, int64_t now_ms, const Timeouts& t) {
  Step s;
  s.expect.states = {r.state};
  s.expect.generation = r.generation;
  s.change.state = State::kTerminated;
  s.change.label = "";
  s.change.deadline_ms = now_ms + t.retention_ms;
  s.change.hard_deadline_ms = 0;
  s.change.state_since_ms = now_ms;
  drop_assignment_secrets(s.change);
  s.change.advertise_pending = false;
  return s;
}

bool deadline_passed(const InstanceRecord& r, int64_t now_ms) { return r.deadline_ms != 0 && now_ms >= r.deadline_ms; }

bool agent_reported(const InstanceRecord& r, AgentSignal s) {
  return r.signal == s && r.signal_generation == r.generation;
}

}  // namespace runpool::pool
