#include "common/pool/memory_state_table.h"

#include <algorithm>
#include <stdexcept>

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
  if (c.advertise_pending) r.advertise_pending = *c.advertise_pending;
  if (c.orphan_since_ms) r.orphan_since_ms = *c.orphan_since_ms;
  if (c.bypass_removal) r.bypass_removal = *c.bypass_removal;
  if (c.retire_pending) r.retire_pending = *c.retire_pending;
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
  if (a.take_reg_token) r.reg_token = Secret();
  if (a.take_remove_token) r.remove_token = Secret();
}

std::optional<InstanceRecord> MemoryStateTable::get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  ++gets_;
  auto it = records_.find(id);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, InstanceRecord> MemoryStateTable::get_many(const std::vector<std::string>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  ++batch_gets_;
  std::map<std::string, InstanceRecord> out;
  for (const auto& id : ids) {
    if (auto it = records_.find(id); it != records_.end()) out.emplace(id, it->second);
  }
  return out;
}

bool MemoryStateTable::create(const InstanceRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  ++writes_;
  return records_.emplace(record.instance_id, record).second;
}

bool MemoryStateTable::transition(const std::string& id, const Expect& expect, const LifecycleChange& change) {
  std::lock_guard<std::mutex> lock(mu_);
  ++writes_;
  auto it = records_.find(id);
  if (it == records_.end() || !meets(it->second, expect)) return false;
  apply(it->second, change);
  return true;
}

std::vector<InstanceRecord> MemoryStateTable::by_label(const std::string& label) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<InstanceRecord> out;
  for (const auto& [id, r] : records_) {
    if (!label.empty() && r.label == label) out.push_back(r);
  }
  return out;
}

ScanStats MemoryStateTable::scan(const std::function<void(const InstanceRecord&)>& visit) {
  std::vector<InstanceRecord> copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, r] : records_) copy.push_back(r);
  }
  ScanStats stats;
  stats.pages = 1;
  for (const auto& r : copy) {
    ++stats.items;
    visit(r);
  }
  return stats;
}

bool MemoryStateTable::remove(const std::string& id, const Expect& expect) {
  std::lock_guard<std::mutex> lock(mu_);
  ++writes_;
  auto it = records_.find(id);
  if (it == records_.end() || !meets(it->second, expect)) return false;
  records_.erase(it);
  return true;
}

bool MemoryStateTable::report(const std::string& id, const AgentReport& a) {
  if ((a.signal || a.take_reg_token || a.take_remove_token) && !a.generation) {
    throw std::invalid_argument("an agent signal or token removal must name its generation");
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++writes_;
  auto it = records_.find(id);
  if (it == records_.end()) return false;
  if (a.generation && it->second.generation != *a.generation) return false;
  apply(it->second, a);
  return true;
}

size_t MemoryStateTable::writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writes_;
}

size_t MemoryStateTable::gets() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gets_;
}

size_t MemoryStateTable::batch_gets() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batch_gets_;
}

}  // namespace runpool::pool
