#include "controller/init.h"

#include <fmt/format.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include "common/json.h"
#include "common/pool/dynamo_state_table.h"
#include "common/pool/record_codec.h"
#include "common/pool/record_key.h"
#include "controller/compute.h"
#include "controller/sqs_pool_queue.h"
#include "controller/user_data.h"

namespace runpool::controller {
namespace {

constexpr const char* kFingerprintPrefix = "runpool ";

}  // namespace

void ensure_state_table(const Settings& s, aws::DynamoDbClient& db, Duration wait, InitReport& report) {
  aws::CreateTableRequest req = pool::DynamoStateTable::create_table_request(s.table);
  report.table_created = db.create_table(req);  // false: it existed (or a concurrent init made it)
  aws::TableDescription t = db.wait_until_active(s.table, wait);
  // A table made before the index existed (or by hand) gets it added.
  for (int attempt = 0; attempt < 10 && !t.index(pool::kLabelIndex); ++attempt) {
    aws::UpdateTableRequest u;
    u.table = s.table;
    u.attributes = {{pool::attr::kLabel, aws::ScalarType::kString}};
    u.create_indexes = {req.indexes.front()};
    u.pay_per_request = t.billing_mode != "PROVISIONED";
    try {
      db.update_table(u);
      report.index_added = true;
    } catch (const aws::ResourceInUseError&) {
      spdlog::info("table {} is busy (another init?); waiting", s.table);
    } catch (const aws::AwsError& e) {
      // A concurrent init added it between our look and our call.
      if (e.message().find("already exists") == std::string::npos) throw;
    }
    t = db.wait_until_active(s.table, wait);
  }
  if (!t.index(pool::kLabelIndex)) throw std::runtime_error("table " + s.table + " still has no by_label index");
}

int migrate_record_keys(const Settings& s, aws::DynamoDbClient& db) {
  using aws::AttributeValue;
  aws::ScanRequest scan;
  scan.table = s.table;
  scan.consistent_read = true;
  scan.filter = "#p = :p";
  scan.names = {{"#p", pool::attr::kPool}};
  scan.values = {{":p", AttributeValue::string(s.pool)}};
  std::vector<aws::Item> bare;
  db.scan_pages(scan, [&](aws::Page& page) {
    for (auto& item : page.items) {
      auto key = item.find(pool::attr::kInstanceId);
      if (key == item.end() || key->second.type() != AttributeValue::Type::kString) continue;
      auto parsed = pool::parse_record_key(key->second.as_string());
      if (parsed && parsed->instance_role_id.empty()) bare.push_back(std::move(item));
    }
    return true;
  });
  int moved = 0;
  for (aws::Item& item : bare) {
    const aws::Item old_key{{pool::attr::kInstanceId, item.at(pool::attr::kInstanceId)}};
    const std::string id = item.at(pool::attr::kInstanceId).as_string();
    aws::Item copy = item;
    copy[pool::attr::kInstanceId] = AttributeValue::string(pool::record_key(s.instance_role_id, id));
    // A copy left by an interrupted earlier init is the newer one: keep it, drop the old.
    db.put_item({.table = s.table, .item = copy, .condition = "attribute_not_exists(#k)",
                 .names = {{"#k", pool::attr::kInstanceId}}});
    // Only the item read: a concurrent writer's change keeps the old key for the next init.
    aws::DeleteItemRequest del{.table = s.table, .key = old_key, .condition = "#g = :g",
                               .names = {{"#g", pool::attr::kGeneration}},
                               .values = {{":g", item.count(pool::attr::kGeneration)
                                                     ? item.at(pool::attr::kGeneration)
                                                     : AttributeValue::number(0)}}};
    if (db.delete_item(del).applied) {
      ++moved;
    } else {
      spdlog::warn("record {} changed while it was being moved to its role-bound key; run init again", id);
    }
  }
  return moved;
}

namespace {

void ensure_template(const Settings& s, aws::Ec2Client& ec2, InitReport& report) {
  aws::LaunchTemplateData data = launch_template_data(s);
  std::string description = kFingerprintPrefix + launch_template_fingerprint(data);
  aws::LaunchTemplateRef ref{"", s.launch_template, ""};
  std::optional<aws::LaunchTemplate> existing = ec2.describe_launch_template(ref);
  if (!existing) {
    aws::CreateLaunchTemplateRequest c;
    c.name = s.launch_template;
    c.data = data;
    c.version_description = description;
    c.tags = {{kTagPool, s.pool}, {kTagTable, s.table}};
    try {
      aws::LaunchTemplate t = ec2.create_launch_template(c);
      report.template_id = t.id;
      report.template_version = t.default_version ? t.default_version : 1;
      report.template_action = "created";
      return;
    } catch (const aws::AwsError& e) {
      if (e.code().find("AlreadyExists") == std::string::npos) throw;
      existing = ec2.describe_launch_template(ref);  // a concurrent init created it
      if (!existing) throw;
    }
  }
  report.template_id = existing->id;
  auto current = ec2.describe_launch_template_versions(ref, {"$Default"});
  if (current.empty()) throw std::runtime_error("launch template " + s.launch_template + " has no default version");
  const aws::LaunchTemplateVersion& def_version = current.front();
  if (def_version.version_description == description && launch_template_drift(data, def_version.data).empty()) {
    report.template_action = "unchanged";
    report.template_version = def_version.version_number;
    return;
  }
  // A new version made from the default one: what the operator put there (a key pair, block
  // devices, network interfaces, tags, metadata choices) stays; only runpool's fields change.
  aws::CreateLaunchTemplateVersionRequest v;
  v.launch_template = ref;
  v.source_version = std::to_string(def_version.version_number);
  v.data = merge_into_current(data, def_version.data);
  v.version_description = description;
  aws::LaunchTemplateVersion made = ec2.create_launch_template_version(v);
  aws::LaunchTemplateRef def = ref;
  def.version = std::to_string(made.version_number);
  ec2.set_default_launch_template_version(def);
  report.template_action = "updated";
  report.template_version = made.version_number;
}

}  // namespace

InitReport init_pool(const Settings& s, aws::DynamoDbClient& db, aws::SqsClient& sqs, aws::Ec2Client& ec2,
                     Duration table_wait) {
  if (s.resource_classes.empty()) throw ConfigError("resource_classes is not set (name=type[,type…][;…])");
  if (s.image_id.empty()) throw ConfigError("image_id is not set");
  // Render first: a bad template is a configuration error before anything is created.
  aws::LaunchTemplateData data;
  try {
    data = launch_template_data(s);
  } catch (const std::exception& e) {
    throw ConfigError(std::string("user_data_template: ") + e.what());
  }
  require_aws(s);  // a region, and the instance role id records are keyed by
  InitReport report;
  ensure_state_table(s, db, table_wait, report);
  report.records_rekeyed = migrate_record_keys(s, db);
  for (const auto& rc : s.resource_classes) {
    std::string name = s.queue_name(rc.name);
    report.queues.emplace_back(name, sqs.create_queue(name, pool_queue_attributes()));
  }
  ensure_template(s, ec2, report);
  return report;
}

Json::Value init_json(const InitReport& r) {
  Json::Value v(Json::objectValue);
  v["table_created"] = r.table_created;
  v["index_added"] = r.index_added;
  v["queues"] = Json::Value(Json::objectValue);
  for (const auto& [name, url] : r.queues) v["queues"][name] = url;
  v["launch_template_id"] = r.template_id;
  v["launch_template"] = r.template_action;
  v["launch_template_version"] = static_cast<Json::Int64>(r.template_version);
  v["records_rekeyed"] = r.records_rekeyed;
  return v;
}

int run_init(const Settings& s, aws::DynamoDbClient& db, aws::SqsClient& sqs, aws::Ec2Client& ec2, std::ostream& out,
             bool json) {
  InitReport r = init_pool(s, db, sqs, ec2, s.init_timeout);
  if (json) {
    out << write_json(init_json(r)) << "\n";
    return 0;
  }
  out << fmt::format("table {}: {}{}\n", s.table, r.table_created ? "created" : "exists",
                     r.index_added ? " (by_label index added)" : "");
  if (r.records_rekeyed > 0) {
    out << fmt::format(
        "table {}: {} record(s) moved to keys bound to the instance role (\"<role id>:<instance id>\"); an agent "
        "older than this runpoolctl does not find its record and ends its instance, which a provision replaces\n",
        s.table, r.records_rekeyed);
  }
  for (const auto& [name, url] : r.queues) out << fmt::format("queue {}: {}\n", name, url);
  out << fmt::format("launch template {} ({}): {}, default version {}\n", s.launch_template, r.template_id,
                     r.template_action, r.template_version);
  return 0;
}

}  // namespace runpool::controller
