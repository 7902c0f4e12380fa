// DynamoDbClient::batch_get_item against canned answers: the request, unprocessed keys asked for
// again (boundedly), and what is refused before any request.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/aws/dynamodb.h"
#include "common/json.h"
#include "common/testing/expect_malformed.h"
#include "common/testing/dynamodb_over_fake_http.h"
#include "common/testing/fake_http.h"

namespace runpool::aws {
namespace {

using runpool::testing::FakeHttp;

using DynamoDbBatchTest = runpool::testing::DynamoDbOverFakeHttp;

std::vector<std::string> ids_of(const std::vector<Item>& items) {
  std::vector<std::string> out;
  for (const auto& i : items) out.push_back(get_string(i, "id"));
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(DynamoDbBatchTest, RequestShapeAndResult) {
  http_.push(200, R"({"Responses":{"pool":[{"id":{"S":"i-2"},"gen":{"N":"7"}},{"id":{"S":"i-1"}}]},)"
                  R"("UnprocessedKeys":{}})");
  std::vector<Item> items = ddb_.batch_get_item({"pool", {key("i-1"), key("i-2"), key("i-3")}, true});
  EXPECT_EQ(ids_of(items), (std::vector<std::string>{"i-1", "i-2"}));  // i-3 has no item
  ASSERT_EQ(http_.count(), 1u);
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "DynamoDB_20120810.BatchGetItem");
  EXPECT_EQ(write_json(http_.body_json(0)),
            R"({"RequestItems":{"pool":{"ConsistentRead":true,)"
            R"("Keys":[{"id":{"S":"i-1"}},{"id":{"S":"i-2"}},{"id":{"S":"i-3"}}]}}})");

  // Eventually consistent: the flag is left out; an answer without Responses found nothing.
  http_.push(200, "{}");
  EXPECT_TRUE(ddb_.batch_get_item({"pool", {key("i-4")}}).empty());
  EXPECT_EQ(write_json(http_.body_json(1)), R"({"RequestItems":{"pool":{"Keys":[{"id":{"S":"i-4"}}]}}})");
}

TEST_F(DynamoDbBatchTest, UnprocessedKeysAreAskedForAgainAlone) {
  http_.push(200, R"({"Responses":{"pool":[{"id":{"S":"i-1"}}]},)"
                  R"("UnprocessedKeys":{"pool":{"Keys":[{"id":{"S":"i-2"}},{"id":{"S":"i-3"}}],"ConsistentRead":true}}})");
  http_.push(200, R"({"Responses":{"pool":[{"id":{"S":"i-3"}}]},)"
                  R"("UnprocessedKeys":{"pool":{"Keys":[{"id":{"S":"i-2"}}],"ConsistentRead":true}}})");
  http_.push(200, R"({"Responses":{"pool":[{"id":{"S":"i-2"}}]}})");
  std::vector<Item> items = ddb_.batch_get_item({"pool", {key("i-1"), key("i-2"), key("i-3")}, true});
  EXPECT_EQ(ids_of(items), (std::vector<std::string>{"i-1", "i-2", "i-3"}));
  ASSERT_EQ(http_.count(), 3u);
  EXPECT_EQ(write_json(http_.body_json(1)),
            R"({"RequestItems":{"pool":{"ConsistentRead":true,"Keys":[{"id":{"S":"i-2"}},{"id":{"S":"i-3"}}]}}})");
  EXPECT_EQ(write_json(http_.body_json(2)),
            R"({"RequestItems":{"pool":{"ConsistentRead":true,"Keys":[{"id":{"S":"i-2"}}]}}})");
  EXPECT_LE(clock_.total_slept(), RetryPolicy{}.base * 2 + RetryPolicy{}.base);  // backoff, within its ceilings
}

TEST_F(DynamoDbBatchTest, KeysThatStayUnprocessedAreAnErrorAfterTheRetryPolicysAttempts) {
  const std::string stuck = R"({"Responses":{"pool":[]},"UnprocessedKeys":{"pool":{"Keys":[{"id":{"S":"i-1"}}]}}})";
  for (int i = 0; i < 10; ++i) http_.push(200, stuck);
  try {
    ddb_.batch_get_item({"pool", {key("i-1")}, true});
    ADD_FAILURE() << "a silently short answer";
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "UnprocessedKeys");
    EXPECT_EQ(e.operation(), "BatchGetItem");
    EXPECT_NE(std::string(e.what()).find("1 of 1 key(s) still unprocessed after 6 round(s)"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(http_.count(), static_cast<size_t>(RetryPolicy{}.max_attempts));
}

TEST_F(DynamoDbBatchTest, ThrottledCallsAreRetriedLikeEveryOther) {
  http_.push(400, R"({"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"})");
  http_.push(200, R"({"Responses":{"pool":[{"id":{"S":"i-1"}}]}})");
  EXPECT_EQ(ddb_.batch_get_item({"pool", {key("i-1")}, true}).size(), 1u);
  EXPECT_EQ(http_.count(), 2u);

  http_.push(400, R"({"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException"})");
  EXPECT_THROW(ddb_.batch_get_item({"nope", {key("i-1")}, true}), ResourceNotFoundError);
  EXPECT_EQ(http_.count(), 3u);
}

TEST_F(DynamoDbBatchTest, WhatDynamoDbWouldRefuseIsNeverSent) {
  EXPECT_TRUE(ddb_.batch_get_item({"pool", {}, true}).empty());
  std::vector<Item> many;
  for (size_t i = 0; i <= kBatchGetMaxKeys; ++i) many.push_back(key("i-" + std::to_string(i)));
  EXPECT_THROW(ddb_.batch_get_item({"pool", many, true}), std::invalid_argument);
  many.pop_back();
  many.back() = key("i-0");
  EXPECT_THROW(ddb_.batch_get_item({"pool", many, true}), std::invalid_argument);
  EXPECT_EQ(http_.count(), 0u);
}

TEST_F(DynamoDbBatchTest, MalformedAnswersAreClearErrors) {
  using Case = runpool::testing::MalformedCase<DynamoDbClient>;
  auto get = [](DynamoDbClient& d) { d.batch_get_item({"pool", {key("i-1")}, true}); };
  const std::vector<Case> cases = {
      {get, "{", "malformed JSON"},
      {get, R"({"Responses":[]})", "field 'Responses' is not an object"},
      {get, R"({"Responses":{"pool":{}}})", "Responses is not an array"},
      {get, R"({"Responses":{"pool":[5]}})", "Responses[0]"},
      {get, R"({"UnprocessedKeys":{"pool":[]}})", "UnprocessedKeys entry is not an object"},
      {get, R"({"UnprocessedKeys":{"pool":{"Keys":{}}}})", "UnprocessedKeys is not an array"},
  };
  runpool::testing::expect_malformed_answers(http_, ddb_, "dynamodb", cases);
}

}  // namespace
}  // namespace runpool::aws
