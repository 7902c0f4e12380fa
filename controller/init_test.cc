// init's table step against canned DynamoDB answers (dynalite cannot add an index to an existing
// table, so this path is checked here): a table without the label index gets it via UpdateTable.
#include "controller/init.h"

#include <gtest/gtest.h>

#include <deque>

#include "common/json.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

class CannedHttp final : public HttpClient {
 public:
  HttpResponse send(const HttpRequest& request) override {
    requests.push_back(request);
    if (answers.empty()) throw std::logic_error("no answer left");
    HttpResponse r = answers.front();
    answers.pop_front();
    return r;
  }
  std::string target(size_t i) const {
    for (const auto& [k, v] : requests.at(i).headers) {
      if (k == "X-Amz-Target") return v;
    }
    return "";
  }
  std::vector<HttpRequest> requests;
  std::deque<HttpResponse> answers;
};

std::string table_json(bool with_index, const std::string& billing = "PAY_PER_REQUEST") {
  std::string gsi = with_index ? R"(,"GlobalSecondaryIndexes":[{"IndexName":"by_label","KeySchema":[{"AttributeName":"label","KeyType":"HASH"}],"Projection":{"ProjectionType":"ALL"},"IndexStatus":"ACTIVE"}])"
                               : "";
  return R"({"TableName":"runpool","TableStatus":"ACTIVE","KeySchema":[{"AttributeName":"instance_id","KeyType":"HASH"}],"AttributeDefinitions":[{"AttributeName":"instance_id","AttributeType":"S"}],"BillingModeSummary":{"BillingMode":")" +
         billing + "\"}" + gsi + "}";
}

struct InitFixture {
  CannedHttp http;
  testing::TickingClock clock;
  aws::StaticCredentialsProvider creds{aws::AwsCredentials{"AKID", Secret("s"), Secret(), std::nullopt}};
  aws::AwsCaller caller{http, creds, clock, {"dynamodb", "http://127.0.0.1:9", "us-east-1"}};
  aws::DynamoDbClient db{caller, clock};
  Settings settings = testing::test_settings();
  void answer(long status, const std::string& body) { http.answers.push_back(HttpResponse{status, {}, body}); }
};

TEST(InitTable, AddsAMissingLabelIndex) {
  InitFixture f;
  f.answer(400, R"({"__type":"com.amazonaws.dynamodb.v20120810#ResourceInUseException","message":"exists"})");
  f.answer(200, "{\"Table\":" + table_json(false) + "}");
  f.answer(200, "{\"TableDescription\":" + table_json(false) + "}");
  f.answer(200, "{\"Table\":" + table_json(true) + "}");
  InitReport report;
  ensure_state_table(f.settings, f.db, std::chrono::seconds(10), report);
  EXPECT_FALSE(report.table_created);
  EXPECT_TRUE(report.index_added);
  ASSERT_EQ(f.http.requests.size(), 4u);
  EXPECT_EQ(f.http.target(2), "DynamoDB_20120810.UpdateTable");
  Json::Value body = parse_json(f.http.requests[2].body, "UpdateTable");
  const Json::Value& create = body["GlobalSecondaryIndexUpdates"][0]["Create"];
  EXPECT_EQ(create["IndexName"].asString(), "by_label");
  EXPECT_EQ(create["KeySchema"][0]["AttributeName"].asString(), "label");
  EXPECT_FALSE(create.isMember("ProvisionedThroughput"));  // an on-demand table
  EXPECT_EQ(body["AttributeDefinitions"][0]["AttributeName"].asString(), "label");
}

TEST(InitTable, AProvisionedTableGetsAnIndexWithCapacity) {
  InitFixture f;
  f.answer(400, R"({"__type":"com.amazonaws.dynamodb.v20120810#ResourceInUseException","message":"exists"})");
  f.answer(200, "{\"Table\":" + table_json(false, "PROVISIONED") + "}");
  f.answer(200, "{\"TableDescription\":" + table_json(false, "PROVISIONED") + "}");
  f.answer(200, "{\"Table\":" + table_json(true, "PROVISIONED") + "}");
  InitReport report;
  ensure_state_table(f.settings, f.db, std::chrono::seconds(10), report);
  Json::Value body = parse_json(f.http.requests[2].body, "UpdateTable");
  EXPECT_TRUE(body["GlobalSecondaryIndexUpdates"][0]["Create"].isMember("ProvisionedThroughput"));
}

TEST(InitTable, AConcurrentInitAddingTheIndexIsFine) {
  InitFixture f;
  f.answer(200, "{\"TableDescription\":" + table_json(false) + "}");  // CreateTable: ours
  f.answer(200, "{\"Table\":" + table_json(false) + "}");
  f.answer(400, R"({"__type":"com.amazonaws.dynamodb.v20120810#ResourceInUseException","message":"table is being updated"})");
  f.answer(200, "{\"Table\":" + table_json(true) + "}");
  InitReport report;
  ensure_state_table(f.settings, f.db, std::chrono::seconds(10), report);
  EXPECT_TRUE(report.table_created);
  EXPECT_FALSE(report.index_added);
}

}  // namespace
}  // namespace runpool::controller
