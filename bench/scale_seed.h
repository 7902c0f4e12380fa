// The state control_plane_bench measures, written straight into the local cloud: a shared pool's
// running runners as runpoolctl scale-up and the agents would have left them — an EC2 instance
// tagged for the pool (record-only: no processes), its runner registered on GitHub (bulk, no
// runner process) and its record in the table (BatchWriteItem, 25 items a call) — in a steady
// state: nothing past a deadline, every runner where its record says, no idle pool instance, so
// `refresh` has nothing to change and only reads. Most runners are busy; every `idle_every`-th is
// idle, which gives `scale-down` its quota decisions.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/aws/attribute_value.h"
#include "common/pool/record_codec.h"
#include "common/pool/record_key.h"
#include "common/pool/runner_name.h"
#include "controller/compute.h"
#include "tests/support/runpoolctl_harness.h"

namespace runpool::bench {

struct ScaleShape {
  std::string pool, table;
  std::string resource_class = "small";
  std::string instance_type = "c7i.large";
  std::string labels;   // the shared runners' label list (the record's label), e.g. "self-hosted,linux,x64,small"
  std::string reg_url;  // https://<github>/acme/app: the owner scope runpoolctl lists
  int idle_every = 20;  // every n-th runner is idle (not busy)
};

class ScaleSeeder {
 public:
  ScaleSeeder(runpool::testing::LocalCloud& cloud, controller::testing::CloudClients& aws, ScaleShape shape)
      : cloud_(cloud), aws_(aws), s_(std::move(shape)) {}

  int total() const { return total_; }
  int idle() const { return idle_; }

  // Adds `count` running shared runners. Uses the controller's key: reset the request counters after.
  void add(int count) {
    Json::Value ec2;
    ec2["count"] = count;
    ec2["instanceType"] = s_.instance_type;
    ec2["tags"][controller::kTagPool] = s_.pool;
    ec2["tags"][controller::kTagTable] = s_.table;
    ec2["tags"][controller::kTagResourceClass] = s_.resource_class;
    const Json::Value made = cloud_.control("POST", "/_control/ec2/record-only-instances", ec2);
    std::vector<std::string> ids;
    for (const auto& id : made["instanceIds"]) ids.push_back(id.asString());
    if (static_cast<int>(ids.size()) != count) throw std::runtime_error("EC2 stand-in made too few instances");

    std::vector<bool> busy;
    Json::Value gh;
    gh["owner"] = "acme";
    gh["repo"] = "app";
    for (int i = 0; i < count; ++i) {
      busy.push_back((total_ + i) % s_.idle_every != 0);
      Json::Value r;
      r["name"] = pool::runner_name(s_.pool, ids[i], 1);
      r["busy"] = static_cast<bool>(busy.back());
      for (const auto& l : split(s_.labels)) r["labels"].append(l);
      gh["runners"].append(r);
    }
    const Json::Value runners = cloud_.control("POST", "/_control/github/runners/bulk", gh);
    if (static_cast<int>(runners["ids"].size()) != count) throw std::runtime_error("GitHub stand-in made too few runners");

    const int64_t now = to_epoch_ms(system_clock().now());
    std::vector<aws::Item> items;
    for (int i = 0; i < count; ++i) {
      pool::InstanceRecord r;
      r.instance_id = ids[i];
      r.pool = s_.pool;
      r.state = pool::State::kRunning;
      r.label = s_.labels;
      r.generation = 1;
      r.created_ms = now - 2 * 3'600'000;
      r.state_since_ms = r.created_ms + 60'000;
      r.deadline_ms = now + 4 * 3'600'000;
      r.hard_deadline_ms = r.deadline_ms + 30 * 60'000;
      r.resource_class = s_.resource_class;
      r.instance_type = s_.instance_type;
      r.reg_url = s_.reg_url;
      r.shared = true;
      r.os = "linux";
      r.heartbeat_ms = now;
      r.signal = pool::AgentSignal::kRegistered;
      r.signal_generation = 1;
      r.runner_id = runners["ids"][i].asInt64();
      r.runner_name = pool::runner_name(s_.pool, ids[i], 1);
      r.busy = busy[i];
      r.agent_version = "bench";
      aws::Item item = pool::encode_record(r);
      item[pool::attr::kInstanceId] = aws::AttributeValue::string(pool::record_key(cloud_.instance_role_id(), ids[i]));
      items.push_back(std::move(item));
      idle_ += busy[i] ? 0 : 1;
    }
    write_items(items);
    total_ += count;
  }

 private:
  static std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      if (comma > start) out.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
    return out;
  }

  // BatchWriteItem, 25 puts a call; unprocessed items are sent again (bounded).
  void write_items(const std::vector<aws::Item>& items) {
    for (size_t i = 0; i < items.size(); i += 25) {
      Json::Value batch(Json::arrayValue);
      for (size_t j = i; j < std::min(items.size(), i + 25); ++j) {
        Json::Value put;
        put["PutRequest"]["Item"] = aws::item_to_json(items[j]);
        batch.append(put);
      }
      for (int attempt = 0; !batch.empty(); ++attempt) {
        if (attempt == 20) throw std::runtime_error("BatchWriteItem left items unprocessed 20 times");
        Json::Value body;
        body["RequestItems"][s_.table] = batch;
        Json::Value answer = aws::json_call(aws_.db_caller, "DynamoDB_20120810", "BatchWriteItem", body);
        batch = answer["UnprocessedItems"].isMember(s_.table) ? answer["UnprocessedItems"][s_.table]
                                                               : Json::Value(Json::arrayValue);
        if (!batch.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50 << std::min(attempt, 4)));
      }
    }
  }

  runpool::testing::LocalCloud& cloud_;
  controller::testing::CloudClients& aws_;
  ScaleShape s_;
  int total_ = 0, idle_ = 0;
};

}  // namespace runpool::bench
