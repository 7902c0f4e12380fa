// StateTable on DynamoDB: every write one UpdateItem (or PutItem/DeleteItem) whose condition
// expression comes from Expect, every read a consistent GetItem, BatchGetItem (100 keys each) or a
// paginated Query/Scan.
#pragma once

#include "common/aws/dynamodb.h"
#include "common/pool/state_table.h"

namespace runpool::pool {

class DynamoStateTable final : public StateTable {
 public:
  // `instance_role_id`: the unique id (AROA…) of the role the pool's instances run with; every
  // record is stored under "<instance_role_id>:<instance id>" (common/pool/record_key.h). Throws
  // std::invalid_argument when it is not a role's unique id.
  DynamoStateTable(aws::DynamoDbClient& db, std::string table, std::string instance_role_id);

  std::optional<InstanceRecord> get(const std::string& instance_id) override;
  std::map<std::string, InstanceRecord> get_many(const std::vector<std::string>& instance_ids) override;
  bool create(const InstanceRecord& record) override;
  bool transition(const std::string& instance_id, const Expect& expect, const LifecycleChange& change) override;
  std::vector<InstanceRecord> by_label(const std::string& label) override;
  ScanStats scan(const std::function<void(const InstanceRecord&)>& visit) override;
  ScanStats scan_eventually(const std::function<void(const InstanceRecord&)>& visit) override;
  bool remove(const std::string& instance_id, const Expect& expect) override;
  bool report(const std::string& instance_id, const AgentReport& report) override;

  const std::string& table() const { return table_; }
  const std::string& instance_role_id() const { return instance_role_id_; }

  // The table's key schema and label index, for `init`.
  static aws::CreateTableRequest create_table_request(const std::string& table);

 private:
  aws::Item key_of(const std::string& instance_id) const;
  ScanStats scan_table(const std::function<void(const InstanceRecord&)>& visit, bool consistent);

  aws::DynamoDbClient& db_;
  std::string table_;
  std::string instance_role_id_;
};

}  // namespace runpool::pool
