#include "common/aws/sqs.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/testing/expect_malformed.h"
#include "common/testing/fake_http.h"

namespace runpool::aws {
namespace {

using runpool::testing::FakeHttp;

const std::string kUrl = "http://127.0.0.1:4566/000000000000/pool-small";

class SqsTest : public ::testing::Test {
 protected:
  explicit SqsTest(Duration timeout = std::chrono::seconds(5))
      : creds_(AwsCredentials{"AKIDTEST", Secret("secret"), Secret(), std::nullopt}),
        caller_(http_, creds_, clock_,
                ServiceSettings{"sqs", "http://127.0.0.1:9", "us-east-1", RetryPolicy{}, timeout}),
        sqs_(caller_) {}

  FakeHttp http_;
  FakeClock clock_;
  StaticCredentialsProvider creds_;
  AwsCaller caller_;
  SqsClient sqs_;
};

TEST_F(SqsTest, CreateQueueRequestShape) {
  http_.push(200, R"({"QueueUrl":")" + kUrl + R"("})");
  EXPECT_EQ(sqs_.create_queue("pool-small", {{"VisibilityTimeout", "30"}, {"ReceiveMessageWaitTimeSeconds", "20"}}),
            kUrl);
  HttpRequest r = http_.request(0);
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, "http://127.0.0.1:9/");  // the endpoint, never the queue URL's host
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "AmazonSQS.CreateQueue");
  EXPECT_EQ(http_.header(0, "Content-Type"), "application/x-amz-json-1.0");
  ASSERT_TRUE(r.sigv4);
  EXPECT_EQ(r.sigv4->service, "sqs");
  EXPECT_EQ(r.timeout, std::chrono::seconds(5));
  EXPECT_EQ(
      write_json(http_.body_json(0)),
      R"({"Attributes":{"ReceiveMessageWaitTimeSeconds":"20","VisibilityTimeout":"30"},"QueueName":"pool-small"})");

  http_.push(200, R"({"QueueUrl":")" + kUrl + R"("})");
  sqs_.create_queue("pool-small");
  EXPECT_EQ(write_json(http_.body_json(1)), R"({"QueueName":"pool-small"})");
}

TEST_F(SqsTest, QueueDoesNotExistInTheJsonForm) {
  // What SQS (and local-aws-sqs) send: __type plus the query-compatible header.
  http_.push(400,
             R"({"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."})",
             {{"x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender"}});
  try {
    sqs_.get_queue_url("nope");
    ADD_FAILURE();
  } catch (const QueueDoesNotExistError& e) {
    EXPECT_EQ(e.code(), "QueueDoesNotExist");
    EXPECT_EQ(e.operation(), "GetQueueUrl");
    EXPECT_EQ(e.message(), "The specified queue does not exist.");
  }
  EXPECT_EQ(write_json(http_.body_json(0)), R"({"QueueName":"nope"})");
  EXPECT_EQ(http_.count(), 1u);  // not retried
}

TEST_F(SqsTest, QueueDoesNotExistInTheHeaderOnlyForm) {
  http_.push(400, "", {{"x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender"}});
  try {
    sqs_.send_message(kUrl, "hello");
    ADD_FAILURE();
  } catch (const QueueDoesNotExistError& e) {
    EXPECT_EQ(e.code(), "AWS.SimpleQueueService.NonExistentQueue");
  }
  http_.push(400, "{}", {{"x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender"}});
  EXPECT_THROW(sqs_.receive_messages({kUrl}), QueueDoesNotExistError);
  EXPECT_EQ(http_.count(), 2u);
}

TEST_F(SqsTest, OtherErrorsStayPlainAwsErrors) {
  http_.push(400,
             R"({"__type":"com.amazonaws.sqs#QueueNameExists","message":"already exists with different attributes"})",
             {{"x-amzn-query-error", "QueueAlreadyExists;Sender"}});
  try {
    sqs_.create_queue("pool-small", {{"VisibilityTimeout", "31"}});
    ADD_FAILURE();
  } catch (const QueueDoesNotExistError&) {
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "QueueNameExists");
  }
  EXPECT_FALSE(is_queue_does_not_exist("QueueNameExists"));
}

TEST_F(SqsTest, ThrottlingAndServerErrorsAreRetried) {
  http_.push(403, R"({"__type":"com.amazonaws.sqs#RequestThrottled","message":"Rate exceeded"})",
             {{"x-amzn-query-error", "RequestThrottled;Sender"}});
  http_.push(500, R"({"__type":"com.amazon.coral.service#InternalFailure","message":"x"})");
  http_.push(503, "<html>busy</html>");
  http_.push(200, R"({"MessageId":"m-1","MD5OfMessageBody":"x"})");
  EXPECT_EQ(sqs_.send_message(kUrl, "hello"), "m-1");
  EXPECT_EQ(http_.count(), 4u);
}

TEST_F(SqsTest, SendMessageRequestShape) {
  http_.push(200, R"({"MessageId":"m-1"})");
  SendMessageRequest s;
  s.queue_url = kUrl;
  s.body = R"({"instance":"i-1"})";
  s.delay_seconds = 3;
  s.attributes = {{"gen", {"Number", "4", ""}}, {"blob", {"Binary", "", "AAE="}}};
  EXPECT_EQ(sqs_.send_message(s), "m-1");
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "AmazonSQS.SendMessage");
  EXPECT_EQ(write_json(http_.body_json(0)),
            R"({"DelaySeconds":3,"MessageAttributes":{"blob":{"BinaryValue":"AAE=","DataType":"Binary"},)"
            R"("gen":{"DataType":"Number","StringValue":"4"}},"MessageBody":"{\"instance\":\"i-1\"}",)"
            R"("QueueUrl":")" +
                kUrl + R"("})");
  s.delay_seconds = 901;
  EXPECT_THROW(sqs_.send_message(s), std::invalid_argument);
  EXPECT_EQ(http_.count(), 1u);
}

TEST_F(SqsTest, ReceiveMessageRequestShapeAndParsing) {
  http_.push(200, R"({"Messages":[
    {"MessageId":"m-1","ReceiptHandle":"rh-1","MD5OfBody":"x","Body":"one",
     "Attributes":{"ApproximateReceiveCount":"2","SentTimestamp":"1700000000123","ApproximateFirstReceiveTimestamp":""},
     "MessageAttributes":{"gen":{"DataType":"Number","StringValue":"4"}}},
    {"MessageId":"m-2","ReceiptHandle":"rh-2","Body":""}]})");
  ReceiveRequest r;
  r.queue_url = kUrl;
  r.max_messages = 10;
  r.wait_seconds = 20;
  r.visibility_timeout = 60;
  r.system_attributes = {"ApproximateReceiveCount", "SentTimestamp"};
  r.message_attributes = {"All"};
  std::vector<Message> msgs = sqs_.receive_messages(r);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].message_id, "m-1");
  EXPECT_EQ(msgs[0].receipt_handle, "rh-1");
  EXPECT_EQ(msgs[0].body, "one");
  EXPECT_EQ(msgs[0].receive_count(), 2);
  EXPECT_EQ(msgs[0].sent_time(), from_epoch_ms(1700000000123));
  EXPECT_EQ(msgs[0].attributes.at("ApproximateFirstReceiveTimestamp"), "");
  EXPECT_EQ(msgs[0].message_attributes.at("gen"), (MessageAttribute{"Number", "4", ""}));
  EXPECT_EQ(msgs[1].body, "");
  EXPECT_EQ(msgs[1].receive_count(), std::nullopt);
  EXPECT_EQ(msgs[1].sent_time(), std::nullopt);

  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "AmazonSQS.ReceiveMessage");
  EXPECT_EQ(
      write_json(http_.body_json(0)),
      R"({"AttributeNames":["ApproximateReceiveCount","SentTimestamp"],"MaxNumberOfMessages":10,)"
      R"("MessageAttributeNames":["All"],"MessageSystemAttributeNames":["ApproximateReceiveCount","SentTimestamp"],)"
      R"("QueueUrl":")" +
          kUrl + R"(","VisibilityTimeout":60,"WaitTimeSeconds":20})");
  // The long poll's HTTP timeout outlasts the 20 s wait although the service's is 5 s.
  EXPECT_EQ(http_.request(0).timeout, std::chrono::seconds(30));
}

TEST_F(SqsTest, ReceiveTimeoutCoversTheQueueDefaultWaitAndOnlyThatCall) {
  http_.push(200, "");
  http_.push(200, R"({"Messages":[]})");
  http_.push(200, "{}");
  EXPECT_TRUE(sqs_.receive_messages({kUrl}).empty());  // empty body: local-aws-sqs's empty answer
  ReceiveRequest shortpoll{kUrl};
  shortpoll.wait_seconds = 0;
  EXPECT_TRUE(sqs_.receive_messages(shortpoll).empty());
  sqs_.delete_queue(kUrl);
  EXPECT_EQ(http_.request(0).timeout, std::chrono::seconds(30));  // no explicit wait: up to 20 s
  EXPECT_FALSE(http_.body_json(0).isMember("WaitTimeSeconds"));
  EXPECT_EQ(write_json(http_.body_json(0)), R"({"MaxNumberOfMessages":1,"QueueUrl":")" + kUrl + R"("})");
  EXPECT_EQ(http_.request(1).timeout, std::chrono::seconds(10));
  EXPECT_EQ(http_.request(2).timeout, std::chrono::seconds(5));  // other calls keep the service's
}

class SqsLongTimeoutTest : public SqsTest {
 protected:
  SqsLongTimeoutTest() : SqsTest(std::chrono::seconds(60)) {}
};

TEST_F(SqsLongTimeoutTest, ALongerServiceTimeoutIsKept) {
  http_.push(200, "");
  ReceiveRequest r{kUrl};
  r.wait_seconds = 1;
  sqs_.receive_messages(r);
  EXPECT_EQ(http_.request(0).timeout, std::chrono::seconds(60));
}

TEST_F(SqsTest, ReceiveArgumentsAreChecked) {
  ReceiveRequest r{kUrl};
  r.max_messages = 0;
  EXPECT_THROW(sqs_.receive_messages(r), std::invalid_argument);
  r.max_messages = 11;
  EXPECT_THROW(sqs_.receive_messages(r), std::invalid_argument);
  r.max_messages = 1;
  r.wait_seconds = 21;
  EXPECT_THROW(sqs_.receive_messages(r), std::invalid_argument);
  r.wait_seconds = -1;
  EXPECT_THROW(sqs_.receive_messages(r), std::invalid_argument);
  EXPECT_THROW(sqs_.change_message_visibility(kUrl, "rh", -1), std::invalid_argument);
  EXPECT_THROW(sqs_.change_message_visibility(kUrl, "rh", 43201), std::invalid_argument);
  EXPECT_EQ(http_.count(), 0u);
}

TEST_F(SqsTest, DeleteAndVisibilityRequestShapes) {
  http_.push(200, "{}");
  http_.push(200, "");
  sqs_.delete_message(kUrl, "rh-1");
  sqs_.change_message_visibility(kUrl, "rh-1", 0);
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "AmazonSQS.DeleteMessage");
  EXPECT_EQ(write_json(http_.body_json(0)), R"({"QueueUrl":")" + kUrl + R"(","ReceiptHandle":"rh-1"})");
  EXPECT_EQ(http_.header(1, "X-Amz-Target"), "AmazonSQS.ChangeMessageVisibility");
  EXPECT_EQ(write_json(http_.body_json(1)),
            R"({"QueueUrl":")" + kUrl + R"(","ReceiptHandle":"rh-1","VisibilityTimeout":0})");
}

TEST_F(SqsTest, DeleteMessageBatchSendsOneRequestAndReturnsTheFailedEntries) {
  http_.push(200, R"({"Successful":[{"Id":"0"}],"Failed":[{"Id":"1","SenderFault":true,"Code":"ReceiptHandleIsInvalid","Message":"x"}]})");
  auto failed = sqs_.delete_message_batch(kUrl, {"rh-a", "rh-b"});
  ASSERT_EQ(http_.count(), 1u);
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "AmazonSQS.DeleteMessageBatch");
  EXPECT_EQ(write_json(http_.body_json(0)), R"({"Entries":[{"Id":"0","ReceiptHandle":"rh-a"},{"Id":"1","ReceiptHandle":"rh-b"}],"QueueUrl":")" + kUrl + R"("})");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0], (std::pair<std::string, std::string>{"rh-b", "ReceiptHandleIsInvalid"}));

  EXPECT_TRUE(sqs_.delete_message_batch(kUrl, {}).empty()) << "nothing to delete: no request";
  EXPECT_EQ(http_.count(), 1u);
  EXPECT_THROW(sqs_.delete_message_batch(kUrl, std::vector<std::string>(11, "rh")), std::invalid_argument);
  http_.push(200, R"({"Failed":[{"Id":"7","Code":"X"}]})");
  EXPECT_THROW(sqs_.delete_message_batch(kUrl, {"rh-a"}), std::exception) << "a failure naming no entry sent";
}

TEST_F(SqsTest, ListQueuesFollowsNextToken) {
  http_.push(200, R"({"QueueUrls":["u1","u2"],"NextToken":"t1"})");
  http_.push(200, R"({"QueueUrls":["u3"]})");
  EXPECT_EQ(sqs_.list_queues("ci-wake-"), (std::vector<std::string>{"u1", "u2", "u3"}));
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "AmazonSQS.ListQueues");
  EXPECT_EQ(write_json(http_.body_json(0)), R"({"MaxResults":1000,"QueueNamePrefix":"ci-wake-"})");
  EXPECT_EQ(write_json(http_.body_json(1)), R"({"MaxResults":1000,"NextToken":"t1","QueueNamePrefix":"ci-wake-"})");
  // No queue at all: SQS leaves QueueUrls out (local-aws-sqs may answer an empty body).
  http_.push(200, "{}");
  EXPECT_TRUE(sqs_.list_queues("none-").empty());
}

TEST_F(SqsTest, ListQueuesIsBoundedAndChecksItsAnswer) {
  for (int i = 0; i < 3; ++i) http_.push(200, R"({"QueueUrls":["u"],"NextToken":"more"})");
  try {
    sqs_.list_queues("p-", 3);
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "TooManyPages");
  }
  http_.push(200, R"({"QueueUrls":"u"})");
  EXPECT_THROW(sqs_.list_queues("p-"), AwsError);
  http_.push(200, R"({"QueueUrls":[1]})");
  EXPECT_THROW(sqs_.list_queues("p-"), AwsError);
}

TEST_F(SqsTest, QueueAttributesAreTyped) {
  http_.push(200, R"({"Attributes":{"ApproximateNumberOfMessages":"3","ApproximateNumberOfMessagesNotVisible":"1",
    "ApproximateNumberOfMessagesDelayed":"0","VisibilityTimeout":"30","MessageRetentionPeriod":"345600",
    "ReceiveMessageWaitTimeSeconds":"20","DelaySeconds":"0","QueueArn":"arn:aws:sqs:us-east-1:000000000000:pool-small",
    "SqsManagedSseEnabled":"true"}})");
  QueueAttributes a = sqs_.get_queue_attributes(kUrl);
  EXPECT_EQ(write_json(http_.body_json(0)), R"({"AttributeNames":["All"],"QueueUrl":")" + kUrl + R"("})");
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "AmazonSQS.GetQueueAttributes");
  EXPECT_EQ(a.approximate_number_of_messages, 3);
  EXPECT_EQ(a.approximate_number_of_messages_not_visible, 1);
  EXPECT_EQ(a.approximate_number_of_messages_delayed, 0);
  EXPECT_EQ(a.visibility_timeout, 30);
  EXPECT_EQ(a.message_retention_period, 345600);
  EXPECT_EQ(a.receive_message_wait_time_seconds, 20);
  EXPECT_EQ(a.delay_seconds, 0);
  EXPECT_EQ(a.queue_arn, "arn:aws:sqs:us-east-1:000000000000:pool-small");
  EXPECT_EQ(a.all.at("SqsManagedSseEnabled"), "true");
  EXPECT_THROW(a.get_int("SqsManagedSseEnabled"), JsonError);
  EXPECT_EQ(a.get_int("Nope"), std::nullopt);

  http_.push(200, "{}");  // nothing matched
  QueueAttributes none = sqs_.get_queue_attributes(kUrl, {"ApproximateNumberOfMessages"});
  EXPECT_TRUE(none.all.empty());
  EXPECT_EQ(none.approximate_number_of_messages, std::nullopt);
  EXPECT_EQ(write_json(http_.body_json(1)["AttributeNames"]), R"(["ApproximateNumberOfMessages"])");
}

TEST_F(SqsTest, MalformedAnswersAreClearErrors) {
  using Case = runpool::testing::MalformedCase<SqsClient>;
  auto receive = [](SqsClient& s) { s.receive_messages({kUrl}); };
  auto url = [](SqsClient& s) { s.get_queue_url("q"); };
  auto attrs = [](SqsClient& s) { s.get_queue_attributes(kUrl); };
  auto send = [](SqsClient& s) { s.send_message(kUrl, "b"); };
  const std::vector<Case> cases = {
      {receive, "{", "malformed JSON"},
      {receive, R"({"Messages":[{"MessageId":"m","ReceiptHandle":"r","Body":"b"})", "malformed JSON"},  // truncated
      {receive, "null", "expected a JSON object"},
      {receive, R"({"Messages":{}})", "'Messages' is not an array"},
      {receive, R"({"Messages":[5]})", "Messages[0]"},
      {receive, R"({"Messages":[{"MessageId":"m","Body":"b"}]})", "'ReceiptHandle' missing"},
      {receive, R"({"Messages":[{"MessageId":"m","ReceiptHandle":"r","Body":7}]})", "'Body' is not a string"},
      {receive, R"({"Messages":[{"MessageId":"m","ReceiptHandle":"r","Body":"b","Attributes":[]}]})", "Attributes"},
      {receive, R"({"Messages":[{"MessageId":"m","ReceiptHandle":"r","Body":"b","Attributes":{"SentTimestamp":1}}]})",
       "'SentTimestamp' is not a string"},
      {receive, R"({"Messages":[{"MessageId":"m","ReceiptHandle":"r","Body":"b","MessageAttributes":{"a":{}}}]})",
       "'DataType' missing"},
      {url, "{}", "'QueueUrl' missing"},
      {url, R"({"QueueUrl":1})", "'QueueUrl' is not a string"},
      {send, "[]", "expected a JSON object"},
      {send, R"({"MessageId":null})", "'MessageId' is not a string"},
      {attrs, R"({"Attributes":"x"})", "expected a JSON object"},
      {attrs, R"({"Attributes":{"ApproximateNumberOfMessages":"lots"}})",
       "'ApproximateNumberOfMessages' is not an integer"},
      {attrs, R"({"Attributes":{"VisibilityTimeout":"30s"}})", "'VisibilityTimeout' is not an integer"},
  };
  runpool::testing::expect_malformed_answers(http_, sqs_, "sqs", cases);
}

TEST_F(SqsTest, ErrorParserReadsBothForms) {
  HttpResponse json{400, {}, R"({"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"m"})"};
  EXPECT_EQ(parse_sqs_error(json).code, "QueueDoesNotExist");
  EXPECT_EQ(parse_sqs_error(json).message, "m");
  HttpResponse header_only{400, {{"x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender"}}, ""};
  EXPECT_EQ(parse_sqs_error(header_only).code, "AWS.SimpleQueueService.NonExistentQueue");
  HttpResponse no_sender{400, {{"x-amzn-query-error", "InvalidParameterValue"}}, "garbage"};
  EXPECT_EQ(parse_sqs_error(no_sender).code, "InvalidParameterValue");
  HttpResponse nothing{400, {}, ""};
  EXPECT_EQ(parse_sqs_error(nothing).code, "");
  EXPECT_TRUE(is_queue_does_not_exist("QueueDoesNotExist"));
  EXPECT_TRUE(is_queue_does_not_exist("AWS.SimpleQueueService.NonExistentQueue"));
}

}  // namespace
}  // namespace runpool::aws
