// The state table's calls on both backends: the DynamoDB client (CreateTable, DescribeTable,
// UpdateTable adding the label index, conditional PutItem/UpdateItem/DeleteItem, BatchGetItem,
// Query on by_label and Scan, page by page) and DynamoStateTable on top of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "common/pool/dynamo_state_table.h"
#include "common/pool/record_codec.h"
#include "common/pool/record_key.h"
#include "tests/moto/backends.h"

namespace runpool::testing {
namespace {

using aws::AttributeValue;
using aws::Item;
using pool::InstanceRecord;
using pool::State;

class TableTest : public BackendTest {
 protected:
  // A table of the state table's schema, made for this test and deleted after it.
  std::string make_table(bool with_index = true) {
    std::string name = unique_name("moto-table");
    aws::CreateTableRequest req = pool::DynamoStateTable::create_table_request(name);
    if (!with_index) {
      req.indexes.clear();
      req.attributes.erase(std::remove_if(req.attributes.begin(), req.attributes.end(),
                                          [](const aws::AttributeDefinition& a) { return a.name != req_key(); }),
                           req.attributes.end());
    }
    EXPECT_TRUE(aws_.db().create_table(req));
    aws_.db().wait_until_active(name, std::chrono::seconds(20), std::chrono::milliseconds(50));
    tables_.push_back(name);
    return name;
  }
  static std::string req_key() { return pool::attr::kInstanceId; }

  void TearDown() override {
    for (const auto& t : tables_) {
      try {
        aws_.db().delete_table(t);
      } catch (const aws::AwsError&) {
        // Best effort: each test's names are its own.
      }
    }
  }

  InstanceRecord record(const std::string& id, State s, int64_t generation, const std::string& label = "") {
    InstanceRecord r;
    r.instance_id = id;
    r.state = s;
    r.generation = generation;
    r.label = label;
    r.pool = "moto";
    r.resource_class = "small";
    r.deadline_ms = 1'900'000'000'000;
    return r;
  }

  static std::string instance_id(int n) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "i-0%016x", n);
    return buf;
  }

  std::vector<std::string> tables_;
};

TEST_P(TableTest, CreateDescribeCreateAgainAndDelete) {
  std::string name = make_table();
  auto t = aws_.db().describe_table(name);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->name, name);
  EXPECT_EQ(t->status, "ACTIVE");
  EXPECT_EQ(t->key.partition_key, pool::attr::kInstanceId);
  EXPECT_EQ(t->billing_mode, "PAY_PER_REQUEST");
  EXPECT_NE(t->arn.find(":table/" + name), std::string::npos) << t->arn;
  const aws::IndexDescription* index = t->index(pool::kLabelIndex);
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->key.partition_key, pool::attr::kLabel);
  EXPECT_EQ(index->status, "ACTIVE");
  EXPECT_TRUE(t->all_active());

  // A second init's CreateTable is an answer, not a failure.
  EXPECT_FALSE(aws_.db().create_table(pool::DynamoStateTable::create_table_request(name)));
  EXPECT_FALSE(aws_.db().describe_table(name + "-missing"));
  EXPECT_FALSE(aws_.db().delete_table(name + "-missing"));
  try {
    aws_.db().get_item({.table = name + "-missing", .key = {{"instance_id", AttributeValue::string("x")}}});
    ADD_FAILURE() << "expected ResourceNotFoundException";
  } catch (const aws::ResourceNotFoundError& e) {
    EXPECT_EQ(e.code(), "ResourceNotFoundException");
  }
}

// dynalite cannot add an index to an existing table; moto can, so init's UpdateTable path runs
// against a real implementation here.
TEST_P(TableTest, UpdateTableAddsTheLabelIndex) {
  if (!on_moto()) GTEST_SKIP() << "dynalite does not add a global secondary index to an existing table";
  std::string name = make_table(/*with_index=*/false);
  ASSERT_FALSE(aws_.db().describe_table(name)->index(pool::kLabelIndex));
  aws::CreateTableRequest full = pool::DynamoStateTable::create_table_request(name);
  aws::UpdateTableRequest u;
  u.table = name;
  u.attributes = {{pool::attr::kLabel, aws::ScalarType::kString}};
  u.create_indexes = {full.indexes.front()};
  aws::TableDescription updated = aws_.db().update_table(u);
  EXPECT_EQ(updated.name, name);
  aws::TableDescription t = aws_.db().wait_until_active(name, std::chrono::seconds(20), std::chrono::milliseconds(50));
  ASSERT_TRUE(t.index(pool::kLabelIndex));
  EXPECT_EQ(t.index(pool::kLabelIndex)->key.partition_key, pool::attr::kLabel);

  // The index serves queries once there.
  pool::DynamoStateTable table(aws_.db(), name, backend_.instance_role_id);
  ASSERT_TRUE(table.create(record(instance_id(1), State::kRunning, 1, "L")));
  EXPECT_EQ(table.by_label("L").size(), 1u);
}

TEST_P(TableTest, ConditionalWritesAreAnswers) {
  std::string name = make_table();
  const Item key{{"instance_id", AttributeValue::string("k1")}};
  Item item = key;
  item["generation"] = AttributeValue::number(1);
  item["state"] = AttributeValue::string("idle");
  aws::PutItemRequest put{.table = name, .item = item, .condition = "attribute_not_exists(#k)",
                          .names = {{"#k", "instance_id"}}};
  EXPECT_TRUE(aws_.db().put_item(put).applied);
  EXPECT_FALSE(aws_.db().put_item(put).applied) << "the item exists: the condition fails";

  aws::UpdateItemRequest claim{.table = name,
                               .key = key,
                               .update = "SET #s = :claimed ADD #g :one",
                               .condition = "#s = :idle AND #g = :gen",
                               .names = {{"#s", "state"}, {"#g", "generation"}},
                               .values = {{":claimed", AttributeValue::string("claimed")},
                                          {":idle", AttributeValue::string("idle")},
                                          {":gen", AttributeValue::number(1)},
                                          {":one", AttributeValue::number(1)}},
                               .return_values = aws::ReturnValues::kAllNew};
  aws::WriteResult won = aws_.db().update_item(claim);
  ASSERT_TRUE(won.applied);
  ASSERT_TRUE(won.attributes);
  EXPECT_EQ(won.attributes->at("generation").as_int(), 2);
  EXPECT_EQ(won.attributes->at("state").as_string(), "claimed");
  EXPECT_FALSE(aws_.db().update_item(claim).applied) << "a second claim of the same read loses";

  // A condition on a missing item fails as a condition, never as an error.
  aws::UpdateItemRequest missing = claim;
  missing.key = {{"instance_id", AttributeValue::string("k-missing")}};
  EXPECT_FALSE(aws_.db().update_item(missing).applied);

  aws::GetItemRequest get{.table = name, .key = key, .consistent_read = true};
  auto read = aws_.db().get_item(get);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->at("state").as_string(), "claimed");

  aws::DeleteItemRequest del{.table = name, .key = key, .condition = "#g = :g", .names = {{"#g", "generation"}},
                             .values = {{":g", AttributeValue::number(1)}}, .return_values = aws::ReturnValues::kAllOld};
  EXPECT_FALSE(aws_.db().delete_item(del).applied) << "generation 2 is not 1";
  del.values[":g"] = AttributeValue::number(2);
  aws::WriteResult gone = aws_.db().delete_item(del);
  EXPECT_TRUE(gone.applied);
  ASSERT_TRUE(gone.attributes);
  EXPECT_EQ(gone.attributes->at("state").as_string(), "claimed");
  EXPECT_FALSE(aws_.db().get_item(get));
}

TEST_P(TableTest, BatchGetQueryAndScanPageByPage) {
  std::string name = make_table();
  // 25 items on label A, 15 on B: a query of A with Limit 10 takes three pages.
  std::vector<Item> keys;
  for (int i = 1; i <= 40; ++i) {
    Item item{{"instance_id", AttributeValue::string("k" + std::to_string(i))},
              {"label", AttributeValue::string(i <= 25 ? "A" : "B")},
              {"n", AttributeValue::number(i)}};
    ASSERT_TRUE(aws_.db().put_item({.table = name, .item = item}).applied);
    keys.push_back({{"instance_id", item.at("instance_id")}});
  }
  keys.push_back({{"instance_id", AttributeValue::string("k-missing")}});

  std::vector<Item> got = aws_.db().batch_get_item({.table = name, .keys = keys, .consistent_read = true});
  EXPECT_EQ(got.size(), 40u) << "the missing key is simply absent";

  aws::QueryRequest q{.table = name, .index = pool::kLabelIndex, .key_condition = "#l = :l",
                      .names = {{"#l", "label"}}, .values = {{":l", AttributeValue::string("A")}}, .limit = 10};
  std::set<std::string> seen;
  aws::PagingResult paging = aws_.db().query_pages(q, [&](aws::Page& page) {
    EXPECT_LE(page.items.size(), 10u);
    for (const Item& i : page.items) seen.insert(i.at("instance_id").as_string());
    return true;
  });
  EXPECT_TRUE(paging.complete);
  EXPECT_GE(paging.pages, 3);
  EXPECT_EQ(seen.size(), 25u);

  // A filtered scan pages through the whole table; the filter applies after Limit.
  aws::ScanRequest s{.table = name, .filter = "#n > :n", .names = {{"#n", "n"}},
                     .values = {{":n", AttributeValue::number(30)}}, .limit = 7, .consistent_read = true};
  int pages = 0;
  int64_t scanned = 0;
  std::set<int64_t> ns;
  aws_.db().scan_pages(s, [&](aws::Page& page) {
    ++pages;
    scanned += page.scanned_count;
    for (const Item& i : page.items) ns.insert(i.at("n").as_int());
    return true;
  });
  EXPECT_EQ(ns.size(), 10u);
  EXPECT_EQ(*ns.begin(), 31);
  EXPECT_EQ(scanned, 40);
  EXPECT_GE(pages, 6);
}

TEST_P(TableTest, StateTableLifecycle) {
  pool::DynamoStateTable table(aws_.db(), make_table(), backend_.instance_role_id);
  const std::string a = instance_id(0xa1), b = instance_id(0xb2), c = instance_id(0xc3);
  ASSERT_TRUE(table.create(record(a, State::kIdle, 3)));
  EXPECT_FALSE(table.create(record(a, State::kCreated, 1))) << "create is once only";
  ASSERT_TRUE(table.create(record(b, State::kRunning, 1, "run-1")));
  ASSERT_TRUE(table.create(record(c, State::kRunning, 1, "run-1")));

  // The item is stored under the role-bound key the instance policy lets the agent reach.
  auto raw = aws_.db().get_item({.table = table.table(),
                                 .key = {{"instance_id", AttributeValue::string(
                                                             pool::record_key(backend_.instance_role_id, a))}},
                                 .consistent_read = true});
  ASSERT_TRUE(raw);

  pool::Expect idle_at_3{.states = {State::kIdle}, .generation = 3};
  pool::LifecycleChange claim{.state = State::kClaimed, .generation = 4, .label = "run-2",
                              .reg_token = Secret("tok")};
  EXPECT_TRUE(table.transition(a, idle_at_3, claim));
  EXPECT_FALSE(table.transition(a, idle_at_3, claim)) << "the same read claims once";
  EXPECT_FALSE(table.transition(instance_id(0xdd), idle_at_3, claim)) << "a missing item meets no condition";
  auto got = table.get(a);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->state, State::kClaimed);
  EXPECT_EQ(got->generation, 4);
  EXPECT_EQ(got->reg_token.reveal(), "tok");

  // The agent's report is bound to the generation.
  EXPECT_TRUE(table.report(a, {.heartbeat_ms = 1'800'000'000'000, .signal = pool::AgentSignal::kRegistered,
                               .take_reg_token = true, .generation = 4}));
  EXPECT_FALSE(table.report(a, {.signal = pool::AgentSignal::kRegistered, .generation = 3}));
  got = table.get(a);
  EXPECT_EQ(got->signal, pool::AgentSignal::kRegistered);
  EXPECT_TRUE(got->reg_token.reveal().empty());

  EXPECT_EQ(table.by_label("run-1").size(), 2u);
  ASSERT_TRUE(table.transition(c, {.states = {State::kRunning}, .label = "run-1"}, {.state = State::kDraining, .label = ""}));
  auto left = table.by_label("run-1");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].instance_id, b);

  auto many = table.get_many({a, b, c, instance_id(0xdd)});
  EXPECT_EQ(many.size(), 3u);
  EXPECT_EQ(many.at(c).state, State::kDraining);

  std::set<std::string> scanned;
  pool::ScanStats stats = table.scan([&](const InstanceRecord& r) { scanned.insert(r.instance_id); });
  EXPECT_EQ(scanned, (std::set<std::string>{a, b, c}));
  EXPECT_EQ(stats.items, 3);

  EXPECT_FALSE(table.remove(b, {.states = {State::kTerminated}}));
  EXPECT_TRUE(table.remove(b, {.states = {State::kRunning}, .generation = 1}));
  EXPECT_FALSE(table.get(b));
}

// get_many reads 100 records per BatchGetItem: 130 ids take two requests on either backend.
TEST_P(TableTest, StateTableGetManyAcrossBatches) {
  pool::DynamoStateTable table(aws_.db(), make_table(), backend_.instance_role_id);
  std::vector<std::string> ids;
  for (int i = 1; i <= 130; ++i) {
    ids.push_back(instance_id(0x1000 + i));
    if (i % 2 == 0) {
      ASSERT_TRUE(table.create(record(ids.back(), State::kIdle, i)));
    }
  }
  auto many = table.get_many(ids);
  EXPECT_EQ(many.size(), 65u);
  EXPECT_EQ(many.at(ids[129]).generation, 130);
}

INSTANTIATE_TEST_SUITE_P(Backends, TableTest, ::testing::ValuesIn(backend_names()), backend_test_name);

}  // namespace
}  // namespace runpool::testing
