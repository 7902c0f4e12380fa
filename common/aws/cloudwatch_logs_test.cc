#include "common/aws/cloudwatch_logs.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/testing/expect_malformed.h"
#include "common/testing/fake_http.h"

namespace runpool::aws {
namespace {

using runpool::testing::expect_malformed;
using runpool::testing::FakeHttp;

std::string logs_error(const std::string& type, const std::string& message = "msg") {
  return R"({"__type":")" + type + R"(","message":")" + message + R"("})";
}

class LogsTest : public ::testing::Test {
 protected:
  LogsTest()
      : creds_(AwsCredentials{"AKIDTEST", Secret("secret"), Secret(), std::nullopt}),
        caller_(http_, creds_, clock_, ServiceSettings{"logs", "http://127.0.0.1:9", "us-east-1", RetryPolicy{}}),
        logs_(caller_) {}

  FakeHttp http_;
  FakeClock clock_;
  StaticCredentialsProvider creds_;
  AwsCaller caller_;
  CloudWatchLogsClient logs_;
};

TEST_F(LogsTest, CreateLogStreamRequestShape) {
  http_.push(200, "");
  EXPECT_TRUE(logs_.create_log_stream("/runpool/metrics", "runpoolctl/ci/host-1"));
  HttpRequest r = http_.request(0);
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, "http://127.0.0.1:9/");
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "Logs_20140328.CreateLogStream");
  EXPECT_EQ(http_.header(0, "Content-Type"), "application/x-amz-json-1.1");
  ASSERT_TRUE(r.sigv4);
  EXPECT_EQ(r.sigv4->service, "logs");
  EXPECT_EQ(write_json(http_.body_json(0)),
            R"({"logGroupName":"/runpool/metrics","logStreamName":"runpoolctl/ci/host-1"})");
}

TEST_F(LogsTest, AnExistingGroupOrStreamIsAnAnswer) {
  http_.push(400, logs_error("ResourceAlreadyExistsException", "The specified log stream already exists"));
  EXPECT_FALSE(logs_.create_log_stream("g", "s"));
  http_.push(400, logs_error("ResourceAlreadyExistsException"));
  EXPECT_FALSE(logs_.create_log_group("g"));
  http_.push(200, "{}");
  EXPECT_TRUE(logs_.create_log_group("g"));
  EXPECT_EQ(http_.header(2, "X-Amz-Target"), "Logs_20140328.CreateLogGroup");
  EXPECT_EQ(write_json(http_.body_json(2)), R"({"logGroupName":"g"})");
  EXPECT_EQ(http_.count(), 3u);  // answers, not retried
}

TEST_F(LogsTest, AMissingGroupIsAnError) {
  http_.push(400, logs_error("ResourceNotFoundException", "The specified log group does not exist."));
  try {
    logs_.create_log_stream("nope", "s");
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "ResourceNotFoundException");
    EXPECT_EQ(e.status(), 400);
  }
}

TEST_F(LogsTest, PutLogEventsSortsByTimeAndSendsEveryEvent) {
  http_.push(200, R"({"nextSequenceToken":"4958"})");
  auto r = logs_.put_log_events("g", "s", {{2000, "two"}, {1000, "one"}, {2000, "three"}});
  EXPECT_FALSE(r.any());
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "Logs_20140328.PutLogEvents");
  EXPECT_EQ(write_json(http_.body_json(0)),
            R"({"logEvents":[{"message":"one","timestamp":1000},{"message":"two","timestamp":2000},)"
            R"({"message":"three","timestamp":2000}],"logGroupName":"g","logStreamName":"s"})");
}

TEST_F(LogsTest, PutLogEventsReadsRejectedEvents) {
  http_.push(200, R"({"rejectedLogEventsInfo":{"tooOldLogEventEndIndex":1,"tooNewLogEventStartIndex":2}})");
  auto r = logs_.put_log_events("g", "s", {{1, "a"}, {2, "b"}, {3, "c"}});
  EXPECT_TRUE(r.any());
  EXPECT_EQ(r.too_old_end, 1);
  EXPECT_EQ(r.too_new_start, 2);
  EXPECT_FALSE(r.expired_end);

  expect_malformed([&] {
    http_.push(200, R"({"rejectedLogEventsInfo":{"tooOldLogEventEndIndex":"x"}})");
    logs_.put_log_events("g", "s", {{1, "a"}});
  }, "logs", "tooOldLogEventEndIndex");
  expect_malformed([&] {
    http_.push(200, "not json");
    logs_.put_log_events("g", "s", {{1, "a"}});
  }, "logs", "PutLogEvents");
}

TEST_F(LogsTest, ABatchBreakingALimitIsNeverSent) {
  auto rejects = [&](std::vector<LogEvent> events, const std::string& part) {
    try {
      logs_.put_log_events("g", "s", std::move(events));
      ADD_FAILURE() << "sent a batch that should fail on " << part;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  rejects({}, "at least one");
  rejects({{1, ""}}, "must not be empty");
  rejects({{1, std::string(kMaxLogEventBytes + 1, 'x')}}, "256 KiB");
  rejects({{0, "a"}, {kMaxLogBatchSpanMs + 1, "b"}}, "24 hours");
  rejects(std::vector<LogEvent>(kMaxLogEventsPerBatch + 1, LogEvent{1, "x"}), "10,000");
  rejects(std::vector<LogEvent>(5, LogEvent{1, std::string(kMaxLogEventBytes, 'x')}), "1,048,576");
  EXPECT_EQ(http_.count(), 0u);

  http_.push(200, "{}");
  logs_.put_log_events("g", "s", {{0, "a"}, {kMaxLogBatchSpanMs, "b"}});  // exactly 24 h is fine
  EXPECT_EQ(http_.count(), 1u);
}

TEST_F(LogsTest, NamesAreCheckedBeforeSending) {
  EXPECT_EQ(log_group_name_problem("/runpool/metrics-1_a.b#c"), "");
  EXPECT_NE(log_group_name_problem(""), "");
  EXPECT_NE(log_group_name_problem("has space"), "");
  EXPECT_NE(log_group_name_problem(std::string(513, 'g')), "");
  EXPECT_EQ(log_stream_name_problem("runpoolctl/ci/fv-az1 (x)"), "");
  EXPECT_NE(log_stream_name_problem("a:b"), "");
  EXPECT_NE(log_stream_name_problem("a*b"), "");
  EXPECT_NE(log_stream_name_problem(""), "");
  EXPECT_THROW(logs_.create_log_stream("g g", "s"), std::invalid_argument);
  EXPECT_THROW(logs_.put_log_events("g", "s:1", {{1, "a"}}), std::invalid_argument);
  EXPECT_EQ(http_.count(), 0u);
}

}  // namespace
}  // namespace runpool::aws
