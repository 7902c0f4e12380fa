// DynamoStateTable's batch read against canned DynamoDB answers: ids in chunks of 100, each chunk
// one consistent BatchGetItem, records decoded as get() decodes them.
#include "common/pool/dynamo_state_table.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/pool/record_codec.h"
#include "common/pool/record_key.h"
#include "common/testing/fake_http.h"

namespace runpool::pool {
namespace {

using runpool::testing::FakeHttp;

class DynamoStateTableTest : public ::testing::Test {
 protected:
  DynamoStateTableTest()
      : creds_(aws::AwsCredentials{"AKIDTEST", Secret("secret"), Secret(), std::nullopt}),
        caller_(http_, creds_, clock_,
                aws::ServiceSettings{"dynamodb", "http://127.0.0.1:9", "us-east-1", RetryPolicy{}}),
        db_(caller_, clock_) {}

  static InstanceRecord record(const std::string& id) {
    InstanceRecord r;
    r.instance_id = id;
    r.state = State::kRunning;
    r.generation = static_cast<int64_t>(id.size());
    r.pool = "ci";
    r.resource_class = "small";
    r.label = "run-" + id;
    r.deadline_ms = 1'900'000'000'000;
    return r;
  }

  // Answers a BatchGetItem as DynamoDB would for a table where ids ending in 7 have no item and
  // "i-foreign" holds an item that is not a runpool record.
  void serve_table() {
    http_.on([](const HttpRequest& req) {
      Json::Value body = parse_json(req.body, "request");
      Json::Value items(Json::arrayValue);
      for (const auto& k : body["RequestItems"]["pool"]["Keys"]) {
        std::string key = k[attr::kInstanceId]["S"].asString();
        auto parsed = parse_record_key(key);
        if (!parsed || parsed->instance_role_id != kRole) continue;  // not this role's key: no such item
        const std::string& id = parsed->instance_id;
        if (id.back() == '7') continue;
        aws::Item item = id == "i-foreign"
                             ? aws::Item{{attr::kInstanceId, aws::AttributeValue::string(key)},
                                         {"whatever", aws::AttributeValue::number(1)}}
                             : encode_record(record(id));
        if (id != "i-foreign") item[attr::kInstanceId] = aws::AttributeValue::string(key);
        items.append(aws::item_to_json(item));
      }
      Json::Value answer;
      answer["Responses"]["pool"] = items;
      return runpool::testing::reply(200, write_json(answer));
    });
  }

  FakeHttp http_;
  FakeClock clock_;
  aws::StaticCredentialsProvider creds_;
  aws::AwsCaller caller_;
  aws::DynamoDbClient db_;
  static constexpr const char* kRole = "AROA4DYNAMOSTATETEST1";
  DynamoStateTable table_{db_, "pool", kRole};
};

TEST_F(DynamoStateTableTest, GetManyReadsOneBatchPerHundredIds) {
  serve_table();
  std::vector<std::string> ids;
  for (int i = 0; i < 250; ++i) ids.push_back("i-" + std::to_string(1000 + i));
  ids.push_back("i-1000");  // asked twice, sent once
  ids.push_back("i-foreign");

  std::map<std::string, InstanceRecord> got = table_.get_many(ids);

  ASSERT_EQ(http_.count(), 3u);  // 251 distinct ids: 100 + 100 + 51
  std::vector<size_t> sizes;
  for (size_t i = 0; i < http_.count(); ++i) {
    EXPECT_EQ(http_.header(i, "X-Amz-Target"), "DynamoDB_20120810.BatchGetItem");
    Json::Value entry = http_.body_json(i)["RequestItems"]["pool"];
    EXPECT_TRUE(entry["ConsistentRead"].asBool());
    sizes.push_back(entry["Keys"].size());
    for (const auto& k : entry["Keys"]) {  // every key as IAM binds it: "<role id>:<instance id>"
      EXPECT_EQ(k[attr::kInstanceId]["S"].asString().rfind(std::string(kRole) + ":i-", 0), 0u);
    }
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{100, 100, 51}));
  EXPECT_EQ(got.size(), 225u);  // 25 of the 250 end in 7; the foreign item is skipped as get() skips it
  EXPECT_FALSE(got.count("i-1007"));
  EXPECT_FALSE(got.count("i-foreign"));
  const InstanceRecord& r = got.at("i-1249");
  EXPECT_EQ(r.label, "run-i-1249");
  EXPECT_EQ(r.state, State::kRunning);
  EXPECT_EQ(r.generation, 6);
}

TEST_F(DynamoStateTableTest, GetManyOfNothingSendsNothingAndAFailedBatchThrows) {
  EXPECT_TRUE(table_.get_many({}).empty());
  EXPECT_EQ(http_.count(), 0u);
  http_.push(400, R"({"__type":"com.amazonaws.dynamodb.v20120810#ValidationException","message":"bad"})");
  EXPECT_THROW(table_.get_many({"i-1"}), aws::AwsError);
}

TEST_F(DynamoStateTableTest, EveryRequestNamesTheRoleBoundKey) {
  http_.push(200, "{}");  // GetItem: no item
  EXPECT_FALSE(table_.get("i-0123456789abcdef0"));
  http_.push(200, "{}");  // PutItem
  EXPECT_TRUE(table_.create(record("i-0123456789abcdef0")));
  http_.push(200, "{}");  // UpdateItem
  AgentReport beat;
  beat.heartbeat_ms = 1;
  EXPECT_TRUE(table_.report("i-0123456789abcdef0", beat));
  http_.push(200, "{}");  // DeleteItem
  EXPECT_TRUE(table_.remove("i-0123456789abcdef0", Expect{}));
  ASSERT_EQ(http_.count(), 4u);
  const std::string key = std::string(kRole) + ":i-0123456789abcdef0";
  EXPECT_EQ(http_.body_json(0)["Key"][attr::kInstanceId]["S"].asString(), key);
  EXPECT_EQ(http_.body_json(1)["Item"][attr::kInstanceId]["S"].asString(), key);
  EXPECT_EQ(http_.body_json(2)["Key"][attr::kInstanceId]["S"].asString(), key);
  EXPECT_EQ(http_.body_json(3)["Key"][attr::kInstanceId]["S"].asString(), key);
}

TEST_F(DynamoStateTableTest, RefusesARoleIdThatIsNotOne) {
  EXPECT_THROW(DynamoStateTable(db_, "pool", ""), std::invalid_argument);
  EXPECT_THROW(DynamoStateTable(db_, "pool", "runpool-agent"), std::invalid_argument);
}

}  // namespace
}  // namespace runpool::pool
