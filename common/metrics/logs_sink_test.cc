#include "common/metrics/logs_sink.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/metrics/testing.h"
#include "common/testing/fake_http.h"

namespace runpool::metrics {
namespace {

using runpool::testing::FakeHttp;

Event logs_event(const std::string& metric, int64_t ts, const std::string& note = "") {
  Event e;
  e.ns = "runpool";
  e.timestamp_ms = ts;
  e.dimension("Pool", "ci").add(metric, 1);
  if (!note.empty()) e.property("Note", note);
  return e;
}

class LogsSinkTest : public ::testing::Test {
 protected:
  LogsSinkTest()
      : creds_(aws::AwsCredentials{"AKIDTEST", Secret("secret"), Secret(), std::nullopt}),
        caller_(http_, creds_, clock_,
                aws::ServiceSettings{"logs", "http://127.0.0.1:9", "us-east-1", RetryPolicy{2}}),
        client_(caller_),
        sink_(client_, "/runpool/metrics", "runpoolctl/ci/host") {}

  std::string target(size_t i) { return http_.header(i, "X-Amz-Target"); }

  FakeHttp http_;
  FakeClock clock_;
  aws::StaticCredentialsProvider creds_;
  aws::AwsCaller caller_;
  aws::CloudWatchLogsClient client_;
  CloudWatchLogsSink sink_;
};

TEST_F(LogsSinkTest, BuffersUntilFlushThenSendsOneBatch) {
  sink_.emit(logs_event("A", 2000));
  sink_.emit(logs_event("B", 1000));
  EXPECT_EQ(http_.count(), 0u);
  EXPECT_EQ(sink_.buffered(), 2u);
  http_.push(200, "{}");
  http_.push(200, "{}");
  sink_.flush();
  ASSERT_EQ(http_.count(), 2u);
  EXPECT_EQ(target(0), "Logs_20140328.CreateLogStream");
  EXPECT_EQ(target(1), "Logs_20140328.PutLogEvents");
  Json::Value body = http_.body_json(1);
  EXPECT_EQ(body["logGroupName"], "/runpool/metrics");
  EXPECT_EQ(body["logStreamName"], "runpoolctl/ci/host");
  ASSERT_EQ(body["logEvents"].size(), 2u);
  EXPECT_EQ(body["logEvents"][0]["timestamp"].asInt64(), 1000);
  EXPECT_EQ(body["logEvents"][0]["message"], format_emf(logs_event("B", 1000)));
  EXPECT_EQ(body["logEvents"][1]["message"], format_emf(logs_event("A", 2000)));
  EXPECT_EQ(sink_.buffered(), 0u);

  sink_.flush();  // nothing buffered: nothing sent
  EXPECT_EQ(http_.count(), 2u);
}

TEST_F(LogsSinkTest, AnExistingStreamIsFine) {
  sink_.emit(logs_event("A", 1000));
  http_.push(400, R"({"__type":"ResourceAlreadyExistsException","message":"exists"})");
  http_.push(200, "{}");
  testing::CapturedLog log;
  sink_.flush();
  EXPECT_EQ(http_.count(), 2u);
  EXPECT_EQ(log.text().find("metrics:"), std::string::npos) << log.text();
}

TEST_F(LogsSinkTest, FailuresAreWarningsAndCostOnlyTheBatch) {
  testing::CapturedLog log;
  sink_.emit(logs_event("A", 1000));
  // CreateLogStream not allowed, but the stream exists: the events still go.
  http_.push(400, R"({"__type":"AccessDeniedException","message":"not authorized"})");
  http_.push(200, "{}");
  EXPECT_NO_THROW(sink_.flush());
  EXPECT_EQ(target(1), "Logs_20140328.PutLogEvents");
  EXPECT_NE(log.text().find("could not create log stream"), std::string::npos) << log.text();

  // The group is missing: a warning, the batch is gone, the next flush sends only new events.
  sink_.emit(logs_event("B", 1000));
  http_.push(400, R"({"__type":"ResourceNotFoundException","message":"The specified log group does not exist."})");
  http_.push(400, R"({"__type":"ResourceNotFoundException","message":"The specified log group does not exist."})");
  EXPECT_NO_THROW(sink_.flush());
  EXPECT_NE(log.text().find("1 event(s) not sent to /runpool/metrics"), std::string::npos) << log.text();
  EXPECT_EQ(sink_.buffered(), 0u);

  // Unreachable (every attempt fails): still only a warning.
  http_.on(FakeHttp::refused());
  sink_.emit(logs_event("C", 1000));
  EXPECT_NO_THROW(sink_.flush());
  EXPECT_NE(log.text().find("Connection refused"), std::string::npos) << log.text();

  // Rejected as too old: a warning.
  http_.on(nullptr);
  sink_.emit(logs_event("D", 1000));
  http_.push(200, "{}");
  http_.push(200, R"({"rejectedLogEventsInfo":{"tooOldLogEventEndIndex":1}})");
  sink_.flush();
  EXPECT_NE(log.text().find("rejected some of the 1 event(s)"), std::string::npos) << log.text();
}

TEST_F(LogsSinkTest, AnEventTooLargeForTheBatchIsDropped) {
  testing::CapturedLog log;
  sink_.emit(logs_event("Big", 1000, std::string(aws::kMaxLogEventBytes, 'x')));
  EXPECT_EQ(sink_.buffered(), 0u);
  EXPECT_NE(log.text().find("dropped"), std::string::npos);
  // Up to the batch's byte limit, then dropped.
  const std::string note(200'000, 'y');
  for (int i = 0; i < 6; ++i) sink_.emit(logs_event("M" + std::to_string(i), 1000, note));
  EXPECT_EQ(sink_.buffered(), 5u);
}

TEST(LogStreamName, ReplacesWhatIsNotAllowed) {
  EXPECT_EQ(log_stream_name("runpoolctl/ci/host:1*x"), "runpoolctl/ci/host_1_x");
  EXPECT_EQ(log_stream_name(""), "_");
  EXPECT_EQ(log_stream_name(std::string(600, 'a')).size(), 512u);
}

}  // namespace
}  // namespace runpool::metrics
