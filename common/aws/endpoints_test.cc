#include "common/aws/endpoints.h"

#include <gtest/gtest.h>

#include "common/aws/credentials.h"
#include "common/testing/fake_env.h"

namespace runpool::aws {
namespace {

using runpool::testing::env_of;

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

TEST(Endpoints, EachPartitionsDnsSuffix) {
  AwsSettings s;
  auto env = env_of({});
  EXPECT_EQ(resolve_endpoint(s, "dynamodb", "us-east-1", env), "https://dynamodb.us-east-1.amazonaws.com");
  EXPECT_EQ(resolve_endpoint(s, "dynamodb", "cn-north-1", env), "https://dynamodb.cn-north-1.amazonaws.com.cn");
  EXPECT_EQ(resolve_endpoint(s, "sqs", "cn-northwest-1", env), "https://sqs.cn-northwest-1.amazonaws.com.cn");
  EXPECT_EQ(resolve_endpoint(s, "logs", "cn-north-1", env), "https://logs.cn-north-1.amazonaws.com.cn");
  EXPECT_EQ(resolve_endpoint(s, "sts", "cn-north-1", env), "https://sts.cn-north-1.amazonaws.com.cn");
  EXPECT_EQ(resolve_endpoint(s, "ec2", "us-gov-west-1", env), "https://ec2.us-gov-west-1.amazonaws.com");
  EXPECT_EQ(resolve_endpoint(s, "ec2", "us-iso-east-1", env), "https://ec2.us-iso-east-1.c2s.ic.gov");
  EXPECT_EQ(resolve_endpoint(s, "ec2", "us-isob-east-1", env), "https://ec2.us-isob-east-1.sc2s.sgov.gov");
  EXPECT_EQ(resolve_endpoint(s, "ec2", "eu-isoe-west-1", env), "https://ec2.eu-isoe-west-1.cloud.adc-e.uk");
  EXPECT_EQ(resolve_endpoint(s, "ec2", "us-isof-south-1", env), "https://ec2.us-isof-south-1.csp.hci.ic.gov");
  EXPECT_EQ(resolve_endpoint(s, "ec2", "eusc-de-east-1", env), "https://ec2.eusc-de-east-1.amazonaws.eu");
  // An override still wins in China.
  EXPECT_EQ(resolve_endpoint(s, "sqs", "cn-north-1", env_of({{"AWS_ENDPOINT_URL_SQS", "http://s"}})), "http://s");
}

TEST(Partitions, RegionToPartitionAsTheEndpointRulesHaveIt) {
  struct Case {
    const char* region;
    const char* partition;
    const char* suffix;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"us-east-1", "aws", "amazonaws.com"},
           {"eu-west-3", "aws", "amazonaws.com"},
           {"ap-southeast-7", "aws", "amazonaws.com"},
           {"mx-central-1", "aws", "amazonaws.com"},
           {"il-central-1", "aws", "amazonaws.com"},
           {"aws-global", "aws", "amazonaws.com"},
           {"cn-north-1", "aws-cn", "amazonaws.com.cn"},
           {"cn-northwest-1", "aws-cn", "amazonaws.com.cn"},
           {"aws-cn-global", "aws-cn", "amazonaws.com.cn"},
           {"us-gov-west-1", "aws-us-gov", "amazonaws.com"},
           {"us-gov-east-1", "aws-us-gov", "amazonaws.com"},
           {"us-iso-west-1", "aws-iso", "c2s.ic.gov"},
           {"us-isob-east-1", "aws-iso-b", "sc2s.sgov.gov"},
           {"eu-isoe-west-1", "aws-iso-e", "cloud.adc-e.uk"},
           {"us-isof-east-1", "aws-iso-f", "csp.hci.ic.gov"},
           {"eusc-de-east-1", "aws-eusc", "amazonaws.eu"},
           // Regions no pattern claims: the SDKs' default partition.
           {"", "aws", "amazonaws.com"},
           {"local", "aws", "amazonaws.com"},
           {"cn-north", "aws", "amazonaws.com"},
           {"xx-new-1", "aws", "amazonaws.com"},
           {"cn-north-1 ", "aws", "amazonaws.com"},
           {"CN-NORTH-1", "aws", "amazonaws.com"},
       }) {
    Partition p = partition_of(c.region);
    EXPECT_EQ(p.name, c.partition) << c.region;
    EXPECT_EQ(p.dns_suffix, c.suffix) << c.region;
  }
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
