#include "agent/wake_listener.h"

#include <gtest/gtest.h>

#include <thread>

#include "common/aws/aws_caller.h"
#include "common/aws/credentials.h"
#include "common/json.h"
#include "common/testing/fake_http.h"

namespace runpool::agent {
namespace {

using runpool::testing::FakeHttp;
using namespace std::chrono_literals;

const std::string kUrl = "http://127.0.0.1:4566/000000000000/ci-wake-i-00000001";
const std::string kNoQueue =
    R"({"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."})";

class WakeListenerTest : public ::testing::Test {
 protected:
  WakeListenerTest()
      : creds_(aws::AwsCredentials{"AKIDTEST", Secret("secret"), Secret(), std::nullopt}),
        caller_(http_, creds_, clock_, aws::ServiceSettings{"sqs", "http://127.0.0.1:9", "us-east-1", RetryPolicy{}, 5s}),
        sqs_(caller_),
        wake_(sqs_, "ci-wake-i-00000001") {}

  std::string target(size_t i) const { return http_.header(i, "X-Amz-Target"); }

  FakeHttp http_;
  FakeClock clock_;
  aws::StaticCredentialsProvider creds_;
  aws::AwsCaller caller_;
  aws::SqsClient sqs_;
  WakeListener wake_;
};

TEST_F(WakeListenerTest, LooksItsQueueUpOnceThenLongPollsAndDeletesWakeUps) {
  http_.push(200, R"({"QueueUrl":")" + kUrl + R"("})");
  http_.push(200, R"({"Messages":[{"MessageId":"m1","ReceiptHandle":"r1","Body":"wake"},)"
                  R"({"MessageId":"m2","ReceiptHandle":"r2","Body":"wake"}]})");
  http_.push(200, "{}");
  http_.push(200, "{}");
  EXPECT_FALSE(wake_.active());
  EXPECT_TRUE(wake_.poll_once(20));
  EXPECT_TRUE(wake_.active());
  ASSERT_EQ(http_.count(), 4u);
  EXPECT_EQ(target(0), "AmazonSQS.GetQueueUrl");
  EXPECT_EQ(write_json(http_.body_json(0)), R"({"QueueName":"ci-wake-i-00000001"})");
  EXPECT_EQ(target(1), "AmazonSQS.ReceiveMessage");
  EXPECT_EQ(http_.body_json(1)["WaitTimeSeconds"].asInt(), 20);
  EXPECT_EQ(http_.body_json(1)["QueueUrl"].asString(), kUrl);
  EXPECT_EQ(target(2), "AmazonSQS.DeleteMessage");
  EXPECT_EQ(http_.body_json(3)["ReceiptHandle"].asString(), "r2");

  http_.push(200, "");  // an empty long poll (local-aws-sqs: an empty body)
  EXPECT_FALSE(wake_.poll_once(20));
  EXPECT_EQ(http_.count(), 5u);
  EXPECT_EQ(target(4), "AmazonSQS.ReceiveMessage");  // no second lookup
  EXPECT_TRUE(wake_.active());
}

TEST_F(WakeListenerTest, AMissingQueueIsLookedUpAgainLater) {
  http_.push(200, R"({"QueueUrl":")" + kUrl + R"("})");
  http_.push(400, kNoQueue, {{"x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender"}});
  EXPECT_THROW(wake_.poll_once(1), aws::QueueDoesNotExistError);
  EXPECT_FALSE(wake_.active());
  http_.push(200, R"({"QueueUrl":")" + kUrl + R"("})");
  http_.push(200, "{}");
  EXPECT_FALSE(wake_.poll_once(1));
  EXPECT_EQ(target(2), "AmazonSQS.GetQueueUrl");
  EXPECT_TRUE(wake_.active());
}

// On AWS a queue that runpoolctl has not made yet answers AccessDenied, not QueueDoesNotExist: the
// instance role has no SQS permission, and no queue policy admits it yet. Looked up again later.
TEST_F(WakeListenerTest, AccessDeniedIsAQueueNotThereYet) {
  http_.push(400, R"({"__type":"com.amazon.coral.service#AccessDeniedException","message":"not authorized"})",
             {{"x-amzn-query-error", "AccessDenied;Sender"}});
  EXPECT_THROW(wake_.poll_once(1), aws::AwsError);
  EXPECT_FALSE(wake_.active());
  http_.push(200, R"({"QueueUrl":")" + kUrl + R"("})");
  http_.push(200, "{}");
  EXPECT_FALSE(wake_.poll_once(1));
  EXPECT_EQ(target(1), "AmazonSQS.GetQueueUrl");
  EXPECT_TRUE(wake_.active());
}

TEST_F(WakeListenerTest, AnyOtherFailureMakesItInactiveUntilAPollWorks) {
  http_.push(200, R"({"QueueUrl":")" + kUrl + R"("})");
  http_.push(200, "{}");
  wake_.poll_once(1);
  ASSERT_TRUE(wake_.active());
  http_.push(400, R"({"__type":"com.amazonaws.sqs#InvalidParameterValue","message":"no"})");
  EXPECT_THROW(wake_.poll_once(1), aws::AwsError);
  EXPECT_FALSE(wake_.active());
  http_.push(200, "{}");
  EXPECT_FALSE(wake_.poll_once(1));
  EXPECT_EQ(target(3), "AmazonSQS.ReceiveMessage");  // the URL was kept: only a missing queue forgets it
  EXPECT_TRUE(wake_.active());
}

TEST_F(WakeListenerTest, RunNudgesTheLoopForAWakeUpAndEndsOnStop) {
  StopFlag stop;
  http_.push(200, R"({"QueueUrl":")" + kUrl + R"("})");
  http_.push(200, R"({"Messages":[{"MessageId":"m1","ReceiptHandle":"r1","Body":"wake"}]})");
  http_.push(200, "{}");
  // Every later long poll: the stop is requested while it runs, and it answers empty.
  http_.on([&](const HttpRequest&) {
    stop.request();
    return runpool::testing::reply(200, "{}");
  });
  std::thread t([&] { wake_.run(stop); });
  auto t0 = std::chrono::steady_clock::now();
  stop.wait_or_nudge(30s);  // the wake-up's nudge (or the stop right after it) ends this early
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
  t.join();  // run() returns once the stop is requested
  EXPECT_TRUE(stop.requested());
  EXPECT_GE(http_.count(), 4u);
}

}  // namespace
}  // namespace runpool::agent
