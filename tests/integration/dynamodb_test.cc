// The DynamoDB client against dynalite, through the local cloud's SigV4-checking, fault-injecting
// proxy: tables with indexes, conditional writes, paginated queries and scans, retries.
#include "common/aws/dynamodb.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/support/local_cloud.h"

namespace runpool::aws {
namespace {

using testing::LocalCloud;

class DynamoDbIntegration : public ::testing::Test {
 protected:
  DynamoDbIntegration()
      : cloud_(LocalCloud::shared()),
        creds_(cloud_.controller_credentials()),
        // Many quick attempts: a 50% throttle rate must not exhaust them (0.5^15 per call).
        caller_(http_, creds_, system_clock(),
                ServiceSettings{"dynamodb", cloud_.dynamodb(), cloud_.region(),
                                RetryPolicy{15, std::chrono::milliseconds(2), std::chrono::milliseconds(20)},
                                std::chrono::seconds(10)}),
        ddb_(caller_) {}

  void TearDown() override { cloud_.clear_faults(); }

  // Requests the proxy counted for one operation so far (faults included).
  long proxy_requests(const std::string& operation, const char* field = "requests") {
    Json::Value stats = cloud_.control("GET", "/_control/stats");
    return stats["dynamodb"][operation][field].asInt64();
  }

  // A table keyed by id with a GSI by-label (label, at) projecting `state`, ready to use.
  void create_pool_table(const std::string& name, bool pay_per_request = true) {
    CreateTableRequest c;
    c.table = name;
    c.pay_per_request = pay_per_request;
    c.key = {"id", ""};
    c.attributes = {{"id", ScalarType::kString}, {"label", ScalarType::kString}, {"at", ScalarType::kNumber}};
    c.indexes = {{"by-label", {"label", "at"}, {Projection::Type::kInclude, {"state"}}}};
    ASSERT_TRUE(ddb_.create_table(c));
    ddb_.wait_until_active(name, std::chrono::seconds(10), std::chrono::milliseconds(50));
  }

  static Item key(const std::string& id) { return {{"id", AttributeValue::string(id)}}; }

  LocalCloud& cloud_;
  CurlHttpClient http_;
  StaticCredentialsProvider creds_;
  AwsCaller caller_;
  DynamoDbClient ddb_;
};

TEST_F(DynamoDbIntegration, CreateDescribeAndCreateAgain) {
  create_pool_table("it-create");
  std::optional<TableDescription> d = ddb_.describe_table("it-create");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->name, "it-create");
  EXPECT_EQ(d->status, "ACTIVE");
  EXPECT_EQ(d->key, (KeySchema{"id", ""}));
  EXPECT_EQ(d->billing_mode, "PAY_PER_REQUEST");
  EXPECT_EQ(d->item_count, 0);
  const IndexDescription* gsi = d->index("by-label");
  ASSERT_TRUE(gsi);
  EXPECT_EQ(gsi->status, "ACTIVE");
  EXPECT_EQ(gsi->key, (KeySchema{"label", "at"}));
  EXPECT_EQ(gsi->projection, (Projection{Projection::Type::kInclude, {"state"}}));

  // A second CreateTable (another controller's init) is answered, not failed, and not retried.
  long before = caller_.requests_sent();
  EXPECT_FALSE(
      ddb_.create_table({.table = "it-create", .key = {"id", ""}, .attributes = {{"id", ScalarType::kString}}}));
  EXPECT_EQ(caller_.requests_sent() - before, 1);

  EXPECT_EQ(ddb_.describe_table("it-missing"), std::nullopt);
  EXPECT_THROW(ddb_.get_item({.table = "it-missing", .key = key("i-1")}), ResourceNotFoundError);
  EXPECT_FALSE(ddb_.delete_table("it-missing"));
}

TEST_F(DynamoDbIntegration, ConditionalWritesReportFailedConditions) {
  create_pool_table("it-cond");
  Item item{{"id", AttributeValue::string("i-1")},
            {"state", AttributeValue::string("idle")},
            {"gen", AttributeValue::number(1)},
            {"tags", AttributeValue::string_set({"x", "y"})},
            {"blob", AttributeValue::binary(std::string("\x00\x01\xff", 3))},
            {"meta", AttributeValue::map({{"nested", AttributeValue::list({AttributeValue::boolean(true)})}})},
            {"big", AttributeValue::string(std::string(5000, 'x'))}};  // a body past 1 KiB
  PutItemRequest create{.table = "it-cond", .item = item, .condition = "attribute_not_exists(id)"};
  EXPECT_TRUE(ddb_.put_item(create).applied);

  // The same create again fails its condition: reported as such, sent exactly once.
  long proxy_before = proxy_requests("PutItem");
  long sent_before = caller_.requests_sent();
  WriteResult again = ddb_.put_item(create);
  EXPECT_FALSE(again.applied);
  EXPECT_EQ(caller_.requests_sent() - sent_before, 1);
  EXPECT_EQ(proxy_requests("PutItem") - proxy_before, 1);

  std::optional<Item> got = ddb_.get_item({.table = "it-cond", .key = key("i-1"), .consistent_read = true});
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, item);  // every type survives the round trip

  std::optional<Item> projected =
      ddb_.get_item({.table = "it-cond", .key = key("i-1"), .projection = "#s, gen", .names = {{"#s", "state"}}});
  ASSERT_TRUE(projected);
  EXPECT_EQ(projected->size(), 2u);
  EXPECT_EQ(get_string(*projected, "state"), "idle");

  // idle -> claimed at generation 1, bumping it; a stale actor still at generation 1 then fails.
  UpdateItemRequest claim{.table = "it-cond",
                          .key = key("i-1"),
                          .update = "SET #s = :claimed ADD gen :one",
                          .condition = "#s = :idle AND gen = :gen",
                          .names = {{"#s", "state"}},
                          .values = {{":claimed", AttributeValue::string("claimed")},
                                     {":idle", AttributeValue::string("idle")},
                                     {":one", AttributeValue::number(1)},
                                     {":gen", AttributeValue::number(1)}},
                          .return_values = ReturnValues::kAllNew};
  WriteResult claimed = ddb_.update_item(claim);
  ASSERT_TRUE(claimed.applied);
  ASSERT_TRUE(claimed.attributes);
  EXPECT_EQ(get_int(*claimed.attributes, "gen"), 2);
  EXPECT_EQ(get_string(*claimed.attributes, "state"), "claimed");
  WriteResult stale = ddb_.update_item(claim);
  EXPECT_FALSE(stale.applied);
  EXPECT_FALSE(stale.attributes);

  // Overwrite returning the old item; conditional delete, wrong then right.
  PutItemRequest overwrite{.table = "it-cond", .item = key("i-1"), .return_values = ReturnValues::kAllOld};
  WriteResult old = ddb_.put_item(overwrite);
  ASSERT_TRUE(old.applied && old.attributes);
  EXPECT_EQ(get_int(*old.attributes, "gen"), 2);
  DeleteItemRequest del{.table = "it-cond",
                        .key = key("i-1"),
                        .condition = "attribute_exists(gen)",
                        .return_values = ReturnValues::kAllOld};
  EXPECT_FALSE(ddb_.delete_item(del).applied);
  del.condition = "attribute_not_exists(gen)";
  WriteResult deleted = ddb_.delete_item(del);
  EXPECT_TRUE(deleted.applied);
  EXPECT_EQ(deleted.attributes, key("i-1"));
  EXPECT_EQ(ddb_.get_item({.table = "it-cond", .key = key("i-1"), .consistent_read = true}), std::nullopt);

  // A malformed request is DynamoDB's ValidationException, not a condition failure.
  try {
    ddb_.update_item({.table = "it-cond", .key = key("i-1"), .update = "SET"});
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "ValidationException");
  }
}

TEST_F(DynamoDbIntegration, QueryTheIndexAndScanManyPages) {
  create_pool_table("it-pages");
  for (int i = 0; i < 25; ++i) {
    Item item{{"id", AttributeValue::string("i-" + std::to_string(i))},
              {"label", AttributeValue::string(i % 2 ? "run-b" : "run-a")},
              {"at", AttributeValue::number(100 + i)},
              {"state", AttributeValue::string(i % 5 == 0 ? "terminated" : "running")}};
    ASSERT_TRUE(ddb_.put_item({.table = "it-pages", .item = item}).applied);
  }

  // 13 items labelled run-a, read 4 per page from the index, newest first.
  QueryRequest q{.table = "it-pages",
                 .index = "by-label",
                 .key_condition = "label = :l",
                 .values = {{":l", AttributeValue::string("run-a")}},
                 .limit = 4,
                 .scan_forward = false};
  int pages = 0;
  std::vector<int64_t> ats;
  PagingResult r = ddb_.query_pages(q, [&](Page& page) {
    ++pages;
    EXPECT_LE(page.items.size(), 4u);
    for (const Item& item : page.items) {
      ats.push_back(get_int(item, "at"));
      EXPECT_TRUE(find_string(item, "state"));  // projected into the index
    }
    return true;
  });
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.pages, pages);
  EXPECT_GE(pages, 4);
  ASSERT_EQ(ats.size(), 13u);
  EXPECT_TRUE(std::is_sorted(ats.rbegin(), ats.rend()));
  EXPECT_EQ(ats.front(), 124);

  // A filtered query: evaluated per page, so pages can be empty but none is lost.
  q.filter = "#s = :t";
  q.names = {{"#s", "state"}};
  q.values[":t"] = AttributeValue::string("terminated");
  EXPECT_EQ(ddb_.query_all(q).size(), 3u);  // i-0, i-10, i-20

  // The whole table in pages of 10: at least 3 pages, every item once.
  std::set<std::string> ids;
  PagingResult s = ddb_.scan_pages({.table = "it-pages", .limit = 10}, [&](Page& page) {
    for (const Item& item : page.items) EXPECT_TRUE(ids.insert(get_string(item, "id")).second);
    return true;
  });
  EXPECT_TRUE(s.complete);
  EXPECT_GE(s.pages, 3);
  EXPECT_EQ(ids.size(), 25u);

  // Stop after one page, then resume from where it stopped.
  std::vector<Item> first;
  PagingResult stopped = ddb_.scan_pages({.table = "it-pages", .limit = 10}, [&](Page& page) {
    first = std::move(page.items);
    return false;
  });
  ASSERT_FALSE(stopped.complete);
  ASSERT_TRUE(stopped.last_evaluated_key);
  std::vector<Item> rest =
      ddb_.scan_all({.table = "it-pages", .limit = 10, .exclusive_start_key = stopped.last_evaluated_key});
  EXPECT_EQ(first.size() + rest.size(), 25u);
  EXPECT_THROW(ddb_.scan_all({.table = "it-pages", .limit = 5}, 2), std::runtime_error);

  std::vector<Item> filtered = ddb_.scan_all({.table = "it-pages",
                                              .filter = "#s = :t",
                                              .projection = "id",
                                              .names = {{"#s", "state"}},
                                              .values = {{":t", AttributeValue::string("terminated")}},
                                              .limit = 7});
  ASSERT_EQ(filtered.size(), 5u);
  EXPECT_EQ(filtered[0].size(), 1u);  // only the projected id
}

TEST_F(DynamoDbIntegration, BatchGetItemReadsAHundredKeysInOneRequest) {
  create_pool_table("it-batch");
  for (int i = 0; i < 90; ++i) {
    ASSERT_TRUE(ddb_.put_item({.table = "it-batch",
                               .item = {{"id", AttributeValue::string("i-" + std::to_string(i))},
                                        {"n", AttributeValue::number(i)}}})
                    .applied);
  }
  std::vector<Item> keys;
  for (int i = 0; i < 100; ++i) keys.push_back(key("i-" + std::to_string(i)));  // i-90..i-99: no item
  long batches_before = proxy_requests("BatchGetItem");
  long sent_before = caller_.requests_sent();
  std::vector<Item> items = ddb_.batch_get_item({.table = "it-batch", .keys = keys, .consistent_read = true});
  EXPECT_EQ(caller_.requests_sent() - sent_before, 1);
  EXPECT_EQ(proxy_requests("BatchGetItem") - batches_before, 1);
  ASSERT_EQ(items.size(), 90u);
  std::set<int64_t> ns;
  for (const Item& item : items) {
    EXPECT_EQ(get_string(item, "id"), "i-" + std::to_string(get_int(item, "n")));
    ns.insert(get_int(item, "n"));
  }
  EXPECT_EQ(ns.size(), 90u);
  EXPECT_EQ(*ns.rbegin(), 89);

  // A write is seen by the next consistent batch read.
  ASSERT_TRUE(ddb_.put_item({.table = "it-batch",
                             .item = {{"id", AttributeValue::string("i-95")}, {"n", AttributeValue::number(95)}}})
                  .applied);
  std::vector<Item> again = ddb_.batch_get_item({.table = "it-batch", .keys = {key("i-95")}, .consistent_read = true});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(get_int(again[0], "n"), 95);
  EXPECT_THROW(ddb_.batch_get_item({.table = "it-batch-missing", .keys = {key("i-1")}}), ResourceNotFoundError);
}

TEST_F(DynamoDbIntegration, UpdateTableAddsAnIndex) {
  // PROVISIONED: dynalite 4.0 requires ProvisionedThroughput in a GSI Create, which real DynamoDB
  // refuses on a PAY_PER_REQUEST table (and this client therefore leaves out there).
  create_pool_table("it-gsi", false);
  for (int i = 0; i < 4; ++i) {
    Item item{{"id", AttributeValue::string("i-" + std::to_string(i))},
              {"state", AttributeValue::string(i < 3 ? "idle" : "running")}};
    ASSERT_TRUE(ddb_.put_item({.table = "it-gsi", .item = item}).applied);
  }
  TableDescription updating = ddb_.update_table({.table = "it-gsi",
                                                 .attributes = {{"state", ScalarType::kString}},
                                                 .create_indexes = {{"by-state", {"state", ""}, {}}},
                                                 .pay_per_request = false});
  EXPECT_EQ(updating.name, "it-gsi");
  EXPECT_EQ(updating.billing_mode, "PROVISIONED");
  TableDescription d = ddb_.wait_until_active("it-gsi", std::chrono::seconds(10), std::chrono::milliseconds(50));
  EXPECT_TRUE(d.index("by-label"));
  if (!d.index("by-state")) {
    // dynalite 4.0.0 validates GlobalSecondaryIndexUpdates (the request above passed its schema)
    // but never creates the index (actions/updateTable.js only handles throughput updates).
    GTEST_SKIP() << "the local DynamoDB (dynalite) accepted the new index but does not build indexes on UpdateTable";
  }
  EXPECT_EQ(d.index("by-state")->status, "ACTIVE");
  std::vector<Item> idle = ddb_.query_all({.table = "it-gsi",
                                           .index = "by-state",
                                           .key_condition = "#s = :idle",
                                           .names = {{"#s", "state"}},
                                           .values = {{":idle", AttributeValue::string("idle")}}});
  EXPECT_EQ(idle.size(), 3u);
}

TEST_F(DynamoDbIntegration, ThrottlingIsRetriedUntilItSucceeds) {
  create_pool_table("it-throttle");
  long throttles_before = proxy_requests("PutItem", "throttles") + proxy_requests("GetItem", "throttles");
  long sent_before = caller_.requests_sent();
  Json::Value faults;
  faults["service"] = "dynamodb";
  faults["throttleRate"] = 0.5;
  cloud_.control("POST", "/_control/faults", faults);

  const int kCalls = 20;
  for (int i = 0; i < kCalls / 2; ++i) {
    std::string id = "i-" + std::to_string(i);
    ASSERT_TRUE(ddb_.put_item({.table = "it-throttle",
                               .item = {{"id", AttributeValue::string(id)}, {"n", AttributeValue::number(i)}}})
                    .applied);
    std::optional<Item> got = ddb_.get_item({.table = "it-throttle", .key = key(id), .consistent_read = true});
    ASSERT_TRUE(got);
    EXPECT_EQ(get_int(*got, "n"), i);
  }
  cloud_.clear_faults();

  long throttles = proxy_requests("PutItem", "throttles") + proxy_requests("GetItem", "throttles") - throttles_before;
  long sent = caller_.requests_sent() - sent_before;
  EXPECT_GT(throttles, 0);
  EXPECT_EQ(sent, kCalls + throttles);  // every throttled attempt was retried, nothing else was
}

}  // namespace
}  // namespace runpool::aws
