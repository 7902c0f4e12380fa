#include "common/aws/dynamodb.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "common/json.h"

namespace runpool::aws {
namespace {

const char* return_values_name(ReturnValues rv) {
  switch (rv) {
    case ReturnValues::kNone:
      return "NONE";
    case ReturnValues::kAllOld:
      return "ALL_OLD";
    case ReturnValues::kUpdatedOld:
      return "UPDATED_OLD";
    case ReturnValues::kAllNew:
      return "ALL_NEW";
    case ReturnValues::kUpdatedNew:
      return "UPDATED_NEW";
  }
  return "NONE";
}

const char* scalar_name(ScalarType t) {
  switch (t) {
    case ScalarType::kString:
      return "S";
    case ScalarType::kNumber:
      return "N";
    case ScalarType::kBinary:
      return "B";
  }
  return "S";
}

void set_if(Json::Value& body, const char* key, const std::string& value) {
  if (!value.empty()) body[key] = value;
}

// Placeholders; DynamoDB rejects empty maps, so absent ones are left out.
void add_expressions(Json::Value& body, const ExpressionNames& names, const ExpressionValues& values) {
  for (const auto& [placeholder, name] : names) body["ExpressionAttributeNames"][placeholder] = name;
  if (!values.empty()) body["ExpressionAttributeValues"] = item_to_json(values);
}

void add_return_values(Json::Value& body, ReturnValues rv) {
  if (rv != ReturnValues::kNone) body["ReturnValues"] = return_values_name(rv);
}

Json::Value key_schema_json(const KeySchema& key) {
  Json::Value arr(Json::arrayValue);
  Json::Value hash;
  hash["AttributeName"] = key.partition_key;
  hash["KeyType"] = "HASH";
  arr.append(hash);
  if (!key.sort_key.empty()) {
    Json::Value range;
    range["AttributeName"] = key.sort_key;
    range["KeyType"] = "RANGE";
    arr.append(range);
  }
  return arr;
}

Json::Value attributes_json(const std::vector<AttributeDefinition>& defs) {
  Json::Value arr(Json::arrayValue);
  for (const auto& d : defs) {
    Json::Value a;
    a["AttributeName"] = d.name;
    a["AttributeType"] = scalar_name(d.type);
    arr.append(a);
  }
  return arr;
}

Json::Value throughput_json(int64_t read, int64_t write) {
  Json::Value t;
  t["ReadCapacityUnits"] = Json::Int64(read);
  t["WriteCapacityUnits"] = Json::Int64(write);
  return t;
}

Json::Value index_json(const GlobalSecondaryIndex& gsi, bool pay_per_request, int64_t read, int64_t write) {
  Json::Value i;
  i["IndexName"] = gsi.name;
  i["KeySchema"] = key_schema_json(gsi.key);
  Json::Value p;
  switch (gsi.projection.type) {
    case Projection::Type::kAll:
      p["ProjectionType"] = "ALL";
      break;
    case Projection::Type::kKeysOnly:
      p["ProjectionType"] = "KEYS_ONLY";
      break;
    case Projection::Type::kInclude:
      p["ProjectionType"] = "INCLUDE";
      for (const auto& a : gsi.projection.non_key_attributes) p["NonKeyAttributes"].append(a);
      break;
  }
  i["Projection"] = p;
  if (!pay_per_request) i["ProvisionedThroughput"] = throughput_json(read, write);
  return i;
}

// --- response parsing: JsonError on anything unexpected ---

KeySchema parse_key_schema(const Json::Value& arr, const std::string& what) {
  if (!arr.isArray()) throw JsonError(what + ": KeySchema is not an array");
  KeySchema key;
  for (const auto& k : arr) {
    std::string name = require_string(k, "AttributeName", what + " KeySchema");
    std::string type = require_string(k, "KeyType", what + " KeySchema");
    if (type == "HASH")
      key.partition_key = name;
    else if (type == "RANGE")
      key.sort_key = name;
    else
      throw JsonError(what + ": unknown KeyType '" + type.substr(0, 20) + "'");
  }
  if (key.partition_key.empty()) throw JsonError(what + ": KeySchema has no HASH key");
  return key;
}

Projection parse_projection(const Json::Value& obj, const std::string& what) {
  Projection p;
  std::string type = require_string(obj, "ProjectionType", what + " Projection");
  if (type == "ALL")
    p.type = Projection::Type::kAll;
  else if (type == "KEYS_ONLY")
    p.type = Projection::Type::kKeysOnly;
  else if (type == "INCLUDE")
    p.type = Projection::Type::kInclude;
  else
    throw JsonError(what + ": unknown ProjectionType '" + type.substr(0, 20) + "'");
  if (obj.isMember("NonKeyAttributes")) {
    for (const auto& a : require_array(obj, "NonKeyAttributes", what + " Projection")) {
      if (!a.isString()) throw JsonError(what + ": NonKeyAttributes member is not a string");
      p.non_key_attributes.push_back(a.asString());
    }
  }
  return p;
}

TableDescription parse_table(const Json::Value& t, const std::string& what) {
  if (!t.isObject()) throw JsonError(what + ": table description is not an object");
  TableDescription d;
  d.name = require_string(t, "TableName", what);
  d.status = require_string(t, "TableStatus", what);
  d.arn = optional_string(t, "TableArn", what).value_or("");
  d.key = parse_key_schema(require_member(t, "KeySchema", what), what);
  if (t.isMember("AttributeDefinitions")) {
    for (const auto& a : require_array(t, "AttributeDefinitions", what)) {
      AttributeDefinition def;
      def.name = require_string(a, "AttributeName", what + " AttributeDefinitions");
      std::string type = require_string(a, "AttributeType", what + " AttributeDefinitions");
      if (type == "S")
        def.type = ScalarType::kString;
      else if (type == "N")
        def.type = ScalarType::kNumber;
      else if (type == "B")
        def.type = ScalarType::kBinary;
      else
        throw JsonError(what + ": unknown AttributeType '" + type.substr(0, 20) + "'");
      d.attributes.push_back(def);
    }
  }
  if (t.isMember("GlobalSecondaryIndexes")) {
    for (const auto& g : require_array(t, "GlobalSecondaryIndexes", what)) {
      IndexDescription i;
      std::string gwhat = what + " GlobalSecondaryIndexes";
      i.name = require_string(g, "IndexName", gwhat);
      i.key = parse_key_schema(require_member(g, "KeySchema", gwhat), gwhat);
      i.projection = parse_projection(require_member(g, "Projection", gwhat), gwhat);
      i.status = require_string(g, "IndexStatus", gwhat);
      if (g.isMember("Backfilling")) {
        if (!g["Backfilling"].isBool()) throw JsonError(gwhat + ": field 'Backfilling' is not a boolean");
        i.backfilling = g["Backfilling"].asBool();
      }
      i.item_count = optional_int(g, "ItemCount", gwhat).value_or(0);
      d.indexes.push_back(std::move(i));
    }
  }
  d.item_count = optional_int(t, "ItemCount", what).value_or(0);
  // Tables that never switched mode may carry no summary: they are PROVISIONED.
  d.billing_mode = "PROVISIONED";
  if (t.isMember("BillingModeSummary")) {
    d.billing_mode =
        optional_string(require_member(t, "BillingModeSummary", what), "BillingMode", what).value_or("PROVISIONED");
  }
  return d;
}

Page parse_page(const Json::Value& doc, const std::string& what) {
  Page page;
  const Json::Value& items = require_array(doc, "Items", what);
  page.items.reserve(items.size());
  for (Json::ArrayIndex i = 0; i < items.size(); ++i) {
    page.items.push_back(item_from_json(items[i], what + " Items[" + std::to_string(i) + "]"));
  }
  page.scanned_count = optional_int(doc, "ScannedCount", what).value_or(0);
  if (doc.isMember("LastEvaluatedKey")) {
    page.last_evaluated_key = item_from_json(doc["LastEvaluatedKey"], what + " LastEvaluatedKey");
  }
  return page;
}

template <typename Request>
PagingResult all_pages(Request request, int max_pages, const std::function<Page(const Request&)>& fetch,
                       const PageVisitor& visit) {
  PagingResult result;
  while (result.pages < max_pages) {
    Page page = fetch(request);
    ++result.pages;
    std::optional<Item> next = page.last_evaluated_key;  // the visitor may move the page's contents
    bool go_on = visit(page);
    result.last_evaluated_key = next;
    if (!next) {
      result.complete = true;
      return result;
    }
    request.exclusive_start_key = std::move(next);
    if (!go_on) return result;
  }
  return result;
}

}  // namespace

const IndexDescription* TableDescription::index(const std::string& index_name) const {
  for (const auto& i : indexes) {
    if (i.name == index_name) return &i;
  }
  return nullptr;
}

bool TableDescription::all_active() const {
  return status == "ACTIVE" && std::all_of(indexes.begin(), indexes.end(), [](const IndexDescription& i) {
           return i.status == "ACTIVE" && !i.backfilling;
         });
}

DynamoDbClient::DynamoDbClient(AwsCaller& caller, Clock& clock) : caller_(caller), clock_(clock) {}

Json::Value DynamoDbClient::call(const std::string& operation, const Json::Value& body) {
  try {
    return json_call(caller_, kDynamoDbTargetPrefix, operation, body);
  } catch (const AwsError& e) {
    if (e.code() == "ResourceNotFoundException") throw ResourceNotFoundError(e);
    if (e.code() == "ResourceInUseException") throw ResourceInUseError(e);
    throw;
  }
}

namespace {

std::string dynamodb_response(const std::string& operation) { return "DynamoDB " + operation + " response"; }

}  // namespace

WriteResult DynamoDbClient::write(const std::string& operation, const Json::Value& body) {
  Json::Value doc;
  try {
    doc = call(operation, body);
  } catch (const AwsError& e) {
    // An answer, not a failure: the expected state was not there. Never retried (retry.cc).
    if (e.code() == "ConditionalCheckFailedException") return WriteResult{false, std::nullopt};
    throw;
  }
  return parse_answer(caller_, operation, [&] {
    WriteResult r{true, std::nullopt};
    if (doc.isMember("Attributes"))
      r.attributes = item_from_json(doc["Attributes"], dynamodb_response(operation) + " Attributes");
    return r;
  });
}

std::optional<Item> DynamoDbClient::get_item(const GetItemRequest& request) {
  Json::Value body;
  body["TableName"] = request.table;
  body["Key"] = item_to_json(request.key);
  if (request.consistent_read) body["ConsistentRead"] = true;
  set_if(body, "ProjectionExpression", request.projection);
  add_expressions(body, request.names, {});
  Json::Value doc = call("GetItem", body);
  return parse_answer(caller_, "GetItem", [&]() -> std::optional<Item> {
    if (!doc.isMember("Item")) return std::nullopt;  // no such item
    return item_from_json(doc["Item"], dynamodb_response("GetItem") + " Item");
  });
}

WriteResult DynamoDbClient::put_item(const PutItemRequest& request) {
  Json::Value body;
  body["TableName"] = request.table;
  body["Item"] = item_to_json(request.item);
  set_if(body, "ConditionExpression", request.condition);
  add_expressions(body, request.names, request.values);
  add_return_values(body, request.return_values);
  return write("PutItem", body);
}

WriteResult DynamoDbClient::update_item(const UpdateItemRequest& request) {
  Json::Value body;
  body["TableName"] = request.table;
  body["Key"] = item_to_json(request.key);
  set_if(body, "UpdateExpression", request.update);
  set_if(body, "ConditionExpression", request.condition);
  add_expressions(body, request.names, request.values);
  add_return_values(body, request.return_values);
  return write("UpdateItem", body);
}

WriteResult DynamoDbClient::delete_item(const DeleteItemRequest& request) {
  Json::Value body;
  body["TableName"] = request.table;
  body["Key"] = item_to_json(request.key);
  set_if(body, "ConditionExpression", request.condition);
  add_expressions(body, request.names, request.values);
  add_return_values(body, request.return_values);
  return write("DeleteItem", body);
}

Page DynamoDbClient::query_page(const QueryRequest& request) {
  Json::Value body;
  body["TableName"] = request.table;
  set_if(body, "IndexName", request.index);
  body["KeyConditionExpression"] = request.key_condition;
  set_if(body, "FilterExpression", request.filter);
  set_if(body, "ProjectionExpression", request.projection);
  add_expressions(body, request.names, request.values);
  if (request.limit) body["Limit"] = *request.limit;
  if (request.consistent_read) body["ConsistentRead"] = true;
  if (!request.scan_forward) body["ScanIndexForward"] = false;
  if (request.exclusive_start_key) body["ExclusiveStartKey"] = item_to_json(*request.exclusive_start_key);
  Json::Value doc = call("Query", body);
  return parse_answer(caller_, "Query", [&] { return parse_page(doc, dynamodb_response("Query")); });
}

Page DynamoDbClient::scan_page(const ScanRequest& request) {
  Json::Value body;
  body["TableName"] = request.table;
  set_if(body, "IndexName", request.index);
  set_if(body, "FilterExpression", request.filter);
  set_if(body, "ProjectionExpression", request.projection);
  add_expressions(body, request.names, request.values);
  if (request.limit) body["Limit"] = *request.limit;
  if (request.consistent_read) body["ConsistentRead"] = true;
  if (request.exclusive_start_key) body["ExclusiveStartKey"] = item_to_json(*request.exclusive_start_key);
  Json::Value doc = call("Scan", body);
  return parse_answer(caller_, "Scan", [&] { return parse_page(doc, dynamodb_response("Scan")); });
}

PagingResult DynamoDbClient::query_pages(QueryRequest request, const PageVisitor& visit, int max_pages) {
  return all_pages<QueryRequest>(
      std::move(request), max_pages, [this](const QueryRequest& r) { return query_page(r); }, visit);
}

PagingResult DynamoDbClient::scan_pages(ScanRequest request, const PageVisitor& visit, int max_pages) {
  return all_pages<ScanRequest>(
      std::move(request), max_pages, [this](const ScanRequest& r) { return scan_page(r); }, visit);
}

namespace {

std::vector<Item> collect(const std::function<PagingResult(const PageVisitor&)>& run, const char* operation,
                          int max_pages) {
  std::vector<Item> all;
  PagingResult r = run([&](Page& page) {
    std::move(page.items.begin(), page.items.end(), std::back_inserter(all));
    return true;
  });
  if (!r.complete) {
    throw std::runtime_error(std::string("DynamoDB ") + operation + ": more than " + std::to_string(max_pages) +
                             " pages; use the paged form");
  }
  return all;
}

}  // namespace

std::vector<Item> DynamoDbClient::query_all(const QueryRequest& request, int max_pages) {
  return collect([&](const PageVisitor& v) { return query_pages(request, v, max_pages); }, "Query", max_pages);
}

std::vector<Item> DynamoDbClient::scan_all(const ScanRequest& request, int max_pages) {
  return collect([&](const PageVisitor& v) { return scan_pages(request, v, max_pages); }, "Scan", max_pages);
}

bool DynamoDbClient::create_table(const CreateTableRequest& request) {
  Json::Value body;
  body["TableName"] = request.table;
  body["KeySchema"] = key_schema_json(request.key);
  body["AttributeDefinitions"] = attributes_json(request.attributes);
  if (request.pay_per_request) {
    body["BillingMode"] = "PAY_PER_REQUEST";
  } else {
    body["BillingMode"] = "PROVISIONED";
    body["ProvisionedThroughput"] = throughput_json(request.read_capacity, request.write_capacity);
  }
  for (const auto& gsi : request.indexes) {
    body["GlobalSecondaryIndexes"].append(
        index_json(gsi, request.pay_per_request, request.read_capacity, request.write_capacity));
  }
  try {
    call("CreateTable", body);
  } catch (const ResourceInUseError&) {
    return false;
  }
  return true;
}

std::optional<TableDescription> DynamoDbClient::describe_table(const std::string& table) {
  Json::Value body;
  body["TableName"] = table;
  Json::Value doc;
  try {
    doc = call("DescribeTable", body);
  } catch (const ResourceNotFoundError&) {
    return std::nullopt;
  }
  return parse_answer(caller_, "DescribeTable", [&] {
    return parse_table(require_member(doc, "Table", dynamodb_response("DescribeTable")), dynamodb_response("DescribeTable"));
  });
}

TableDescription DynamoDbClient::update_table(const UpdateTableRequest& request) {
  Json::Value body;
  body["TableName"] = request.table;
  if (!request.attributes.empty()) body["AttributeDefinitions"] = attributes_json(request.attributes);
  for (const auto& gsi : request.create_indexes) {
    Json::Value update;
    update["Create"] = index_json(gsi, request.pay_per_request, request.read_capacity, request.write_capacity);
    body["GlobalSecondaryIndexUpdates"].append(update);
  }
  for (const auto& name : request.delete_indexes) {
    Json::Value update;
    update["Delete"]["IndexName"] = name;
    body["GlobalSecondaryIndexUpdates"].append(update);
  }
  Json::Value doc = call("UpdateTable", body);
  return parse_answer(caller_, "UpdateTable", [&] {
    return parse_table(require_member(doc, "TableDescription", dynamodb_response("UpdateTable")),
                       dynamodb_response("UpdateTable"));
  });
}

bool DynamoDbClient::delete_table(const std::string& table) {
  Json::Value body;
  body["TableName"] = table;
  try {
    call("DeleteTable", body);
  } catch (const ResourceNotFoundError&) {
    return false;
  }
  return true;
}

TableDescription DynamoDbClient::wait_until_active(const std::string& table, Duration timeout, Duration poll_interval) {
  auto deadline = clock_.steady_now() + timeout;
  for (;;) {
    std::optional<TableDescription> d = describe_table(table);
    if (d && d->all_active()) return *d;
    auto left = std::chrono::duration_cast<Duration>(deadline - clock_.steady_now());
    if (left <= Duration{0}) {
      throw AwsError(caller_.settings().service, "DescribeTable", 0, "WaitTimeout",
                     "table " + table + " not ACTIVE after " + std::to_string(timeout.count()) +
                         " ms (last status: " + (d ? d->status : std::string("not found")) + ")");
    }
    clock_.sleep_for(std::min(poll_interval, left));
  }
}

}  // namespace runpool::aws
