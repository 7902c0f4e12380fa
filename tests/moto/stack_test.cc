// `runpoolctl config from-stack` against moto's CloudFormation (the local cloud has none): a stack
// made there from a small template with runpool's outputs, read back by DescribeStacks through
// runpoolctl's own client, and written as the configuration file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/aws/aws_caller.h"
#include "common/aws/ec2_query.h"
#include "common/clock.h"
#include "common/http.h"
#include "controller/cloudformation_stack.h"
#include "controller/config_from_stack.h"
#include "tests/moto/backends.h"

namespace runpool::testing {
namespace {

// A queue (a stack needs a resource) and the outputs runpool's template gives, by the same keys.
constexpr const char* kTemplate = R"({
  "Parameters": {"PoolName": {"Type": "String"}},
  "Resources": {"PoolQueue": {"Type": "AWS::SQS::Queue",
                              "Properties": {"QueueName": {"Fn::Sub": "${PoolName}-small"}}}},
  "Outputs": {
    "Table": {"Value": "runpool"},
    "Pool": {"Value": {"Ref": "PoolName"}},
    "InstanceProfile": {"Value": "runpool-ci-InstanceProfile-AbC"},
    "InstanceRoleId": {"Value": "AROAEXAMPLEROLEID0001"},
    "LaunchTemplate": {"Value": "lt-0123456789abcdef0"},
    "LaunchTemplateName": {"Value": {"Fn::Sub": "runpool-${PoolName}"}},
    "MetricsLogGroup": {"Value": {"Fn::Sub": "/runpool/${PoolName}/metrics"}},
    "Region": {"Value": {"Ref": "AWS::Region"}}}})";

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(StackOnMoto, ConfigFromStackWritesTheStacksOutputsAsSettings) {
  const AwsBackend& b = aws_backend(kMoto);
  const std::string stack = unique_name("runpool-stack");
  const std::string pool = unique_name("p");
  aws::StaticCredentialsProvider creds(b.credentials);
  CurlHttpClient http;
  SystemClock clock;
  aws::AwsCaller cfn(http, creds, clock,
                     aws::ServiceSettings{"cloudformation", b.dynamodb, b.region,
                                          RetryPolicy{4, std::chrono::milliseconds(20), std::chrono::milliseconds(200)},
                                          std::chrono::seconds(30)});
  HttpRequest create;
  create.method = "POST";
  create.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  create.body = "Action=CreateStack&Version=2010-05-15&StackName=" + url_encode(stack) +
                "&TemplateBody=" + url_encode(kTemplate) + "&Parameters.member.1.ParameterKey=PoolName" +
                "&Parameters.member.1.ParameterValue=" + url_encode(pool);
  cfn.call("CreateStack", std::move(create), aws::parse_ec2_error);

  controller::StackOutputs got = controller::describe_stack(cfn, stack);
  EXPECT_EQ(got.name, stack);
  EXPECT_EQ(got.status, "CREATE_COMPLETE");
  EXPECT_EQ(got.outputs["LaunchTemplateName"], "runpool-" + pool);

  std::string tmpl = (std::filesystem::temp_directory_path() / "runpool-moto-stack-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  std::filesystem::path dir = tmpl;
  auto conf = dir / "runpoolctl.conf";
  controller::Settings s;
  s.region = b.region;
  s.aws_max_attempts = 2;
  std::map<std::string, std::string> env = {{"AWS_ENDPOINT_URL_CLOUDFORMATION", b.dynamodb},
                                            {"AWS_ACCESS_KEY_ID", b.credentials.access_key_id},
                                            {"AWS_SECRET_ACCESS_KEY", b.credentials.secret_access_key.reveal()}};
  auto getenv = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::ostringstream out;
  EXPECT_EQ(controller::run_config_from_stack(s, stack, conf.string(), false, out, getenv), 0);
  std::string text = read(conf);
  EXPECT_NE(text.find("\nregion = " + b.region + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ntable = runpool\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\npool = " + pool + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ninstance_role_id = AROAEXAMPLEROLEID0001\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nlaunch_template = runpool-" + pool + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmetrics_log_group = /runpool/" + pool + "/metrics\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("lt-"), std::string::npos) << text;
  EXPECT_NE(out.str().find(text), std::string::npos);
  // Once written, the file is kept unless --force.
  std::ostringstream again;
  EXPECT_THROW(controller::run_config_from_stack(s, stack, conf.string(), false, again, getenv), std::runtime_error);
  // A stack that does not exist is CloudFormation's ValidationError.
  EXPECT_THROW(controller::describe_stack(cfn, stack + "-absent"), aws::AwsError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace runpool::testing
