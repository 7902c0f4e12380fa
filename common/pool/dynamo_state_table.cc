#include "common/pool/dynamo_state_table.h"

#include <spdlog/spdlog.h>

#include <set>

#include "common/pool/lease_store.h"
#include "common/pool/record_codec.h"
#include "common/pool/record_key.h"
#include "common/pool/run_assignment.h"

namespace runpool::pool {
namespace {

using aws::AttributeValue;

// Builds a condition or update expression with its name and value placeholders.
class ExpressionBuilder {
 public:
  std::string name(const char* attribute) {
    std::string placeholder = std::string("#") + attribute;
    names_[placeholder] = attribute;
    return placeholder;
  }
  std::string value(AttributeValue v) {
    std::string placeholder = ":v" + std::to_string(values_.size());
    values_[placeholder] = std::move(v);
    return placeholder;
  }
  void set(const char* attribute, AttributeValue v) { sets_.push_back(name(attribute) + " = " + value(std::move(v))); }
  void remove(const char* attribute) { removes_.push_back(name(attribute)); }
  void require(std::string clause) { conditions_.push_back(std::move(clause)); }
  void require_equal(const char* attribute, AttributeValue v) { require(name(attribute) + " = " + value(std::move(v))); }
  void require_absent_or(const char* attribute, AttributeValue v) {
    require("(attribute_not_exists(" + name(attribute) + ") OR " + name(attribute) + " = " + value(std::move(v)) + ")");
  }

  void require(const Expect& e) {
    require("attribute_exists(" + name(attr::kInstanceId) + ")");
    if (!e.states.empty()) {
      std::string in;
      for (State s : e.states) {
        in += (in.empty() ? "" : ", ") + value(AttributeValue::string(std::string(state_name(s))));
      }
      require(name(attr::kState) + " IN (" + in + ")");
    }
    if (e.generation) require_equal(attr::kGeneration, AttributeValue::number(*e.generation));
    if (e.label) require_equal(attr::kLabel, AttributeValue::string(*e.label));
    if (e.signal) require_equal(attr::kSignal, AttributeValue::string(std::string(agent_signal_name(*e.signal))));
    if (e.signal_generation) require_equal(attr::kSignalGeneration, AttributeValue::number(*e.signal_generation));
    if (e.agent_not_busy) require_absent_or(attr::kBusy, AttributeValue::boolean(false));
    if (e.unmarked) {
      require_absent_or(attr::kRetirePending, AttributeValue::boolean(false));
      require_absent_or(attr::kKeptUntil, AttributeValue::number(0));
    }
    if (e.not_awaited_at) {
      require("(attribute_not_exists(" + name(attr::kAwaitedUntil) + ") OR " + name(attr::kAwaitedUntil) +
              " <= " + value(AttributeValue::number(*e.not_awaited_at)) + ")");
    }
    if (e.spot_rerun) {
      if (e.spot_rerun->empty()) require("attribute_not_exists(" + name(attr::kSpotRerun) + ")");
      else require_equal(attr::kSpotRerun, AttributeValue::string(*e.spot_rerun));
    }
  }

  std::string update_expression() const {
    std::string out;
    if (!sets_.empty()) out += "SET " + join(sets_);
    if (!removes_.empty()) out += std::string(out.empty() ? "" : " ") + "REMOVE " + join(removes_);
    return out;
  }
  std::string condition_expression() const { return join(conditions_, " AND "); }
  const aws::ExpressionNames& names() const { return names_; }
  const aws::ExpressionValues& values() const { return values_; }

 private:
  static std::string join(const std::vector<std::string>& parts, const char* sep = ", ") {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
    return out;
  }
  aws::ExpressionNames names_;
  aws::ExpressionValues values_;
  std::vector<std::string> sets_, removes_, conditions_;
};

// One conditional UpdateItem; false when the condition failed.
bool conditional_update(aws::DynamoDbClient& db, const std::string& table, aws::Item key,
                        const std::string& instance_id, const ExpressionBuilder& b) {
  aws::UpdateItemRequest req;
  req.table = table;
  req.key = std::move(key);
  req.update = b.update_expression();
  req.condition = b.condition_expression();
  req.names = b.names();
  req.values = b.values();
  if (req.update.empty()) throw std::invalid_argument("a write to " + instance_id + " that changes nothing");
  return db.update_item(req).applied;
}

// A lease (lease_store.h) or a run assignment (run_assignment.h) shares the table and is no
// record: passed over without a warning.
bool is_lease_item(const aws::Item& item) {
  auto it = item.find(attr::kInstanceId);
  if (it == item.end() || it->second.type() != AttributeValue::Type::kString) return false;
  const std::string& key = it->second.as_string();
  return is_lease_key(key) || key.rfind(kRunAssignmentKeyPrefix, 0) == 0;
}

std::optional<InstanceRecord> decode_or_warn(const aws::Item& item) {
  if (is_lease_item(item)) return std::nullopt;
  try {
    return decode_record(item);
  } catch (const RecordError& e) {
    spdlog::warn("skipping a record that is not runpool's or is corrupted: {}", e.what());
    return std::nullopt;
  }
}

}  // namespace

DynamoStateTable::DynamoStateTable(aws::DynamoDbClient& db, std::string table, std::string instance_role_id)
    : db_(db), table_(std::move(table)), instance_role_id_(std::move(instance_role_id)) {
  if (!is_role_unique_id(instance_role_id_)) {
    throw std::invalid_argument("the instance role's unique id '" + instance_role_id_.substr(0, 64) +
                                "' is not one (AROA followed by capital letters and digits)");
  }
}

aws::Item DynamoStateTable::key_of(const std::string& instance_id) const {
  return {{attr::kInstanceId, AttributeValue::string(record_key(instance_role_id_, instance_id))}};
}

aws::CreateTableRequest DynamoStateTable::create_table_request(const std::string& table) {
  aws::CreateTableRequest req;
  req.table = table;
  req.key.partition_key = attr::kInstanceId;
  req.attributes = {{attr::kInstanceId, aws::ScalarType::kString}, {attr::kLabel, aws::ScalarType::kString}};
  aws::GlobalSecondaryIndex by_label;
  by_label.name = kLabelIndex;
  by_label.key.partition_key = attr::kLabel;
  req.indexes.push_back(by_label);
  return req;
}

std::optional<InstanceRecord> DynamoStateTable::get(const std::string& instance_id) {
  if (!is_plausible_instance_id(instance_id)) return std::nullopt;  // no record can be stored under it
  auto item = db_.get_item({.table = table_, .key = key_of(instance_id), .consistent_read = true});
  if (!item) return std::nullopt;
  return decode_or_warn(*item);
}

std::map<std::string, InstanceRecord> DynamoStateTable::get_many(const std::vector<std::string>& instance_ids) {
  std::set<std::string> unique(instance_ids.begin(), instance_ids.end());  // DynamoDB refuses duplicates
  std::map<std::string, InstanceRecord> out;
  std::vector<aws::Item> keys;
  auto flush = [&] {
    for (const auto& item : db_.batch_get_item({.table = table_, .keys = std::move(keys), .consistent_read = true})) {
      if (auto r = decode_or_warn(item)) out.emplace(r->instance_id, std::move(*r));
    }
    keys.clear();
  };
  for (const auto& id : unique) {
    if (!is_plausible_instance_id(id)) continue;  // no record can be stored under it
    keys.push_back(key_of(id));
    if (keys.size() == aws::kBatchGetMaxKeys) flush();
  }
  if (!keys.empty()) flush();
  return out;
}

bool DynamoStateTable::create(const InstanceRecord& record) {
  ExpressionBuilder b;
  b.require("attribute_not_exists(" + b.name(attr::kInstanceId) + ")");
  aws::PutItemRequest req;
  req.table = table_;
  req.item = encode_record(record);
  req.item[attr::kInstanceId] = key_of(record.instance_id).at(attr::kInstanceId);
  req.condition = b.condition_expression();
  req.names = b.names();
  return db_.put_item(req).applied;
}

bool DynamoStateTable::transition(const std::string& instance_id, const Expect& expect, const LifecycleChange& c) {
  ExpressionBuilder b;
  b.require(expect);
  if (c.state) b.set(attr::kState, AttributeValue::string(std::string(state_name(*c.state))));
  if (c.generation) b.set(attr::kGeneration, AttributeValue::number(*c.generation));
  if (c.label) {
    if (c.label->empty()) b.remove(attr::kLabel);
    else b.set(attr::kLabel, AttributeValue::string(*c.label));
  }
  if (c.deadline_ms) b.set(attr::kDeadline, AttributeValue::number(*c.deadline_ms));
  if (c.hard_deadline_ms) {
    if (*c.hard_deadline_ms == 0) b.remove(attr::kHardDeadline);
    else b.set(attr::kHardDeadline, AttributeValue::number(*c.hard_deadline_ms));
  }
  if (c.state_since_ms) b.set(attr::kStateSince, AttributeValue::number(*c.state_since_ms));
  if (c.reg_token) {
    if (c.reg_token->empty()) b.remove(attr::kRegToken);
    else b.set(attr::kRegToken, AttributeValue::string(c.reg_token->reveal()));
  }
  if (c.reg_url) b.set(attr::kRegUrl, AttributeValue::string(*c.reg_url));
  if (c.remove_token) {
    if (c.remove_token->empty()) b.remove(attr::kRemoveToken);
    else b.set(attr::kRemoveToken, AttributeValue::string(c.remove_token->reveal()));
  }
  if (c.jit_config) {
    if (c.jit_config->empty()) b.remove(attr::kJitConfig);
    else b.set(attr::kJitConfig, AttributeValue::string(c.jit_config->reveal()));
  }
  if (c.advertise_pending) {
    if (*c.advertise_pending) b.set(attr::kAdvertisePending, AttributeValue::boolean(true));
    else b.remove(attr::kAdvertisePending);
  }
  if (c.orphan_since_ms) {
    if (*c.orphan_since_ms == 0) b.remove(attr::kOrphanSince);
    else b.set(attr::kOrphanSince, AttributeValue::number(*c.orphan_since_ms));
  }
  if (c.kept_until_ms) {
    if (*c.kept_until_ms == 0) b.remove(attr::kKeptUntil);
    else b.set(attr::kKeptUntil, AttributeValue::number(*c.kept_until_ms));
  }
  if (c.bypass_removal) {
    if (*c.bypass_removal) b.set(attr::kBypassRemoval, AttributeValue::boolean(true));
    else b.remove(attr::kBypassRemoval);
  }
  if (c.retire_pending) {
    if (*c.retire_pending) b.set(attr::kRetirePending, AttributeValue::boolean(true));
    else b.remove(attr::kRetirePending);
  }
  if (c.reuse_scope_key) {
    if (!c.reuse_scope_key->empty()) b.set(attr::kReuseScopeKey, AttributeValue::string(*c.reuse_scope_key));
    else b.remove(attr::kReuseScopeKey);
  }
  if (c.awaited_until_ms) {
    if (*c.awaited_until_ms != 0) b.set(attr::kAwaitedUntil, AttributeValue::number(*c.awaited_until_ms));
    else b.remove(attr::kAwaitedUntil);
  }
  if (c.spot_rerun && !c.spot_rerun->empty()) b.set(attr::kSpotRerun, AttributeValue::string(*c.spot_rerun));
  if (c.spot_run && !c.spot_run->empty()) b.set(attr::kSpotRun, AttributeValue::string(*c.spot_run));
  return conditional_update(db_, table_, key_of(instance_id), instance_id, b);
}

std::vector<InstanceRecord> DynamoStateTable::by_label(const std::string& label) {
  aws::QueryRequest req;
  req.table = table_;
  req.index = kLabelIndex;
  req.key_condition = "#l = :l";
  req.names = {{"#l", attr::kLabel}};
  req.values = {{":l", AttributeValue::string(label)}};
  std::vector<InstanceRecord> out;
  db_.query_pages(req, [&](aws::Page& page) {
    for (const auto& item : page.items) {
      if (auto r = decode_or_warn(item)) out.push_back(std::move(*r));
    }
    return true;
  });
  return out;
}

ScanStats DynamoStateTable::scan(const std::function<void(const InstanceRecord&)>& visit) {
  return scan_table(visit, true);
}

ScanStats DynamoStateTable::scan_eventually(const std::function<void(const InstanceRecord&)>& visit) {
  return scan_table(visit, false);
}

ScanStats DynamoStateTable::scan_table(const std::function<void(const InstanceRecord&)>& visit, bool consistent) {
  ScanStats stats;
  aws::ScanRequest req;
  req.table = table_;
  req.consistent_read = consistent;
  db_.scan_pages(req, [&](aws::Page& page) {
    ++stats.pages;
    for (const auto& item : page.items) {
      ++stats.items;
      if (auto r = decode_or_warn(item)) visit(*r);
      else if (!is_lease_item(item)) ++stats.skipped;
    }
    return true;
  });
  return stats;
}

bool DynamoStateTable::remove(const std::string& instance_id, const Expect& expect) {
  ExpressionBuilder b;
  b.require(expect);
  aws::DeleteItemRequest req;
  req.table = table_;
  req.key = key_of(instance_id);
  req.condition = b.condition_expression();
  req.names = b.names();
  req.values = b.values();
  return db_.delete_item(req).applied;
}

bool DynamoStateTable::report(const std::string& instance_id, const AgentReport& r) {
  if ((r.signal || r.spot_job || r.take_reg_token || r.take_remove_token || r.take_jit_config) && !r.generation) {
    throw std::invalid_argument("an agent signal, spot job or token removal must name its generation");
  }
  ExpressionBuilder b;
  b.require("attribute_exists(" + b.name(attr::kInstanceId) + ")");
  if (r.generation) b.require_equal(attr::kGeneration, AttributeValue::number(*r.generation));
  if (r.heartbeat_ms) b.set(attr::kHeartbeat, AttributeValue::number(*r.heartbeat_ms));
  if (r.busy) b.set(attr::kBusy, AttributeValue::boolean(*r.busy));
  if (r.signal) {
    b.set(attr::kSignal, AttributeValue::string(std::string(agent_signal_name(*r.signal))));
    b.set(attr::kSignalGeneration, AttributeValue::number(*r.generation));
  }
  if (r.signal_detail) b.set(attr::kSignalDetail, AttributeValue::string(r.signal_detail->empty() ? "-" : *r.signal_detail));
  if (r.runner_id) b.set(attr::kRunnerId, AttributeValue::number(*r.runner_id));
  if (r.runner_name && !r.runner_name->empty()) b.set(attr::kRunnerName, AttributeValue::string(*r.runner_name));
  if (r.agent_version && !r.agent_version->empty()) b.set(attr::kAgentVersion, AttributeValue::string(*r.agent_version));
  if (r.runner_version && !r.runner_version->empty()) {
    b.set(attr::kRunnerVersion, AttributeValue::string(*r.runner_version));
  }
  if (r.pre_run && *r.pre_run != PreRun::kNone) {
    b.set(attr::kPreRun, AttributeValue::string(std::string(pre_run_name(*r.pre_run))));
  }
  if (r.pre_run_detail) b.set(attr::kPreRunDetail, AttributeValue::string(r.pre_run_detail->empty() ? "-" : *r.pre_run_detail));
  if (r.spot_job && !r.spot_job->empty()) {
    b.set(attr::kSpotJob, AttributeValue::string(*r.spot_job));
    b.set(attr::kSpotGeneration, AttributeValue::number(*r.generation));
  }
  if (r.spot_job_result && !r.spot_job_result->empty()) {
    b.set(attr::kSpotJobResult, AttributeValue::string(*r.spot_job_result));
  }
  if (r.take_reg_token) b.remove(attr::kRegToken);
  if (r.take_remove_token) b.remove(attr::kRemoveToken);
  if (r.take_jit_config) b.remove(attr::kJitConfig);
  if (r.take_open_key) b.remove(attr::kOpenKey);
  return conditional_update(db_, table_, key_of(instance_id), instance_id, b);
}

}  // namespace runpool::pool
