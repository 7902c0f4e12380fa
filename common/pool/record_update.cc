#include "common/pool/record_update.h"

#include <algorithm>

namespace runpool::pool {

bool meets(const InstanceRecord& r, const Expect& e) {
  if (!e.states.empty() && std::find(e.states.begin(), e.states.end(), r.state) == e.states.end()) return false;
  if (e.generation && r.generation != *e.generation) return false;
  if (e.label && r.label != *e.label) return false;
  if (e.signal && r.signal != *e.signal) return false;
  if (e.signal_generation && (r.signal == AgentSignal::kNone || r.signal_generation != *e.signal_generation)) {
    return false;
  }
  if (e.agent_not_busy && r.busy) return false;
  if (e.unmarked && (r.retire_pending || r.kept_until_ms != 0)) return false;
  if (e.not_awaited_at && r.awaited_until_ms > *e.not_awaited_at) return false;
  if (e.spot_rerun && r.spot_rerun != *e.spot_rerun) return false;
  return true;
}

void apply(InstanceRecord& r, const LifecycleChange& c) {
  if (c.state) r.state = *c.state;
  if (c.generation) r.generation = *c.generation;
  if (c.label) r.label = *c.label;
  if (c.deadline_ms) r.deadline_ms = *c.deadline_ms;
  if (c.hard_deadline_ms) r.hard_deadline_ms = *c.hard_deadline_ms;
  if (c.state_since_ms) r.state_since_ms = *c.state_since_ms;
  if (c.reg_token) r.reg_token = *c.reg_token;
  if (c.reg_url) r.reg_url = *c.reg_url;
  if (c.remove_token) r.remove_token = *c.remove_token;
  if (c.jit_config) r.jit_config = *c.jit_config;
  if (c.advertise_pending) r.advertise_pending = *c.advertise_pending;
  if (c.orphan_since_ms) r.orphan_since_ms = *c.orphan_since_ms;
  if (c.kept_until_ms) r.kept_until_ms = *c.kept_until_ms;
  if (c.bypass_removal) r.bypass_removal = *c.bypass_removal;
  if (c.retire_pending) r.retire_pending = *c.retire_pending;
  if (c.reuse_scope_key) r.reuse_scope_key = *c.reuse_scope_key;
  if (c.awaited_until_ms) r.awaited_until_ms = *c.awaited_until_ms;
  if (c.spot_rerun && !c.spot_rerun->empty()) r.spot_rerun = *c.spot_rerun;
  if (c.spot_run && !c.spot_run->empty()) r.spot_run = *c.spot_run;
}

void apply(InstanceRecord& r, const AgentReport& a) {
  if (a.heartbeat_ms) r.heartbeat_ms = *a.heartbeat_ms;
  if (a.busy) r.busy = *a.busy;
  if (a.signal) {
    r.signal = *a.signal;
    r.signal_generation = *a.generation;
  }
  if (a.signal_detail) r.signal_detail = a.signal_detail->empty() ? "-" : *a.signal_detail;
  if (a.runner_id) r.runner_id = *a.runner_id;
  if (a.runner_name && !a.runner_name->empty()) r.runner_name = *a.runner_name;
  if (a.agent_version && !a.agent_version->empty()) r.agent_version = *a.agent_version;
  if (a.runner_version && !a.runner_version->empty()) r.runner_version = *a.runner_version;
  if (a.pre_run && *a.pre_run != PreRun::kNone) r.pre_run = *a.pre_run;
  if (a.pre_run_detail) r.pre_run_detail = a.pre_run_detail->empty() ? "-" : *a.pre_run_detail;
  if (a.spot_job && !a.spot_job->empty()) {
    r.spot_job = *a.spot_job;
    r.spot_generation = *a.generation;
  }
  if (a.spot_job_result && !a.spot_job_result->empty()) r.spot_job_result = *a.spot_job_result;
  if (a.take_reg_token) r.reg_token = Secret();
  if (a.take_remove_token) r.remove_token = Secret();
  if (a.take_jit_config) r.jit_config = Secret();
  if (a.take_open_key) r.open_key = Secret();
}

}  // namespace runpool::pool
