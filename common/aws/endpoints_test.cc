#include "common/aws/endpoints.h"

#include <gtest/gtest.h>

#include "common/aws/credentials.h"

namespace runpool::aws {
namespace {

GetEnv env_of(std::map<std::string, std::string> vars) {
  auto owned = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [owned](const char* name) -> const char* {
    auto it = owned->find(name);
    return it == owned->end() ? nullptr : it->second.c_str();
  };
}

TEST(Endpoints, FlagBeatsServiceVariableBeatsGlobalVariableBeatsDefault) {
  AwsSettings s;
  EXPECT_EQ(resolve_endpoint(s, "dynamodb", "eu-west-1", env_of({})), "https://dynamodb.eu-west-1.amazonaws.com");
  EXPECT_EQ(resolve_endpoint(s, "sqs", "eu-west-1", env_of({{"AWS_ENDPOINT_URL", "http://127.0.0.1:1/"}})),
            "http://127.0.0.1:1");
  EXPECT_EQ(resolve_endpoint(s, "sqs", "eu-west-1",
                             env_of({{"AWS_ENDPOINT_URL", "http://g"}, {"AWS_ENDPOINT_URL_SQS", "http://s"}})),
            "http://s");
  s.endpoints["sqs"] = "http://flag//";
  EXPECT_EQ(resolve_endpoint(s, "sqs", "eu-west-1", env_of({{"AWS_ENDPOINT_URL_SQS", "http://s"}})), "http://flag");
}

TEST(Endpoints, RegionFromSettingsThenEnvironment) {
  AwsSettings s;
  EXPECT_EQ(resolve_region(s, env_of({})), "");
  EXPECT_EQ(resolve_region(s, env_of({{"AWS_DEFAULT_REGION", "b"}})), "b");
  EXPECT_EQ(resolve_region(s, env_of({{"AWS_DEFAULT_REGION", "b"}, {"AWS_REGION", "a"}})), "a");
  s.region = "c";
  EXPECT_EQ(resolve_region(s, env_of({{"AWS_REGION", "a"}})), "c");
}

TEST(Credentials, FromEnvironmentNeedsKeyAndSecret) {
  EXPECT_FALSE(credentials_from_env(env_of({{"AWS_ACCESS_KEY_ID", "AKID"}})));
  auto c = credentials_from_env(
      env_of({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "s3cr3t"}, {"AWS_SESSION_TOKEN", "tok"}}));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->access_key_id, "AKID");
  EXPECT_EQ(c->secret_access_key.reveal(), "s3cr3t");
  EXPECT_EQ(c->session_token.reveal(), "tok");
}

}  // namespace
}  // namespace runpool::aws
