// A DynamoDB client on the local cloud's dynalite (through its SigV4-checking proxy, as the
// controller) with one state table made the way `runpoolctl init` makes it: the fixture of the
// contract suites that run the DynamoDB implementations (state table, leases) beside their
// in-memory ones. One per test process and table name.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "common/aws/dynamodb.h"
#include "common/pool/dynamo_state_table.h"
#include "tests/support/local_cloud.h"

namespace runpool::testing {

class StateTableDb {
 public:
  static StateTableDb& shared(const std::string& table) {
    static std::map<std::string, std::unique_ptr<StateTableDb>> dbs;
    auto& db = dbs[table];
    if (!db) db.reset(new StateTableDb(table));
    return *db;
  }

  aws::DynamoDbClient& db() { return *db_; }
  const aws::AwsCaller& caller() const { return *caller_; }
  const std::string& table() const { return table_; }

 private:
  explicit StateTableDb(std::string table) : table_(std::move(table)) {
    auto& cloud = LocalCloud::shared();
    creds_ = std::make_unique<aws::StaticCredentialsProvider>(cloud.controller_credentials());
    caller_ = std::make_unique<aws::AwsCaller>(http_, *creds_, system_clock(),
                                               aws::ServiceSettings{"dynamodb", cloud.dynamodb(), cloud.region()});
    db_ = std::make_unique<aws::DynamoDbClient>(*caller_);
    db_->create_table(pool::DynamoStateTable::create_table_request(table_));
    db_->wait_until_active(table_, std::chrono::seconds(10));
  }

  std::string table_;
  CurlHttpClient http_;
  std::unique_ptr<aws::StaticCredentialsProvider> creds_;
  std::unique_ptr<aws::AwsCaller> caller_;
  std::unique_ptr<aws::DynamoDbClient> db_;
};

}  // namespace runpool::testing
