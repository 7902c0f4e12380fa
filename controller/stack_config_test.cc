#include "controller/stack_config.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "controller/cloudformation_stack.h"

namespace runpool::controller {
namespace {

using StackOutputMap = std::map<std::string, std::string>;

StackOutputMap full() {
  return {{"Table", "runpool"},
          {"Pool", "ci"},
          {"InstanceProfile", "runpool-ci-InstanceProfile-AbC"},
          {"InstanceRoleId", "AROAEXAMPLEROLEID0001"},
          {"LaunchTemplate", "lt-0123456789abcdef0"},
          {"LaunchTemplateName", "runpool-ci"},
          {"MetricsLogGroup", "/runpool/ci/metrics"},
          {"Region", "eu-west-1"},
          {"ControllerRoleArn", "arn:aws:iam::123456789012:role/x"}};
}

TEST(StackConfig, EveryOutputBecomesItsSettingAndTheTemplateIsNamedNotItsId) {
  std::string text = stack_config_text("runpool-ci", "CREATE_COMPLETE", full());
  EXPECT_EQ(text.substr(0, text.find("# Yours")),
            "# From CloudFormation stack runpool-ci's outputs (runpoolctl config from-stack).\n"
            "region = eu-west-1\n"
            "table = runpool\n"
            "pool = ci\n"
            "instance_profile = runpool-ci-InstanceProfile-AbC\n"
            "instance_role_id = AROAEXAMPLEROLEID0001\n"
            "launch_template = runpool-ci\n"
            "metrics_log_group = /runpool/ci/metrics\n");
  EXPECT_EQ(text.find("lt-"), std::string::npos);
  EXPECT_EQ(text.find("ControllerRoleArn"), std::string::npos);
}

TEST(StackConfig, RefusesWhatCannotMakeAWorkingConfiguration) {
  struct Case {
    std::string what, status;
    StackOutputMap outputs;
    std::string error;
  };
  auto without = [](const std::string& k) {
    StackOutputMap o = full();
    o.erase(k);
    return o;
  };
  auto with = [](const std::string& k, const std::string& v) {
    StackOutputMap o = full();
    o[k] = v;
    return o;
  };
  for (const Case& c : std::vector<Case>{
           {"in progress", "UPDATE_IN_PROGRESS", full(), "UPDATE_IN_PROGRESS, not complete"},
           {"rolled back at creation", "ROLLBACK_COMPLETE", full(), "ROLLBACK_COMPLETE, not complete"},
           {"no status", "", full(), "in no known state"},
           {"no table", "CREATE_COMPLETE", without("Table"), "has no Table output"},
           {"no role id nor name", "UPDATE_COMPLETE", [&] {
              StackOutputMap o = without("InstanceRoleId");
              o.erase("LaunchTemplateName");
              return o;
            }(),
            "has no InstanceRoleId, LaunchTemplateName output"},
           {"an empty pool", "CREATE_COMPLETE", with("Pool", ""), "has no Pool output"},
           {"a line break", "CREATE_COMPLETE", with("InstanceProfile", "a\nregion = x"), "not a one-line value"},
           {"a comment", "CREATE_COMPLETE", with("Table", "t # x"), "not a one-line value"},
           {"an id for the name", "CREATE_COMPLETE", with("LaunchTemplateName", "lt-0123456789abcdef0"),
            "is a launch template id"},
       }) {
    try {
      stack_config_text("s", c.status, c.outputs);
      ADD_FAILURE() << c.what << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << c.what << ": " << e.what();
    }
  }
  // An older stack without the metrics log group or region output still makes a configuration.
  StackOutputMap old = without("MetricsLogGroup");
  old.erase("Region");
  std::string text = stack_config_text("s", "UPDATE_ROLLBACK_COMPLETE", old);
  EXPECT_EQ(text.find("metrics_log_group"), std::string::npos);
  EXPECT_NE(text.find("launch_template = runpool-ci\n"), std::string::npos);
}

TEST(CloudFormationStack, ParsesDescribeStacksOutputs) {
  // CloudFormation's answer shape (API reference, DescribeStacks, example response).
  StackOutputs s = parse_describe_stacks(
      "<DescribeStacksResponse xmlns=\"http://cloudformation.amazonaws.com/doc/2010-05-15/\">"
      "<DescribeStacksResult><Stacks><member><StackName>runpool-ci</StackName>"
      "<StackId>arn:aws:cloudformation:eu-west-1:123456789012:stack/runpool-ci/1</StackId>"
      "<StackStatus>CREATE_COMPLETE</StackStatus><Outputs>"
      "<member><OutputKey>Table</OutputKey><OutputValue>runpool</OutputValue><Description>d</Description></member>"
      "<member><Description>x</Description><OutputValue>runpool-ci</OutputValue>"
      "<OutputKey>LaunchTemplateName</OutputKey></member>"
      "</Outputs></member></Stacks></DescribeStacksResult>"
      "<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></DescribeStacksResponse>");
  EXPECT_EQ(s.name, "runpool-ci");
  EXPECT_EQ(s.status, "CREATE_COMPLETE");
  EXPECT_EQ(s.outputs, (StackOutputMap{{"Table", "runpool"}, {"LaunchTemplateName", "runpool-ci"}}));
  EXPECT_THROW(parse_describe_stacks("not xml <"), std::invalid_argument);
  EXPECT_THROW(parse_describe_stacks("<DescribeStacksResponse><DescribeStacksResult><Stacks/>"
                                     "</DescribeStacksResult></DescribeStacksResponse>"),
               std::invalid_argument);
  EXPECT_THROW(parse_describe_stacks("<ErrorResponse/>"), std::invalid_argument);
}

}  // namespace
}  // namespace runpool::controller
