// StateTable in memory, with the same conditional semantics as DynamoStateTable, for fast tests
// of the controller's and agent's logic. Thread-safe. tests/integration/state_table_test.cc runs
// one contract suite against both.
//
// What it does not model: items that are not records (DynamoStateTable skips them in scans and
// reads); the key's instance-id check (`record_key` refuses what cannot be an instance id); requests
// and their limits (100 keys per BatchGetItem, scan and query pages: a scan is always one page);
// throttling, transient errors and lost answers (tests inject those with a wrapping table or the
// local cloud's faults); the table's creation and existence; item size limits.
#pragma once

#include <map>
#include <mutex>

#include "common/pool/record_update.h"
#include "common/pool/state_table.h"

namespace runpool::pool {

class MemoryStateTable final : public StateTable {
 public:
  std::optional<InstanceRecord> get(const std::string& instance_id) override;
  std::map<std::string, InstanceRecord> get_many(const std::vector<std::string>& instance_ids) override;
  bool create(const InstanceRecord& record) override;
  bool transition(const std::string& instance_id, const Expect& expect, const LifecycleChange& change) override;
  std::vector<InstanceRecord> by_label(const std::string& label) override;
  ScanStats scan(const std::function<void(const InstanceRecord&)>& visit) override;
  ScanStats scan_eventually(const std::function<void(const InstanceRecord&)>& visit) override;
  bool remove(const std::string& instance_id, const Expect& expect) override;
  bool report(const std::string& instance_id, const AgentReport& report) override;

  // Calls made, for tests that count requests: conditional writes attempted, get()s, get_many()s.
  size_t writes() const;
  size_t gets() const;
  size_t batch_gets() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, InstanceRecord> records_;
  size_t writes_ = 0, gets_ = 0, batch_gets_ = 0;
};

}  // namespace runpool::pool
