// Where run assignments (run_assignment.h) live: the state table's "run/<label>" items
// (DynamoRunAssignmentStore) and an in-memory store for tests (MemoryRunAssignmentStore), one
// contract suite run against both (tests/integration/run_assignment_store_test.cc).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/aws/dynamodb.h"
#include "common/pool/run_assignment.h"

namespace runpool::pool {

class RunAssignmentStore {
 public:
  virtual ~RunAssignmentStore() = default;
  // Writes it whole, whether or not the label had one (a retried provision step writes the same).
  virtual void put(const RunAssignment& a) = 0;
  // Strongly consistent; nullopt when the label has none.
  virtual std::optional<RunAssignment> get(const std::string& label) = 0;
  // Marks it ended at `now_ms` (kept for re-runs). false: the label has none.
  virtual bool end(const std::string& label, int64_t now_ms) = 0;
  // Sets its attempt and ended_ms where its attempt is still `read_attempt`: one refresh of
  // several serves a re-run; false when another came first (or the label has none).
  virtual bool move_attempt(const std::string& label, int64_t read_attempt, int64_t attempt, int64_t ended_ms) = 0;
  // Removes it where it ended at `ended_ms` (retention). false: gone already, or served again since.
  virtual bool remove(const std::string& label, int64_t ended_ms) = 0;
  // Every one, by label. On DynamoDB a read of the table's by_label index: eventually consistent
  // (a write of the last second may not show yet; the writes above are conditional on what they
  // read, so a stale list cannot make two of them both land).
  virtual std::vector<RunAssignment> list() = 0;
};

// In memory. Does not model: requests, their failures and latency, the item's attribute names.
class MemoryRunAssignmentStore final : public RunAssignmentStore {
 public:
  void put(const RunAssignment& a) override;
  std::optional<RunAssignment> get(const std::string& label) override;
  bool end(const std::string& label, int64_t now_ms) override;
  bool move_attempt(const std::string& label, int64_t read_attempt, int64_t attempt, int64_t ended_ms) override;
  bool remove(const std::string& label, int64_t ended_ms) override;
  std::vector<RunAssignment> list() override;

 private:
  std::mutex mu_;
  std::map<std::string, RunAssignment> items_;
};

class DynamoRunAssignmentStore final : public RunAssignmentStore {
 public:
  DynamoRunAssignmentStore(aws::DynamoDbClient& db, std::string table);
  void put(const RunAssignment& a) override;
  std::optional<RunAssignment> get(const std::string& label) override;
  bool end(const std::string& label, int64_t now_ms) override;
  bool move_attempt(const std::string& label, int64_t read_attempt, int64_t attempt, int64_t ended_ms) override;
  bool remove(const std::string& label, int64_t ended_ms) override;
  std::vector<RunAssignment> list() override;

 private:
  aws::DynamoDbClient& db_;
  std::string table_;
};

}  // namespace runpool::pool
