#include "common/pool/memory_state_table.h"

#include <algorithm>
#include <stdexcept>

namespace runpool::pool {

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

// One copy in memory: every read is current.
ScanStats MemoryStateTable::scan_eventually(const std::function<void(const InstanceRecord&)>& visit) {
  return scan(visit);
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
  if ((a.signal || a.spot_job || a.take_reg_token || a.take_remove_token || a.take_jit_config) && !a.generation) {
    throw std::invalid_argument("an agent signal, spot job or token removal must name its generation");
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
