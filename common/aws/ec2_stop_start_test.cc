// StopInstances and StartInstances on the wire: the Query form sent, and the state changes parsed
// from EC2's `instancesSet` (the shape of the EC2 API reference's StopInstances example).
#include <gtest/gtest.h>

#include "common/aws/ec2.h"
#include "common/retry.h"
#include "common/testing/fake_http.h"

namespace runpool::aws {
namespace {

std::string stop_start_response(const std::string& action, const std::string& id, int prev, const char* prev_name,
                                int cur, const char* cur_name) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<" + action +
         "Response xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>59dbff89-35bd-4eac-99ed-be587</requestId>"
         "<instancesSet><item><instanceId>" + id + "</instanceId><currentState><code>" + std::to_string(cur) +
         "</code><name>" + cur_name + "</name></currentState><previousState><code>" + std::to_string(prev) +
         "</code><name>" + prev_name + "</name></previousState></item></instancesSet></" + action + "Response>";
}

class Ec2StopStartTest : public ::testing::Test {
 protected:
  Ec2StopStartTest()
      : creds_(AwsCredentials{"AKIDEXAMPLE", Secret("secret"), Secret(), std::nullopt}),
        caller_(http_, creds_, clock_, ServiceSettings{"ec2", "http://ec2.local", "us-east-1", RetryPolicy{}, {}}),
        ec2_(caller_) {}

  runpool::testing::FakeHttp http_;
  FakeClock clock_;
  StaticCredentialsProvider creds_;
  AwsCaller caller_;
  Ec2Client ec2_;
};

TEST_F(Ec2StopStartTest, StopSendsTheIdsAndForceAndParsesTheStateChanges) {
  http_.push(200, stop_start_response("StopInstances", "i-1", 16, "running", 64, "stopping"));
  http_.push(200, stop_start_response("StopInstances", "i-2", 80, "stopped", 80, "stopped"));
  auto changes = ec2_.stop_instances({"i-1"});
  ec2_.stop_instances({"i-2", "i-3"}, true);
  EXPECT_EQ(http_.request(0).body, "Action=StopInstances&Version=2016-11-15&InstanceId.1=i-1");
  EXPECT_EQ(http_.request(1).body, "Action=StopInstances&Version=2016-11-15&InstanceId.1=i-2&InstanceId.2=i-3&Force=true");
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].instance_id, "i-1");
  EXPECT_EQ(changes[0].previous_state.code, 16);
  EXPECT_EQ(changes[0].previous_state.name, "running");
  EXPECT_EQ(changes[0].current_state.code, 64);
  EXPECT_EQ(changes[0].current_state.name, "stopping");
}

TEST_F(Ec2StopStartTest, StartSendsTheIdsAndParsesTheStateChanges) {
  http_.push(200, stop_start_response("StartInstances", "i-1", 80, "stopped", 0, "pending"));
  auto changes = ec2_.start_instances({"i-1"});
  EXPECT_EQ(http_.request(0).body, "Action=StartInstances&Version=2016-11-15&InstanceId.1=i-1");
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].previous_state.name, "stopped");
  EXPECT_EQ(changes[0].current_state.code, 0);
  EXPECT_EQ(changes[0].current_state.name, "pending");
}

TEST_F(Ec2StopStartTest, RefusalsAreAwsErrors) {
  http_.push(400, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>IncorrectInstanceState"
                  "</Code><Message>The instance 'i-1' is not in a state from which it can be stopped.</Message></Error>"
                  "</Errors><RequestID>ea966190-f9aa-478e-9ede-example</RequestID></Response>");
  try {
    ec2_.stop_instances({"i-1"});
    FAIL() << "expected an AwsError";
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "IncorrectInstanceState");
  }
}

}  // namespace
}  // namespace runpool::aws
