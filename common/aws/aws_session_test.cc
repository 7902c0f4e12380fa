#include "common/aws/aws_session.h"

#include <gtest/gtest.h>

#include <map>

#include "common/testing/fake_http.h"

namespace runpool::aws {
namespace {

using runpool::testing::FakeHttp;
using runpool::testing::reply;

// What the session made: each connection the fake opened, and the cancel flag it was given.
struct Opened {
  std::vector<FakeHttp*> http;
  std::vector<const std::atomic<bool>*> cancel;
  AwsSession::Connect connect() {
    return [this](const std::atomic<bool>* flag) {
      auto h = std::make_unique<FakeHttp>();
      http.push_back(h.get());
      cancel.push_back(flag);
      return h;
    };
  }
};

TEST(AwsSession, EveryCallerHasItsOwnConnectionAndTheSessionsPlaceAndPolicy) {
  FakeClock clock(from_epoch_ms(1'700'000'000'000));
  StaticCredentialsProvider creds(AwsCredentials{"AKID", Secret("s"), Secret(), std::nullopt});
  SessionSettings s;
  s.region = "eu-west-1";
  s.retry.max_attempts = 2;
  s.retry.base = Duration{1};
  s.timeout = std::chrono::seconds(7);
  Opened opened;
  AwsSession session(creds, clock, s, opened.connect());
  std::atomic<bool> stop{false};
  AwsCaller& db = session.caller("dynamodb", "http://127.0.0.1:1");
  AwsCaller& poll = session.caller("sqs", "http://127.0.0.1:2", &stop);
  ASSERT_EQ(opened.http.size(), 2u);
  EXPECT_EQ(opened.cancel, (std::vector<const std::atomic<bool>*>{nullptr, &stop}));
  EXPECT_EQ(db.settings().service, "dynamodb");
  EXPECT_EQ(poll.settings().endpoint, "http://127.0.0.1:2");
  for (AwsCaller* c : {&db, &poll}) {
    EXPECT_EQ(c->settings().region, "eu-west-1");
    EXPECT_EQ(c->settings().timeout, std::chrono::seconds(7));
    EXPECT_EQ(c->settings().retry.max_attempts, 2);
  }
  // The policy's two attempts, on the caller's own connection only.
  opened.http[0]->push(reply(500, R"({"__type":"InternalServerError"})"));
  opened.http[0]->push(reply(500, R"({"__type":"InternalServerError"})"));
  EXPECT_THROW(db.call("GetItem", HttpRequest{}, parse_json_error), AwsError);
  EXPECT_EQ(opened.http[0]->requests().size(), 2u);
  EXPECT_TRUE(opened.http[1]->requests().empty());
}

// Whichever service answers, its Date header corrects the one clock: the agent's and runpoolctl's
// table times both follow AWS's.
TEST(AwsSession, EveryServicesAnswerFeedsTheOneAwsClock) {
  FakeClock clock(from_epoch_ms(1'700'000'000'000));
  StaticCredentialsProvider creds(AwsCredentials{"AKID", Secret("s"), Secret(), std::nullopt});
  Opened opened;
  AwsSession session(creds, clock, SessionSettings{"us-east-1", RetryPolicy{}, std::chrono::seconds(5)},
                     opened.connect());
  AwsCaller& db = session.caller("dynamodb", "http://127.0.0.1:1");
  AwsCaller& ec2 = session.caller("ec2", "http://127.0.0.1:2");
  EXPECT_EQ(session.clock().offset(), Duration{0}) << "no answer yet";
  // AWS is 65 s ahead: 1'700'000'065 s is Tue, 14 Nov 2023 22:14:25 GMT.
  const std::map<std::string, std::string> date = {{"date", "Tue, 14 Nov 2023 22:14:25 GMT"}};
  opened.http[0]->push(reply(200, "{}", date));
  opened.http[1]->push(reply(400, R"({"__type":"ValidationException"})", date));  // errors carry the time too
  db.call("GetItem", HttpRequest{}, parse_json_error);
  EXPECT_THROW(ec2.call("DescribeInstances", HttpRequest{}, parse_json_error), AwsError);
  EXPECT_EQ(session.clock().samples(), 2u);
  EXPECT_NEAR(static_cast<double>(session.clock().offset().count()), 65'000.0, 1000.0);
  EXPECT_NEAR(static_cast<double>(std::chrono::duration_cast<Duration>(session.clock().now() - clock.now()).count()),
              65'000.0, 1000.0);
}

}  // namespace
}  // namespace runpool::aws
