#include "common/pool/run_assignment_store.h"

#include <algorithm>
#include <stdexcept>

#include "common/pool/record_codec.h"

namespace runpool::pool {
namespace {

using aws::AttributeValue;

// Attribute names of their own. The item's "label" is one fixed value that no assignment label can
// be ('/' is not a label character), so the by_label index lists every run assignment under it and
// never one among an assignment's instances: list() is a Query of the index, not a second scan of
// the whole table beside refresh's own.
constexpr const char* kIndexLabel = "runpool/run-assignments";
constexpr const char* kLabel = "run_label";
constexpr const char* kRepository = "run_repository";
constexpr const char* kRunId = "run_id";
constexpr const char* kAttempt = "run_attempt";
constexpr const char* kClass = "run_resource_class";
constexpr const char* kUsage = "run_usage_class";
constexpr const char* kTypes = "run_allowed_types";
constexpr const char* kCount = "run_count";
constexpr const char* kCreated = "run_created_ms";
constexpr const char* kEnded = "run_ended_ms";

aws::Item key_of(const std::string& label) {
  if (label.empty()) throw std::invalid_argument("a run assignment needs a label");
  return {{attr::kInstanceId, AttributeValue::string(std::string(kRunAssignmentKeyPrefix) + label)}};
}

RunAssignment assignment_of(const aws::Item& item) {
  auto str = [&](const char* a) -> std::string {
    auto it = item.find(a);
    return it == item.end() ? "" : it->second.as_string();
  };
  auto num = [&](const char* a) -> int64_t {
    auto it = item.find(a);
    if (it == item.end()) throw std::runtime_error(std::string("a run assignment has no ") + a);
    return it->second.as_int();
  };
  RunAssignment a;
  a.label = str(kLabel);
  a.repository = str(kRepository);
  a.run_id = num(kRunId);
  a.attempt = num(kAttempt);
  a.resource_class = str(kClass);
  a.usage_class = str(kUsage);
  a.allowed_types = str(kTypes);
  a.count = static_cast<int>(num(kCount));
  a.created_ms = num(kCreated);
  a.ended_ms = num(kEnded);
  if (a.label.empty() || a.repository.empty()) throw std::runtime_error("a run assignment without its label or repository");
  return a;
}

aws::Item item_of(const RunAssignment& a) {
  aws::Item item = key_of(a.label);
  item[attr::kLabel] = AttributeValue::string(kIndexLabel);
  item[kLabel] = AttributeValue::string(a.label);
  item[kRepository] = AttributeValue::string(a.repository);
  item[kRunId] = AttributeValue::number(a.run_id);
  item[kAttempt] = AttributeValue::number(a.attempt);
  // DynamoDB refuses an empty string only in key attributes, but absent reads the same here.
  if (!a.resource_class.empty()) item[kClass] = AttributeValue::string(a.resource_class);
  if (!a.usage_class.empty()) item[kUsage] = AttributeValue::string(a.usage_class);
  if (!a.allowed_types.empty()) item[kTypes] = AttributeValue::string(a.allowed_types);
  item[kCount] = AttributeValue::number(a.count);
  item[kCreated] = AttributeValue::number(a.created_ms);
  item[kEnded] = AttributeValue::number(a.ended_ms);
  return item;
}

}  // namespace

void MemoryRunAssignmentStore::put(const RunAssignment& a) {
  if (a.label.empty()) throw std::invalid_argument("a run assignment needs a label");
  std::lock_guard lock(mu_);
  items_[a.label] = a;
}

std::optional<RunAssignment> MemoryRunAssignmentStore::get(const std::string& label) {
  std::lock_guard lock(mu_);
  auto it = items_.find(label);
  if (it == items_.end()) return std::nullopt;
  return it->second;
}

bool MemoryRunAssignmentStore::end(const std::string& label, int64_t now_ms) {
  std::lock_guard lock(mu_);
  auto it = items_.find(label);
  if (it == items_.end()) return false;
  it->second.ended_ms = now_ms;
  return true;
}

bool MemoryRunAssignmentStore::move_attempt(const std::string& label, int64_t read_attempt, int64_t attempt,
                                            int64_t ended_ms) {
  std::lock_guard lock(mu_);
  auto it = items_.find(label);
  if (it == items_.end() || it->second.attempt != read_attempt) return false;
  it->second.attempt = attempt;
  it->second.ended_ms = ended_ms;
  return true;
}

bool MemoryRunAssignmentStore::remove(const std::string& label, int64_t ended_ms) {
  std::lock_guard lock(mu_);
  auto it = items_.find(label);
  if (it == items_.end() || it->second.ended_ms != ended_ms) return false;
  items_.erase(it);
  return true;
}

std::vector<RunAssignment> MemoryRunAssignmentStore::list() {
  std::lock_guard lock(mu_);
  std::vector<RunAssignment> out;
  for (const auto& [label, a] : items_) out.push_back(a);
  return out;
}

DynamoRunAssignmentStore::DynamoRunAssignmentStore(aws::DynamoDbClient& db, std::string table)
    : db_(db), table_(std::move(table)) {}

void DynamoRunAssignmentStore::put(const RunAssignment& a) {
  aws::PutItemRequest req;
  req.table = table_;
  req.item = item_of(a);
  db_.put_item(req);
}

std::optional<RunAssignment> DynamoRunAssignmentStore::get(const std::string& label) {
  auto item = db_.get_item({.table = table_, .key = key_of(label), .consistent_read = true});
  if (!item) return std::nullopt;
  return assignment_of(*item);
}

bool DynamoRunAssignmentStore::end(const std::string& label, int64_t now_ms) {
  aws::UpdateItemRequest req;
  req.table = table_;
  req.key = key_of(label);
  req.update = "SET #e = :e";
  req.condition = "attribute_exists(#k)";
  req.names = {{"#e", kEnded}, {"#k", attr::kInstanceId}};
  req.values = {{":e", AttributeValue::number(now_ms)}};
  return db_.update_item(req).applied;
}

bool DynamoRunAssignmentStore::move_attempt(const std::string& label, int64_t read_attempt, int64_t attempt,
                                            int64_t ended_ms) {
  aws::UpdateItemRequest req;
  req.table = table_;
  req.key = key_of(label);
  req.update = "SET #a = :a, #e = :e";
  req.condition = "#a = :read";
  req.names = {{"#a", kAttempt}, {"#e", kEnded}};
  req.values = {{":a", AttributeValue::number(attempt)},
                {":e", AttributeValue::number(ended_ms)},
                {":read", AttributeValue::number(read_attempt)}};
  return db_.update_item(req).applied;
}

bool DynamoRunAssignmentStore::remove(const std::string& label, int64_t ended_ms) {
  aws::DeleteItemRequest req;
  req.table = table_;
  req.key = key_of(label);
  req.condition = "#e = :e";
  req.names = {{"#e", kEnded}};
  req.values = {{":e", AttributeValue::number(ended_ms)}};
  return db_.delete_item(req).applied;
}

std::vector<RunAssignment> DynamoRunAssignmentStore::list() {
  aws::QueryRequest req;
  req.table = table_;
  req.index = kLabelIndex;
  req.key_condition = "#l = :l";
  req.names = {{"#l", attr::kLabel}};
  req.values = {{":l", AttributeValue::string(kIndexLabel)}};
  std::vector<RunAssignment> out;
  db_.query_pages(req, [&](aws::Page& page) {
    for (const auto& item : page.items) out.push_back(assignment_of(item));
    return true;
  });
  std::sort(out.begin(), out.end(), [](const RunAssignment& a, const RunAssignment& b) { return a.label < b.label; });
  return out;
}

}  // namespace runpool::pool
