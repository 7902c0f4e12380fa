// A DynamoDbClient whose requests go to a FakeHttp (canned answers, recorded requests), with a
// fake clock and fixed credentials: the fixture of the DynamoDB client's unit tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/aws/dynamodb.h"
#include "common/testing/fake_http.h"

namespace runpool::testing {

class DynamoDbOverFakeHttp : public ::testing::Test {
 protected:
  DynamoDbOverFakeHttp()
      : creds_(aws::AwsCredentials{"AKIDTEST", Secret("secret"), Secret(), std::nullopt}),
        caller_(http_, creds_, clock_,
                aws::ServiceSettings{"dynamodb", "http://127.0.0.1:9", "us-east-1", RetryPolicy{}}),
        ddb_(caller_, clock_) {}

  // The key of an item of a table keyed by "id".
  static aws::Item key(const std::string& id) { return aws::Item{{"id", aws::AttributeValue::string(id)}}; }

  FakeHttp http_;
  FakeClock clock_;
  aws::StaticCredentialsProvider creds_;
  aws::AwsCaller caller_;
  aws::DynamoDbClient ddb_;
};

}  // namespace runpool::testing
