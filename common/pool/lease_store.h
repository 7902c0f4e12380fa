// Where leases (lease.h) live: a small interface with the state table's item as the real one
// (DynamoLeaseStore) and an in-memory one for tests (MemoryLeaseStore), one contract suite run
// against both (tests/integration/lease_store_test.cc). Writes are conditional on the generation
// read, and a lease item is never deleted, so generations only grow: a write based on an old read
// can never land on a newer tenure.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/aws/dynamodb.h"
#include "common/pool/lease.h"

namespace runpool::pool {

class LeaseStore {
 public:
  virtual ~LeaseStore() = default;
  // Strongly consistent; nullopt when the lease was never written.
  virtual std::optional<Lease> get(const std::string& name) = 0;
  // Writes `lease` where there is no item yet. false: there is one.
  virtual bool create(const Lease& lease) = 0;
  // Writes `next` where the item's generation is `read_generation` (a renewal, a take-over, or a
  // release: the holder's own lease with expires_ms 0). false: another write came first.
  virtual bool replace(const Lease& next, int64_t read_generation) = 0;
  // Every lease whose name starts with `prefix`, by name (strongly consistent where the store
  // allows: a scan of the table is).
  virtual std::vector<Lease> list(const std::string& prefix) = 0;
};

// In memory. Does not model: requests, their failures and latency, the item's attribute names.
class MemoryLeaseStore final : public LeaseStore {
 public:
  std::optional<Lease> get(const std::string& name) override;
  bool create(const Lease& lease) override;
  bool replace(const Lease& next, int64_t read_generation) override;
  std::vector<Lease> list(const std::string& prefix) override;

 private:
  std::mutex mu_;
  std::map<std::string, Lease> leases_;
};

// In the pool's state table, under the key "lease/<name>": never an instance's key, so the
// instance policy's leading-keys condition keeps every instance away from it, and the record
// readers skip it (is_lease_key).
class DynamoLeaseStore final : public LeaseStore {
 public:
  DynamoLeaseStore(aws::DynamoDbClient& db, std::string table);
  std::optional<Lease> get(const std::string& name) override;
  bool create(const Lease& lease) override;
  bool replace(const Lease& next, int64_t read_generation) override;
  std::vector<Lease> list(const std::string& prefix) override;

 private:
  aws::DynamoDbClient& db_;
  std::string table_;
};

inline constexpr std::string_view kLeaseKeyPrefix = "lease/";
inline bool is_lease_key(std::string_view key) { return key.substr(0, kLeaseKeyPrefix.size()) == kLeaseKeyPrefix; }

}  // namespace runpool::pool
