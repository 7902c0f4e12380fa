#include "common/aws/dynamodb.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/testing/expect_malformed.h"
#include "common/testing/dynamodb_over_fake_http.h"
#include "common/testing/fake_http.h"

namespace runpool::aws {
namespace {

using runpool::testing::FakeHttp;

// An error answer's body in DynamoDB's JSON protocol.
std::string ddb_error(const std::string& type, const std::string& message = "msg") {
  return R"({"__type":"com.amazonaws.dynamodb.v20120810#)" + type + R"(","message":")" + message + R"("})";
}

using DynamoDbTest = runpool::testing::DynamoDbOverFakeHttp;

TEST_F(DynamoDbTest, GetItemRequestShapeAndResult) {
  http_.push(200, R"({"Item":{"id":{"S":"i-1"},"gen":{"N":"4"}}})");
  GetItemRequest req{"pool", key("i-1"), true, "#i, gen", {{"#i", "id"}}};
  std::optional<Item> item = ddb_.get_item(req);
  ASSERT_TRUE(item);
  EXPECT_EQ(get_int(*item, "gen"), 4);

  ASSERT_EQ(http_.count(), 1u);
  HttpRequest r = http_.request(0);
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, "http://127.0.0.1:9/");
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "DynamoDB_20120810.GetItem");
  EXPECT_EQ(http_.header(0, "Content-Type"), "application/x-amz-json-1.0");
  ASSERT_TRUE(r.sigv4);
  EXPECT_EQ(r.sigv4->service, "dynamodb");
  EXPECT_EQ(write_json(http_.body_json(0)),
            R"({"ConsistentRead":true,"ExpressionAttributeNames":{"#i":"id"},"Key":{"id":{"S":"i-1"}},)"
            R"("ProjectionExpression":"#i, gen","TableName":"pool"})");
}

TEST_F(DynamoDbTest, GetItemOfAMissingItemIsNullopt) {
  http_.push(200, "{}");
  EXPECT_EQ(ddb_.get_item({"pool", key("i-2")}), std::nullopt);
  // Neither optional field is sent when unset.
  EXPECT_EQ(write_json(http_.body_json(0)), R"({"Key":{"id":{"S":"i-2"}},"TableName":"pool"})");
}

TEST_F(DynamoDbTest, PutItemWithConditionAndReturnValues) {
  http_.push(200, R"({"Attributes":{"id":{"S":"i-1"},"state":{"S":"idle"}}})");
  PutItemRequest req;
  req.table = "pool";
  req.item = {{"id", AttributeValue::string("i-1")}, {"state", AttributeValue::string("claimed")}};
  req.condition = "#s = :idle";
  req.names = {{"#s", "state"}};
  req.values = {{":idle", AttributeValue::string("idle")}};
  req.return_values = ReturnValues::kAllOld;
  WriteResult r = ddb_.put_item(req);
  EXPECT_TRUE(r.applied);
  ASSERT_TRUE(r.attributes);
  EXPECT_EQ(get_string(*r.attributes, "state"), "idle");
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "DynamoDB_20120810.PutItem");
  EXPECT_EQ(write_json(http_.body_json(0)),
            R"({"ConditionExpression":"#s = :idle","ExpressionAttributeNames":{"#s":"state"},)"
            R"("ExpressionAttributeValues":{":idle":{"S":"idle"}},"Item":{"id":{"S":"i-1"},"state":{"S":"claimed"}},)"
            R"("ReturnValues":"ALL_OLD","TableName":"pool"})");
}

TEST_F(DynamoDbTest, UpdateAndDeleteRequestShapes) {
  http_.push(200, R"({"Attributes":{"gen":{"N":"5"}}})");
  http_.push(200, "{}");
  UpdateItemRequest u;
  u.table = "pool";
  u.key = key("i-1");
  u.update = "SET #s = :c ADD gen :one";
  u.condition = "gen = :g";
  u.names = {{"#s", "state"}};
  u.values = {{":c", AttributeValue::string("claimed")},
              {":one", AttributeValue::number(1)},
              {":g", AttributeValue::number(4)}};
  u.return_values = ReturnValues::kUpdatedNew;
  WriteResult r = ddb_.update_item(u);
  EXPECT_TRUE(r.applied);
  EXPECT_EQ(get_int(*r.attributes, "gen"), 5);
  Json::Value b = http_.body_json(0);
  EXPECT_EQ(b["UpdateExpression"].asString(), "SET #s = :c ADD gen :one");
  EXPECT_EQ(b["ConditionExpression"].asString(), "gen = :g");
  EXPECT_EQ(b["ReturnValues"].asString(), "UPDATED_NEW");
  EXPECT_EQ(b["ExpressionAttributeValues"][":one"]["N"].asString(), "1");
  EXPECT_EQ(b["Key"]["id"]["S"].asString(), "i-1");

  DeleteItemRequest d;
  d.table = "pool";
  d.key = key("i-1");
  d.condition = "attribute_exists(id)";
  WriteResult dr = ddb_.delete_item(d);
  EXPECT_TRUE(dr.applied);
  EXPECT_FALSE(dr.attributes);
  EXPECT_EQ(http_.header(1, "X-Amz-Target"), "DynamoDB_20120810.DeleteItem");
  EXPECT_EQ(write_json(http_.body_json(1)),
            R"j({"ConditionExpression":"attribute_exists(id)","Key":{"id":{"S":"i-1"}},"TableName":"pool"})j");
}

TEST_F(DynamoDbTest, ConditionalCheckFailedIsAResultSentOnce) {
  for (const char* op : {"put", "update", "delete"}) {
    http_.clear();
    http_.push(400, ddb_error("ConditionalCheckFailedException", "The conditional request failed"));
    http_.push(200, "{}");  // would be consumed by a (wrong) retry
    WriteResult r;
    if (std::string(op) == "put") r = ddb_.put_item({"pool", key("i-1"), "attribute_not_exists(id)"});
    if (std::string(op) == "update") r = ddb_.update_item({"pool", key("i-1"), "SET a = :a", "gen = :g"});
    if (std::string(op) == "delete") r = ddb_.delete_item({"pool", key("i-1"), "gen = :g"});
    EXPECT_FALSE(r.applied) << op;
    EXPECT_FALSE(r.attributes) << op;
    EXPECT_EQ(http_.count(), 1u) << op;
    EXPECT_EQ(clock_.total_slept(), Duration{0});
  }
}

TEST_F(DynamoDbTest, ThrottlingIsRetried) {
  http_.push(400, ddb_error("ProvisionedThroughputExceededException"));
  http_.push_transport_error();
  http_.push(500, ddb_error("InternalServerError"));
  http_.push(200, R"({"Item":{"id":{"S":"i-1"}}})");
  EXPECT_TRUE(ddb_.get_item({"pool", key("i-1")}));
  EXPECT_EQ(http_.count(), 4u);
  EXPECT_EQ(caller_.requests_sent(), 4);
}

TEST_F(DynamoDbTest, DistinctErrors) {
  http_.push(400, ddb_error("ResourceNotFoundException", "Requested resource not found"));
  try {
    ddb_.get_item({"nope", key("i-1")});
    ADD_FAILURE();
  } catch (const ResourceNotFoundError& e) {
    EXPECT_EQ(e.code(), "ResourceNotFoundException");
    EXPECT_EQ(e.operation(), "GetItem");
    EXPECT_EQ(e.status(), 400);
  }
  http_.push(400, ddb_error("ResourceNotFoundException"));
  EXPECT_EQ(ddb_.describe_table("nope"), std::nullopt);
  http_.push(400, ddb_error("ResourceNotFoundException"));
  EXPECT_FALSE(ddb_.delete_table("nope"));

  http_.push(400, ddb_error("ResourceInUseException", "Table already exists: pool"));
  EXPECT_FALSE(ddb_.create_table({"pool", {"id", ""}, {{"id", ScalarType::kString}}}));
  http_.push(400, ddb_error("ResourceInUseException", "Attempt to change a resource which is still in use"));
  EXPECT_THROW(ddb_.update_table({"pool"}), ResourceInUseError);

  http_.push(400, ddb_error("ValidationException", "Invalid UpdateExpression"));
  try {
    ddb_.update_item({"pool", key("i-1"), "SET"});
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "ValidationException");
    EXPECT_EQ(e.message(), "Invalid UpdateExpression");
  }
  EXPECT_EQ(http_.count(), 6u);  // none of these is retried
}

TEST_F(DynamoDbTest, QueryPageRequestShape) {
  http_.push(200, 
      R"({"Items":[{"id":{"S":"i-1"}}],"Count":1,"ScannedCount":2,"LastEvaluatedKey":{"id":{"S":"i-1"},"label":{"S":"r-1"}}})");
  QueryRequest q;
  q.table = "pool";
  q.index = "by-label";
  q.key_condition = "#l = :l";
  q.filter = "#s <> :t";
  q.projection = "id";
  q.names = {{"#l", "label"}, {"#s", "state"}};
  q.values = {{":l", AttributeValue::string("r-1")}, {":t", AttributeValue::string("terminated")}};
  q.limit = 5;
  q.scan_forward = false;
  q.exclusive_start_key = Item{{"id", AttributeValue::string("i-0")}, {"label", AttributeValue::string("r-1")}};
  Page p = ddb_.query_page(q);
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.scanned_count, 2);
  ASSERT_TRUE(p.last_evaluated_key);
  EXPECT_EQ(get_string(*p.last_evaluated_key, "id"), "i-1");
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "DynamoDB_20120810.Query");
  EXPECT_EQ(write_json(http_.body_json(0)),
            R"({"ExclusiveStartKey":{"id":{"S":"i-0"},"label":{"S":"r-1"}},)"
            R"("ExpressionAttributeNames":{"#l":"label","#s":"state"},)"
            R"("ExpressionAttributeValues":{":l":{"S":"r-1"},":t":{"S":"terminated"}},)"
            R"("FilterExpression":"#s <> :t","IndexName":"by-label","KeyConditionExpression":"#l = :l","Limit":5,)"
            R"("ProjectionExpression":"id","ScanIndexForward":false,"TableName":"pool"})");
}

// Three pages: i-0,i-1 | i-2,i-3 | i-4.
void three_pages(FakeHttp& http) {
  http.push(200, R"({"Items":[{"id":{"S":"i-0"}},{"id":{"S":"i-1"}}],"LastEvaluatedKey":{"id":{"S":"i-1"}}})");
  http.push(200, R"({"Items":[{"id":{"S":"i-2"}},{"id":{"S":"i-3"}}],"LastEvaluatedKey":{"id":{"S":"i-3"}}})");
  http.push(200, R"({"Items":[{"id":{"S":"i-4"}}]})");
}

TEST_F(DynamoDbTest, ScanPagesFollowsLastEvaluatedKey) {
  three_pages(http_);
  std::vector<std::string> ids;
  PagingResult r = ddb_.scan_pages({"pool", "", "", "", {}, {}, 2}, [&](Page& page) {
    for (auto& item : page.items) ids.push_back(get_string(item, "id"));
    return true;
  });
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.pages, 3);
  EXPECT_FALSE(r.last_evaluated_key);
  EXPECT_EQ(ids, (std::vector<std::string>{"i-0", "i-1", "i-2", "i-3", "i-4"}));
  ASSERT_EQ(http_.count(), 3u);
  EXPECT_FALSE(http_.body_json(0).isMember("ExclusiveStartKey"));
  EXPECT_EQ(write_json(http_.body_json(1)["ExclusiveStartKey"]), R"({"id":{"S":"i-1"}})");
  EXPECT_EQ(write_json(http_.body_json(2)["ExclusiveStartKey"]), R"({"id":{"S":"i-3"}})");
  EXPECT_EQ(http_.body_json(2)["Limit"].asInt(), 2);
  EXPECT_EQ(http_.header(2, "X-Amz-Target"), "DynamoDB_20120810.Scan");
}

TEST_F(DynamoDbTest, VisitorCanStopAndResume) {
  three_pages(http_);
  PagingResult r = ddb_.scan_pages({"pool"}, [](Page&) { return false; });
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.pages, 1);
  ASSERT_TRUE(r.last_evaluated_key);
  EXPECT_EQ(http_.count(), 1u);
  ScanRequest resume{"pool"};
  resume.exclusive_start_key = r.last_evaluated_key;
  std::vector<Item> rest = ddb_.scan_all(resume);
  EXPECT_EQ(rest.size(), 3u);
  EXPECT_EQ(write_json(http_.body_json(1)["ExclusiveStartKey"]), R"({"id":{"S":"i-1"}})");
}

TEST_F(DynamoDbTest, PageCountIsBounded) {
  three_pages(http_);
  PagingResult r = ddb_.query_pages(
      {"pool", "", "id = :i"}, [](Page&) { return true; }, 2);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.pages, 2);
  EXPECT_EQ(http_.count(), 2u);

  http_.clear();
  three_pages(http_);
  EXPECT_THROW(ddb_.scan_all({"pool"}, 2), std::runtime_error);  // never a silently partial result
  http_.clear();
  three_pages(http_);
  EXPECT_EQ(ddb_.query_all({"pool", "", "id = :i"}, 3).size(), 5u);
}

TEST_F(DynamoDbTest, CreateTableRequestShape) {
  http_.push(200, R"({"TableDescription":{"TableName":"pool","TableStatus":"CREATING"}})");
  CreateTableRequest c;
  c.table = "pool";
  c.key = {"id", ""};
  c.attributes = {{"id", ScalarType::kString}, {"label", ScalarType::kString}, {"at", ScalarType::kNumber}};
  c.indexes = {{"by-label", {"label", "at"}, {Projection::Type::kInclude, {"state", "gen"}}},
               {"by-at", {"at", ""}, {Projection::Type::kKeysOnly, {}}}};
  EXPECT_TRUE(ddb_.create_table(c));
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "DynamoDB_20120810.CreateTable");
  EXPECT_EQ(
      write_json(http_.body_json(0)),
      R"({"AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"},{"AttributeName":"label","AttributeType":"S"},)"
      R"({"AttributeName":"at","AttributeType":"N"}],"BillingMode":"PAY_PER_REQUEST",)"
      R"("GlobalSecondaryIndexes":[{"IndexName":"by-label","KeySchema":[{"AttributeName":"label","KeyType":"HASH"},)"
      R"({"AttributeName":"at","KeyType":"RANGE"}],"Projection":{"NonKeyAttributes":["state","gen"],"ProjectionType":"INCLUDE"}},)"
      R"({"IndexName":"by-at","KeySchema":[{"AttributeName":"at","KeyType":"HASH"}],"Projection":{"ProjectionType":"KEYS_ONLY"}}],)"
      R"("KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],"TableName":"pool"})");

  http_.push(200, "{}");
  c.pay_per_request = false;
  c.read_capacity = 3;
  c.write_capacity = 4;
  EXPECT_TRUE(ddb_.create_table(c));
  Json::Value b = http_.body_json(1);
  EXPECT_EQ(b["BillingMode"].asString(), "PROVISIONED");
  EXPECT_EQ(write_json(b["ProvisionedThroughput"]), R"({"ReadCapacityUnits":3,"WriteCapacityUnits":4})");
  EXPECT_EQ(write_json(b["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"]),
            R"({"ReadCapacityUnits":3,"WriteCapacityUnits":4})");
}

const char* kDescribed = R"({"Table":{"TableName":"pool","TableStatus":"ACTIVE",
  "TableArn":"arn:aws:dynamodb:us-east-1:000000000000:table/pool",
  "KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],
  "AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"},{"AttributeName":"label","AttributeType":"S"},
                          {"AttributeName":"at","AttributeType":"N"}],
  "GlobalSecondaryIndexes":[{"IndexName":"by-label","IndexStatus":"ACTIVE","ItemCount":7,
      "KeySchema":[{"AttributeName":"label","KeyType":"HASH"},{"AttributeName":"at","KeyType":"RANGE"}],
      "Projection":{"ProjectionType":"INCLUDE","NonKeyAttributes":["state"]}},
    {"IndexName":"by-at","IndexStatus":"CREATING","Backfilling":true,
      "KeySchema":[{"AttributeName":"at","KeyType":"HASH"}],"Projection":{"ProjectionType":"ALL"}}],
  "ItemCount":12,"BillingModeSummary":{"BillingMode":"PAY_PER_REQUEST"}}})";

TEST_F(DynamoDbTest, DescribeTableParsesEverything) {
  http_.push(200, kDescribed);
  std::optional<TableDescription> d = ddb_.describe_table("pool");
  ASSERT_TRUE(d);
  EXPECT_EQ(write_json(http_.body_json(0)), R"({"TableName":"pool"})");
  EXPECT_EQ(d->name, "pool");
  EXPECT_EQ(d->status, "ACTIVE");
  EXPECT_EQ(d->arn, "arn:aws:dynamodb:us-east-1:000000000000:table/pool");
  EXPECT_EQ(d->key, (KeySchema{"id", ""}));
  ASSERT_EQ(d->attributes.size(), 3u);
  EXPECT_EQ(d->attributes[2], (AttributeDefinition{"at", ScalarType::kNumber}));
  EXPECT_EQ(d->item_count, 12);
  EXPECT_EQ(d->billing_mode, "PAY_PER_REQUEST");
  ASSERT_EQ(d->indexes.size(), 2u);
  const IndexDescription* label = d->index("by-label");
  ASSERT_TRUE(label);
  EXPECT_EQ(label->key, (KeySchema{"label", "at"}));
  EXPECT_EQ(label->projection, (Projection{Projection::Type::kInclude, {"state"}}));
  EXPECT_EQ(label->status, "ACTIVE");
  EXPECT_EQ(label->item_count, 7);
  EXPECT_TRUE(d->index("by-at")->backfilling);
  EXPECT_EQ(d->index("nope"), nullptr);
  EXPECT_FALSE(d->all_active());  // by-at is still CREATING
}

TEST_F(DynamoDbTest, UpdateTableAddsAnIndex) {
  http_.push(200, R"({"TableDescription":{"TableName":"pool","TableStatus":"UPDATING",
    "KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],
    "GlobalSecondaryIndexes":[{"IndexName":"by-at","IndexStatus":"CREATING",
      "KeySchema":[{"AttributeName":"at","KeyType":"HASH"}],"Projection":{"ProjectionType":"ALL"}}]}})");
  UpdateTableRequest u;
  u.table = "pool";
  u.attributes = {{"at", ScalarType::kNumber}};
  u.create_indexes = {{"by-at", {"at", ""}, {}}};
  u.delete_indexes = {"old"};
  TableDescription d = ddb_.update_table(u);
  EXPECT_EQ(d.status, "UPDATING");
  EXPECT_EQ(d.index("by-at")->status, "CREATING");
  EXPECT_EQ(d.billing_mode, "PROVISIONED");  // no BillingModeSummary
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "DynamoDB_20120810.UpdateTable");
  EXPECT_EQ(
      write_json(http_.body_json(0)),
      R"({"AttributeDefinitions":[{"AttributeName":"at","AttributeType":"N"}],)"
      R"("GlobalSecondaryIndexUpdates":[{"Create":{"IndexName":"by-at","KeySchema":[{"AttributeName":"at","KeyType":"HASH"}],)"
      R"("Projection":{"ProjectionType":"ALL"}}},{"Delete":{"IndexName":"old"}}],"TableName":"pool"})");
}

std::string table_with(const std::string& status, const std::string& index_status) {
  return R"({"Table":{"TableName":"pool","TableStatus":")" + status +
         R"(","KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],"GlobalSecondaryIndexes":[{"IndexName":"g",)"
         R"("IndexStatus":")" +
         index_status +
         R"(","KeySchema":[{"AttributeName":"x","KeyType":"HASH"}],"Projection":{"ProjectionType":"ALL"}}]}})";
}

TEST_F(DynamoDbTest, WaitUntilActiveWaitsForTheIndexesToo) {
  http_.push(400, ddb_error("ResourceNotFoundException"));  // not visible yet right after CreateTable
  http_.push(200, table_with("CREATING", "CREATING"));
  http_.push(200, table_with("ACTIVE", "CREATING"));
  http_.push(200, table_with("ACTIVE", "ACTIVE"));
  TableDescription d = ddb_.wait_until_active("pool", std::chrono::seconds(10), std::chrono::milliseconds(100));
  EXPECT_TRUE(d.all_active());
  EXPECT_EQ(http_.count(), 4u);
  EXPECT_EQ(clock_.total_slept(), std::chrono::milliseconds(300));
}

TEST_F(DynamoDbTest, WaitUntilActiveIsBounded) {
  for (int i = 0; i < 20; ++i) http_.push(200, table_with("CREATING", "CREATING"));
  try {
    ddb_.wait_until_active("pool", std::chrono::seconds(1), std::chrono::milliseconds(300));
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "WaitTimeout");
    EXPECT_NE(std::string(e.what()).find("CREATING"), std::string::npos);
  }
  EXPECT_EQ(http_.count(), 5u);  // at 0, 300, 600, 900 and 1000 ms
  EXPECT_EQ(clock_.total_slept(), std::chrono::seconds(1));
}

TEST_F(DynamoDbTest, MalformedAnswersAreClearErrors) {
  using Case = runpool::testing::MalformedCase<DynamoDbClient>;
  auto get = [](DynamoDbClient& d) { d.get_item({"pool", key("i-1")}); };
  auto scan = [](DynamoDbClient& d) { d.scan_page({"pool"}); };
  auto describe = [](DynamoDbClient& d) { d.describe_table("pool"); };
  auto put = [](DynamoDbClient& d) { d.put_item({"pool", key("i-1")}); };
  const std::vector<Case> cases = {
      {get, "{", "malformed JSON"},
      {get, R"({"Item":{"id":{"S":"i-1"})", "malformed JSON"},  // truncated
      {get, "[]", "expected a JSON object"},
      {get, "<html>oops</html>", "malformed JSON"},
      {get, R"({"Item":{"id":{"N":"abc"}}})", "attribute 'id'"},
      {get, R"({"Item":"i-1"})", "an item must be a JSON object"},
      {get, R"({"Item":{"id":{"S":"a","N":"1"}}})", "exactly one type key"},
      {put, R"({"Attributes":{"x":{"Q":"1"}}})", "unknown attribute type"},
      {scan, "{}", "field 'Items' missing"},
      {scan, R"({"Items":{}})", "field 'Items' is not an array"},
      {scan, R"({"Items":[5]})", "Items[0]"},
      {scan, R"({"Items":[],"LastEvaluatedKey":[1]})", "LastEvaluatedKey"},
      {scan, R"({"Items":[],"ScannedCount":"2"})", "ScannedCount"},
      {describe, "{}", "field 'Table' missing"},
      {describe, R"({"Table":5})", "not an object"},
      {describe, R"({"Table":{"TableName":"pool"}})", "TableStatus"},
      {describe, R"({"Table":{"TableName":"pool","TableStatus":"ACTIVE","KeySchema":{}}})",
       "KeySchema is not an array"},
      {describe,
       R"({"Table":{"TableName":"pool","TableStatus":"ACTIVE","KeySchema":[{"AttributeName":"id","KeyType":"X"}]}})",
       "unknown KeyType"},
      {describe, R"({"Table":{"TableName":"pool","TableStatus":"ACTIVE","KeySchema":[]}})", "no HASH key"},
      {describe,
       R"({"Table":{"TableName":"pool","TableStatus":"ACTIVE","KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],
         "GlobalSecondaryIndexes":[{"IndexName":"g"}]}})",
       "KeySchema"},
      {describe,
       R"({"Table":{"TableName":"pool","TableStatus":"ACTIVE","KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],
         "ItemCount":"many"}})",
       "ItemCount"},
  };
  runpool::testing::expect_malformed_answers(http_, ddb_, "dynamodb", cases);
}

TEST_F(DynamoDbTest, UnreadableErrorAnswersStillBecomeAwsErrors) {
  http_.push(400, "not json at all");
  try {
    ddb_.get_item({"pool", key("i-1")});
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "HTTP400");
    EXPECT_EQ(e.status(), 400);
  }
  http_.push(400, R"({"__type":5,"message":["x"]})");
  EXPECT_THROW(ddb_.get_item({"pool", key("i-1")}), AwsError);
}

TEST_F(DynamoDbTest, RetriesAreBoundedByThePolicy) {
  for (int i = 0; i < 10; ++i) http_.push(400, ddb_error("ThrottlingException"));
  try {
    ddb_.describe_table("pool");
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "ThrottlingException");
  }
  EXPECT_EQ(http_.count(), static_cast<size_t>(RetryPolicy{}.max_attempts));
}

}  // namespace
}  // namespace runpool::aws
