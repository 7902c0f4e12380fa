// DynamoDB over its JSON 1.0 protocol, on AwsCaller (signing, retries, errors). Callers pass
// expression strings plus named placeholders; values are typed (attribute_value.h).
//
// Outcomes that are answers rather than failures are results: a failed ConditionExpression is
// WriteResult{applied=false} (sent once, never retried), an existing table on CreateTable is
// `false`, a missing table on DescribeTable/DeleteTable is nullopt/false. Everything else is an
// AwsError; ResourceNotFoundException and ResourceInUseException get their own subclasses.
// Request structs default every field: `get_item({.table = "pool", .key = k})`.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/aws/attribute_value.h"
#include "common/aws/aws_caller.h"
#include "common/clock.h"

namespace runpool::aws {

inline constexpr const char* kDynamoDbTargetPrefix = "DynamoDB_20120810";

class ResourceNotFoundError : public AwsError {
 public:
  explicit ResourceNotFoundError(const AwsError& e) : AwsError(e) {}
};
class ResourceInUseError : public AwsError {
 public:
  explicit ResourceInUseError(const AwsError& e) : AwsError(e) {}
};

using ExpressionNames = std::map<std::string, std::string>;  // "#s" -> "state"
using ExpressionValues = Item;                               // ":idle" -> S "idle"

enum class ReturnValues { kNone, kAllOld, kUpdatedOld, kAllNew, kUpdatedNew };

struct GetItemRequest {
  std::string table{};
  Item key{};
  bool consistent_read = false;
  std::string projection{};  // ProjectionExpression; empty: every attribute
  ExpressionNames names{};
};

// At most this many keys per BatchGetItem call (DynamoDB's limit).
inline constexpr size_t kBatchGetMaxKeys = 100;

struct BatchGetRequest {
  std::string table{};
  std::vector<Item> keys{};  // at most kBatchGetMaxKeys, all distinct (DynamoDB refuses either)
  bool consistent_read = false;
};

struct PutItemRequest {
  std::string table{};
  Item item{};
  std::string condition{};  // ConditionExpression; empty: unconditional
  ExpressionNames names{};
  ExpressionValues values{};
  ReturnValues return_values = ReturnValues::kNone;  // PutItem accepts kNone or kAllOld
};

struct UpdateItemRequest {
  std::string table{};
  Item key{};
  std::string update{};  // UpdateExpression ("SET #s = :s ADD #g :one")
  std::string condition{};
  ExpressionNames names{};
  ExpressionValues values{};
  ReturnValues return_values = ReturnValues::kNone;
};

struct DeleteItemRequest {
  std::string table{};
  Item key{};
  std::string condition{};
  ExpressionNames names{};
  ExpressionValues values{};
  ReturnValues return_values = ReturnValues::kNone;  // kNone or kAllOld
};

struct WriteResult {
  bool applied = false;              // false: ConditionalCheckFailedException, nothing was written
  std::optional<Item> attributes{};  // what ReturnValues asked for (absent when there was nothing)
};

struct QueryRequest {
  std::string table{};
  std::string index{};          // IndexName; empty: the table itself
  std::string key_condition{};  // KeyConditionExpression (required)
  std::string filter{};         // FilterExpression
  std::string projection{};
  ExpressionNames names{};
  ExpressionValues values{};
  std::optional<int> limit{};    // items evaluated per page (before the filter)
  bool consistent_read = false;  // not allowed on a GSI
  bool scan_forward = true;      // ScanIndexForward
  std::optional<Item> exclusive_start_key{};
};

struct ScanRequest {
  std::string table{};
  std::string index{};
  std::string filter{};
  std::string projection{};
  ExpressionNames names{};
  ExpressionValues values{};
  std::optional<int> limit{};
  bool consistent_read = false;
  std::optional<Item> exclusive_start_key{};
};

struct Page {
  std::vector<Item> items{};
  std::optional<Item> last_evaluated_key{};  // set when another page may follow
  int64_t scanned_count = 0;
};

// Called with each page as it arrives; may move the items out. Return false to stop early.
using PageVisitor = std::function<bool(Page& page)>;

struct PagingResult {
  int pages = 0;
  bool complete = false;                     // the last page was read (not stopped by the visitor or max_pages)
  std::optional<Item> last_evaluated_key{};  // where to resume when !complete
};

enum class ScalarType { kString, kNumber, kBinary };  // S, N, B

struct AttributeDefinition {
  std::string name{};
  ScalarType type = ScalarType::kString;
  bool operator==(const AttributeDefinition&) const = default;
};

struct KeySchema {
  std::string partition_key{};  // HASH
  std::string sort_key{};       // RANGE; empty: none
  bool operator==(const KeySchema&) const = default;
};

struct Projection {
  enum class Type { kAll, kKeysOnly, kInclude };
  Type type = Type::kAll;
  std::vector<std::string> non_key_attributes{};  // with kInclude
  bool operator==(const Projection&) const = default;
};

struct GlobalSecondaryIndex {
  std::string name{};
  KeySchema key{};
  Projection projection{};
};

struct CreateTableRequest {
  std::string table{};
  KeySchema key{};
  std::vector<AttributeDefinition> attributes{};  // every key attribute of the table and its indexes
  std::vector<GlobalSecondaryIndex> indexes{};
  bool pay_per_request = true;  // else PROVISIONED with the capacities below
  int64_t read_capacity = 1, write_capacity = 1;
};

struct UpdateTableRequest {
  std::string table{};
  std::vector<AttributeDefinition> attributes{};  // the new indexes' key attributes
  std::vector<GlobalSecondaryIndex> create_indexes{};
  std::vector<std::string> delete_indexes{};
  bool pay_per_request = true;  // the table's mode: a PROVISIONED table's new indexes need capacities
  int64_t read_capacity = 1, write_capacity = 1;
};

struct IndexDescription {
  std::string name{};
  KeySchema key{};
  Projection projection{};
  std::string status{};  // CREATING, UPDATING, DELETING, ACTIVE
  bool backfilling = false;
  int64_t item_count = 0;
};

struct TableDescription {
  std::string name{};
  std::string status{};  // CREATING, UPDATING, DELETING, ACTIVE, …
  std::string arn{};
  KeySchema key{};
  std::vector<AttributeDefinition> attributes{};
  std::vector<IndexDescription> indexes{};
  int64_t item_count = 0;      // DynamoDB refreshes it about every six hours
  std::string billing_mode{};  // PAY_PER_REQUEST or PROVISIONED (also when not reported)

  const IndexDescription* index(const std::string& name) const;
  // The table and every index ACTIVE (and no index backfilling).
  bool all_active() const;
};

class DynamoDbClient {
 public:
  // `clock` paces wait_until_active.
  explicit DynamoDbClient(AwsCaller& caller, Clock& clock = system_clock());

  std::optional<Item> get_item(const GetItemRequest& request);
  // The items of request.keys that exist, in no particular order (no keys: no request). Keys
  // DynamoDB leaves unprocessed (throttled, or past its 16 MB answer) are asked for again, backing
  // off as the caller's retry policy does, for at most its max_attempts rounds; keys still
  // unprocessed then are an AwsError "UnprocessedKeys", never a silently short answer.
  std::vector<Item> batch_get_item(const BatchGetRequest& request);
  WriteResult put_item(const PutItemRequest& request);
  WriteResult update_item(const UpdateItemRequest& request);
  WriteResult delete_item(const DeleteItemRequest& request);

  // One page; pass its last_evaluated_key as the next request's exclusive_start_key.
  Page query_page(const QueryRequest& request);
  Page scan_page(const ScanRequest& request);
  // Pages from request.exclusive_start_key on, each handed to `visit`, until the last page, a
  // false from `visit`, or `max_pages` pages — whichever comes first.
  PagingResult query_pages(QueryRequest request, const PageVisitor& visit, int max_pages = 1000);
  PagingResult scan_pages(ScanRequest request, const PageVisitor& visit, int max_pages = 1000);
  // Every item; throws std::runtime_error if more than `max_pages` pages would be needed, so a
  // result is never silently partial.
  std::vector<Item> query_all(const QueryRequest& request, int max_pages = 1000);
  std::vector<Item> scan_all(const ScanRequest& request, int max_pages = 1000);

  // True when this call created the table; false when it already existed (ResourceInUseException),
  // so concurrent initialisers both succeed. Wait with wait_until_active either way.
  bool create_table(const CreateTableRequest& request);
  std::optional<TableDescription> describe_table(const std::string& table);
  TableDescription update_table(const UpdateTableRequest& request);  // ResourceInUseError while busy
  // True when deletion started; false when there was no such table.
  bool delete_table(const std::string& table);
  // Polls DescribeTable until the table and its indexes are ACTIVE; a missing table counts as not
  // yet active. Throws AwsError "WaitTimeout" after `timeout`.
  TableDescription wait_until_active(const std::string& table, Duration timeout,
                                     Duration poll_interval = std::chrono::milliseconds(200));

 private:
  Json::Value call(const std::string& operation, const Json::Value& body);
  WriteResult write(const std::string& operation, const Json::Value& body);

  AwsCaller& caller_;
  Clock& clock_;
};

}  // namespace runpool::aws
