// StateTable in memory, with the same conditional semantics as DynamoStateTable, for fast tests
// of the controller's and agent's logic. Thread-safe.
#pragma once

#include <map>
#include <mutex>

#include "common/pool/state_table.h"

namespace runpool::pool {

// Whether `r` meets `e` (the item exists: `r` is it).
bool meets(const InstanceRecord& r, const Expect& e);
// Applies a lifecycle change to a record.
void apply(InstanceRecord& r, const LifecycleChange& c);
// Applies an agent report to a record (the caller checked the generation).
void apply(InstanceRecord& r, const AgentReport& a);

class MemoryStateTable final : public StateTable {
 public:
  std::optional<InstanceRecord> get(const std::string& instance_id) override;
  bool create(const InstanceRecord& record) override;
  bool transition(const std::string& instance_id, const Expect& expect, const LifecycleChange& change) override;
  std::vector<InstanceRecord> by_label(const std::string& label) override;
  ScanStats scan(const std::function<void(const InstanceRecord&)>& visit) override;
  bool remove(const std::string& instance_id, const Expect& expect) override;
  bool report(const std::string& instance_id, const AgentReport& report) override;

  size_t writes() const;  // conditional writes attempted, for tests that count requests

 private:
  mutable std::mutex mu_;
  std::map<std::string, InstanceRecord> records_;
  size_t writes_ = 0;
};

}  // namespace runpool::pool
