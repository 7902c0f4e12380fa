// Corrupted and foreign items in the state table, and malformed pool messages, against the real
// runpoolctl: items of the wrong types, with missing keys, huge or hostile strings, unknown states,
// other pools' records and another application's items sharing the table; pool messages that are
// garbage, JSON of the wrong shape, forged, stale, huge, or naming another pool's instance.
// refresh, status, scale-down and provision must skip the bad items with a warning and leave them
// exactly as they were, drop the bad messages, and never claim what a message may not claim.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/json.h"
#include "common/pool/pool_message.h"
#include "common/pool/record_codec.h"
#include "common/pool/record_key.h"
#include "common/pool/sealed_field.h"
#include "tests/integration/bad_input_support.h"

namespace runpool::bad_input {
namespace {

using aws::AttributeValue;
using controller::testing::CtlPool;
using controller::testing::describe;

AttributeValue S(std::string s) { return AttributeValue::string(std::move(s)); }
AttributeValue N(int64_t n) { return AttributeValue::number(n); }

class BadInputTable : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    std::string name = "badtab" + std::to_string(++n);
    pool_ = std::make_unique<CtlPool>(cloud_, name, "badinput-table", "aws_max_attempts = 2\n");
    auto init = pool_->run({"init"});
    ASSERT_EQ(init.exit_code, 0) << describe(init);
    table_ = std::make_unique<pool::DynamoStateTable>(aws_.db, pool_->table(), cloud_.instance_role_id());
  }
  void TearDown() override {
    agents_.reset();
    ::unlink(marker().c_str());
  }

  int64_t now() { return to_epoch_ms(system_clock().now()); }
  // The partition key the table stores a record under (common/pool/record_key.h); a hostile id as
  // a foreign writer would spell it, after the same role prefix.
  std::string key(const std::string& id) {
    if (!pool::is_plausible_instance_id(id)) return cloud_.instance_role_id() + ":" + id;
    return pool::record_key(cloud_.instance_role_id(), id);
  }
  void put(const aws::Item& item) {
    aws::PutItemRequest p;
    p.table = pool_->table();
    p.item = item;
    aws_.db.put_item(p);
  }
  std::optional<aws::Item> raw_at(const std::string& stored_key) {
    aws::GetItemRequest g;
    g.table = pool_->table();
    g.key = {{"instance_id", S(stored_key)}};
    g.consistent_read = true;
    return aws_.db.get_item(g);
  }
  // A valid record of this pool's in `state`, as a base for corruptions.
  aws::Item record(const std::string& id, const std::string& state = "idle", int64_t generation = 2) {
    return {{"instance_id", S(key(id))}, {"pool", S(pool_->pool())},  {"state", S(state)},
            {"generation", N(generation)}, {"deadline", N(now() + 3'600'000)}, {"state_since", N(now())},
            {"created_at", N(now() - 60'000)}, {"resource_class", S("small")}, {"usage_class", S("on-demand")},
            {"instance_type", S("c7i.large")}, {"heartbeat", N(now())},
            {"seal_key", S(pool::make_seal_keys().public_key)}};
  }
  aws::Item with(aws::Item item, const std::string& name, AttributeValue v) {
    item[name] = std::move(v);
    return item;
  }
  aws::Item without(aws::Item item, const std::string& name) {
    item.erase(name);
    return item;
  }
  std::string queue_url() { return aws_.sqs.get_queue_url(pool_->pool() + "-small"); }
  std::vector<std::string> bodies() {
    std::vector<std::string> out, receipts;
    std::string url = queue_url();
    for (int i = 0; i < 20; ++i) {
      auto got = aws_.sqs.receive_messages({.queue_url = url, .max_messages = 10, .wait_seconds = 0, .visibility_timeout = 30});
      if (got.empty()) break;
      for (auto& m : got) {
        out.push_back(m.body);
        receipts.push_back(m.receipt_handle);
      }
    }
    for (const auto& r : receipts) aws_.sqs.change_message_visibility(url, r, 0);
    return out;
  }

  // The corrupted and foreign items: name → item. Each is written as is and must stay as is.
  std::map<std::string, aws::Item> corrupted() {
    const std::string huge(300 * 1024, 'y');
    std::map<std::string, aws::Item> c;
    c["generation as a string"] = with(record("i-00bad000000000001"), "generation", S("two"));
    c["state as a number"] = with(record("i-00bad000000000002"), "state", N(3));
    c["deadline as a string"] = with(record("i-00bad000000000003"), "deadline", S("soon"));
    c["heartbeat as a list"] = with(record("i-00bad000000000004"), "heartbeat", AttributeValue::list({N(1)}));
    c["runner_id as a string"] = with(record("i-00bad000000000005", "running"), "runner_id", S("17"));
    c["no state"] = without(record("i-00bad000000000006"), "state");
    c["no generation"] = without(record("i-00bad000000000007"), "generation");
    c["unknown state"] = with(record("i-00bad000000000008"), "state", S("zombie"));
    c["upper-case state"] = with(record("i-00bad000000000009"), "state", S("IDLE"));
    c["unknown usage class"] = with(record("i-00bad00000000000a"), "usage_class", S("free"));
    c["unknown signal"] = with(record("i-00bad00000000000b", "running"), "signal", S("pwned"));
    // The label is the by_label index's key (at most 2 KB); other strings may fill the item (400 KB).
    c["long label"] = with(record("i-00bad00000000000c", "running"), "label", S(std::string(2000, 'x')));
    c["huge detail"] = with(with(record("i-00bad00000000001c", "running"), "signal", S("failed")), "signal_detail", S(huge));
    c["generation beyond int64"] = with(record("i-00bad00000000000d"), "generation",
                                        AttributeValue::number_text("123456789012345678901234567890"));
    c["fractional generation"] = with(record("i-00bad00000000000e"), "generation", AttributeValue::number_text("2.5"));
    c["hostile id: newline"] = record("i-0bad\nforged: runpoolctl: all good");
    c["hostile id: control"] = record("i-\x1b[31m\x07" "0bad");
    c["hostile id: traversal"] = record("../../etc/passwd");
    c["hostile id: huge"] = record("i-" + std::string(2000, 'f'));
    c["hostile id: subshell"] = record("i-$(touch " + marker() + ")");
    c["hostile label"] = with(record("i-00bad00000000000f", "running"), "label",
                              S("$(touch " + marker() + ")\"`x`\n\x1b[2J"));
    c["another application's item"] = {{"instance_id", S("user#42")}, {"email", S("a@example.com")},
                                       {"balance", N(100)}};
    c["another pool's idle record"] = with(record("i-00bad000000000010"), "pool", S("someone-else"));
    c["another pool's running record"] = with(record("i-00bad000000000011", "running"), "pool", S("someone-else"));
    return c;
  }

  runpool::testing::LocalCloud& cloud_ = runpool::testing::LocalCloud::shared();
  controller::testing::CloudClients aws_{cloud_};
  std::unique_ptr<CtlPool> pool_;
  std::unique_ptr<pool::DynamoStateTable> table_;
  std::unique_ptr<controller::testing::SimulatedAgents> agents_;
};

TEST_F(BadInputTable, CorruptedAndForeignItemsAreSkippedWithAWarningAndLeftAsTheyWere) {
  auto items = corrupted();
  for (const auto& [name, item] : items) put(item);
  // A valid idle record, advertised, that the commands must still serve.
  put(record("i-00600d00000000001"));
  aws_.sqs.send_message(queue_url(), pool::pool_message_body({"i-00600d00000000001", 2}));
  agents_ = std::make_unique<controller::testing::SimulatedAgents>(cloud_, pool_->table(), pool_->pool());

  int runs = 0;
  const std::vector<std::vector<std::string>> commands = {
      {"status"}, {"--json", "status", "--all"}, {"refresh", "--dry-run"}, {"refresh"}, {"--json", "refresh"},
      {"scale-down", "--dry-run"}, {"--log-format", "json", "status"},
      {"--json", "provision", "--count", "1", "--label", "bad-table-run", "--usage-class", "on-demand"},
      {"--json", "release", "--wait", "--label", "bad-table-run"}};
  for (const auto& args : commands) {
    auto r = pool_->run(args);
    ++runs;
    std::string what;
    for (const auto& a : args) what += a + " ";
    expect_clean(r, what + "\n" + describe(r).substr(0, 4000));
    EXPECT_EQ(r.exit_code, 0) << what << "\n" << describe(r).substr(0, 4000);
    // Skipped with a warning that says so, once per bad item of a full scan, on short lines.
    const bool full_scan = std::find(args.begin(), args.end(), "release") == args.end() &&
                           std::find(args.begin(), args.end(), "provision") == args.end();
    if (full_scan) {
      EXPECT_NE(r.err.find("skipping a record"), std::string::npos) << what << "\n" << r.err.substr(0, 3000);
    }
    for (const auto& line : lines_of(r.err)) EXPECT_LT(line.size(), 4096u) << what << ": a huge value echoed";
    // The 300 KB detail never; the 2 KB label only in --json output, which carries values whole.
    const bool json = std::find(args.begin(), args.end(), "--json") != args.end();
    for (char c : {'x', 'y'}) {
      if (c == 'x' && json) continue;
      EXPECT_EQ(r.err.find(std::string(1000, c)), std::string::npos) << what << ": a huge value echoed";
      EXPECT_EQ(r.out.find(std::string(1000, c)), std::string::npos) << what << ": a huge value echoed";
    }
    for (const auto& [name, item] : items) {
      auto now_item = raw_at(item.at("instance_id").as_string());
      ASSERT_TRUE(now_item.has_value()) << name << " was deleted by " << what;
      // The simulated agents beat on whatever record of the pool decodes (the hostile label, the
      // long strings): the heartbeat is theirs; every other attribute must be as written.
      aws::Item a = *now_item, b = item;
      if (b.count("heartbeat") && b.at("heartbeat").type() == AttributeValue::Type::kNumber) {
        a.erase("heartbeat");
        b.erase("heartbeat");
      }
      EXPECT_EQ(a, b) << name << " was changed by " << what;
    }
  }
  // The valid instance was served: claimed by provision, back in the pool after release.
  auto good = table_->get("i-00600d00000000001");
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(good->generation, 3) << "the valid idle record was claimed once";
  EXPECT_EQ(good->state, pool::State::kIdle);
  std::printf("[ bad input ] table: %zu corrupted or foreign items, %d runs, none changed\n", items.size(), runs);
}

TEST_F(BadInputTable, MalformedForgedAndStaleMessagesAreDroppedNeverClaimed) {
  // What the messages name: a valid idle record (gen 4), a running one, another pool's idle one,
  // and a corrupted one.
  put(record("i-00600d00000000002", "idle", 4));
  put(record("i-00600d00000000003", "running", 4));
  auto foreign = with(record("i-00bad000000000020", "idle", 1), "pool", S("someone-else"));
  put(foreign);
  auto corrupt = with(record("i-00bad000000000021", "idle", 1), "usage_class", S("free"));
  put(corrupt);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"garbage", "\x01\x02garbage\xff"},
      {"empty object", "{}"},
      {"array", "[\"i-00600d00000000002\", 4]"},
      {"string generation", R"({"instance_id":"i-00600d00000000002","generation":"4"})"},
      {"fractional generation", R"({"instance_id":"i-00600d00000000002","generation":4.5})"},
      {"zero generation", R"({"instance_id":"i-00600d00000000002","generation":0})"},
      {"huge generation", R"({"instance_id":"i-00600d00000000002","generation":1e300})"},
      {"stale generation", R"({"instance_id":"i-00600d00000000002","generation":3})"},
      {"future generation", R"({"instance_id":"i-00600d00000000002","generation":5})"},
      {"forged id, no record", R"({"instance_id":"i-0123456789abcdef0","generation":1})"},
      {"running record", R"({"instance_id":"i-00600d00000000003","generation":4})"},
      {"another pool's instance", R"({"instance_id":"i-00bad000000000020","generation":1})"},
      {"corrupted record", R"({"instance_id":"i-00bad000000000021","generation":1})"},
      {"hostile id", R"({"instance_id":"i-$(touch )\n","generation":1})"},
      {"traversal id", R"({"instance_id":"../../etc/passwd","generation":1})"},
      {"duplicate keys", R"({"instance_id":"i-00600d00000000003","instance_id":"i-00600d00000000002","generation":4})"},
      {"huge", "{\"instance_id\":\"i-00600d00000000002\",\"generation\":4,\"pad\":\"" + std::string(200 * 1024, 'p') + "\"}"},
      {"deep nesting", std::string(1100, '[')},  // past jsoncpp's limit: once an exception, not "malformed"
      {"control characters", "{\"instance_id\":\"i-00600d00000000002\x1b[2J\",\"generation\":4}"},
  };
  for (const auto& [name, body] : bad) aws_.sqs.send_message(queue_url(), body);
  aws_.sqs.send_message(queue_url(), pool::pool_message_body({"i-00600d00000000002", 4}));  // the one valid message
  agents_ = std::make_unique<controller::testing::SimulatedAgents>(cloud_, pool_->table(), pool_->pool());

  // Two provisions: the first may claim only the valid idle instance (the huge valid-shaped
  // message names it too, with its generation); the second must find nothing else to claim.
  std::set<std::string> claimed;
  std::string runs;
  for (const char* label : {"bad-msg-1", "bad-msg-2"}) {
    auto r = pool_->run({"--json", "provision", "--count", "1", "--label", label, "--usage-class", "on-demand"});
    expect_clean(r, std::string("provision ") + label + "\n" + describe(r).substr(0, 4000));
    ASSERT_EQ(r.exit_code, 0) << describe(r).substr(0, 4000);
    Json::Value j = parse_json(r.out, "provision");
    for (const auto& i : j["instances"]) claimed.insert(i["instance_id"].asString());
    for (const auto& line : lines_of(r.err)) EXPECT_LT(line.size(), 4096u);
    runs += describe(r).substr(0, 6000);
  }
  EXPECT_TRUE(claimed.count("i-00600d00000000002")) << "the valid message was not claimed\n" << runs;
  for (const char* never : {"i-00600d00000000003", "i-00bad000000000020", "i-00bad000000000021", "i-0123456789abcdef0"}) {
    EXPECT_FALSE(claimed.count(never)) << never << " was claimed from a bad message\n" << runs;
  }
  EXPECT_EQ(raw_at(key("i-00bad000000000020")), foreign) << "another pool's record was touched";
  EXPECT_EQ(raw_at(key("i-00bad000000000021")), corrupt) << "a corrupted record was touched";
  EXPECT_FALSE(raw_at(key("i-0123456789abcdef0")).has_value()) << "a forged id got a record";
  auto running = table_->get("i-00600d00000000003");
  ASSERT_TRUE(running);
  EXPECT_EQ(running->generation, 4);

  // refresh sweeps whatever provision left: no malformed or stale message survives it.
  auto rel = pool_->run({"release", "--wait", "--label", "bad-msg-1"});
  expect_clean(rel, "release\n" + describe(rel));
  auto r = pool_->run({"refresh"});
  expect_clean(r, "refresh\n" + describe(r).substr(0, 4000));
  EXPECT_EQ(r.exit_code, 0) << describe(r).substr(0, 4000);
  for (const auto& body : bodies()) {
    std::string error;
    auto m = pool::parse_pool_message(body, &error);
    ASSERT_TRUE(m.has_value()) << "a malformed message survived refresh: " << body.substr(0, 200);
    auto rec = table_->get(m->instance_id);
    ASSERT_TRUE(rec.has_value()) << body;
    EXPECT_EQ(rec->pool, pool_->pool()) << body;
    EXPECT_EQ(rec->state, pool::State::kIdle) << body;
    EXPECT_EQ(rec->generation, m->generation) << body;
  }
  std::printf("[ bad input ] pool messages: %zu bad messages, none claimed\n", bad.size());
}

}  // namespace
}  // namespace runpool::bad_input
