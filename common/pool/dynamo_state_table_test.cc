// DynamoStateTable's batch read against canned DynamoDB answers: ids in chunks of 100, each chunk
// one consistent BatchGetItem, records decoded as get() decodes them.
#include "common/pool/dynamo_state_table.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/pool/record_codec.h"
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
        std::string id = k[attr::kInstanceId]["S"].asString();
        if (id.back() == '7') continue;
        aws::Item item = id == "i-foreign"
                             ? aws::Item{{attr::kInstanceId, aws::AttributeValue::string(id)},
                                         {"whatever", aws::AttributeValue::number(1)}}
                             : encode_record(record(id));
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
  DynamoStateTable table_{db_, "pool"};
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

}  // namespace
}  // namespace runpool::pool
