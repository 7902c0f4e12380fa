// DynamoDbClient::batch_get_item: BatchGetItem of one table, re-asking for unprocessed keys.
#include <algorithm>
#include <stdexcept>

#include "common/aws/dynamodb.h"
#include "common/json.h"
#include "common/retry.h"

namespace runpool::aws {
namespace {

constexpr const char* kWhat = "DynamoDB BatchGetItem response";

// The items of one table in a map of table → something ("Responses", "UnprocessedKeys"): absent
// tables and an absent map are empty.
const Json::Value* table_entry(const Json::Value& doc, const char* field, const std::string& table) {
  if (!doc.isMember(field)) return nullptr;
  const Json::Value& map = doc[field];
  if (!map.isObject()) throw JsonError(std::string(kWhat) + ": field '" + field + "' is not an object");
  if (!map.isMember(table)) return nullptr;
  return &map[table];
}

std::vector<Item> items_of(const Json::Value& arr, const std::string& what) {
  if (!arr.isArray()) throw JsonError(what + " is not an array");
  std::vector<Item> out;
  out.reserve(arr.size());
  for (Json::ArrayIndex i = 0; i < arr.size(); ++i) {
    out.push_back(item_from_json(arr[i], what + "[" + std::to_string(i) + "]"));
  }
  return out;
}

}  // namespace

std::vector<Item> DynamoDbClient::batch_get_item(const BatchGetRequest& request) {
  if (request.keys.size() > kBatchGetMaxKeys) {
    throw std::invalid_argument("BatchGetItem: " + std::to_string(request.keys.size()) + " keys (at most " +
                                std::to_string(kBatchGetMaxKeys) + " a call)");
  }
  for (auto k = request.keys.begin(); k != request.keys.end(); ++k) {
    if (std::find(request.keys.begin(), k, *k) != k) {
      throw std::invalid_argument("BatchGetItem: duplicate keys (DynamoDB refuses them)");
    }
  }
  std::vector<Item> found;
  if (request.keys.empty()) return found;  // DynamoDB refuses an empty Keys list
  std::vector<Item> pending = request.keys;
  const RetryPolicy& policy = caller_.settings().retry;
  with_retries(policy, clock_, [&](int attempt, bool last) -> std::optional<RetryVerdict> {
    Json::Value body;
    Json::Value& entry = body["RequestItems"][request.table];
    entry["Keys"] = Json::Value(Json::arrayValue);
    for (const Item& k : pending) entry["Keys"].append(item_to_json(k));
    if (request.consistent_read) entry["ConsistentRead"] = true;
    Json::Value doc = call("BatchGetItem", body);
    try {
      if (const Json::Value* items = table_entry(doc, "Responses", request.table)) {
        for (Item& item : items_of(*items, std::string(kWhat) + " Responses")) found.push_back(std::move(item));
      }
      pending.clear();
      if (const Json::Value* left = table_entry(doc, "UnprocessedKeys", request.table)) {
        if (!left->isObject()) throw JsonError(std::string(kWhat) + ": UnprocessedKeys entry is not an object");
        if (left->isMember("Keys")) pending = items_of((*left)["Keys"], std::string(kWhat) + " UnprocessedKeys");
      }
    } catch (const JsonError& e) {
      throw AwsError(caller_.settings().service, "BatchGetItem", 200, "MalformedResponse", e.what());
    }
    if (pending.empty()) return std::nullopt;
    if (last) {
      throw AwsError(caller_.settings().service, "BatchGetItem", 0, "UnprocessedKeys",
                     std::to_string(pending.size()) + " of " + std::to_string(request.keys.size()) +
                         " key(s) still unprocessed after " + std::to_string(attempt + 1) + " round(s)");
    }
    return RetryVerdict{true, std::nullopt, std::to_string(pending.size()) + " unprocessed key(s)"};
  });
  return found;
}

}  // namespace runpool::aws
