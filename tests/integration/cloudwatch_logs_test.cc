// The CloudWatch Logs client and runpoolctl's Logs sink against the local cloud's stand-in, through
// its SigV4-checking, fault-injecting proxy: groups, streams, PutLogEvents and what it stores,
// the service's errors, retries under injected faults, and EMF events flushed in one batch.
#include "common/aws/cloudwatch_logs.h"

#include <gtest/gtest.h>

#include <chrono>

#include "common/json.h"
#include "common/metrics/logs_sink.h"
#include "tests/support/local_cloud.h"

namespace runpool::aws {
namespace {

using std::chrono::milliseconds;
using testing::LocalCloud;

struct Client {
  explicit Client(LocalCloud& cloud, AwsCredentials creds)
      : creds(std::move(creds)),
        caller(http, this->creds, system_clock(),
               ServiceSettings{"logs", cloud.logs(), cloud.region(), RetryPolicy{10, milliseconds(2), milliseconds(20)},
                               std::chrono::seconds(5)}),
        logs(caller) {}
  explicit Client(LocalCloud& cloud) : Client(cloud, cloud.controller_credentials()) {}
  CurlHttpClient http;
  StaticCredentialsProvider creds;
  AwsCaller caller;
  CloudWatchLogsClient logs;
};

class LogsIntegration : public ::testing::Test {
 protected:
  LogsIntegration() : cloud_(LocalCloud::shared()), client_(cloud_), logs_(client_.logs) {}
  void TearDown() override { cloud_.clear_faults(); }

  // What the stand-in stored for a stream, in time order.
  std::vector<LogEvent> stored(const std::string& group, const std::string& stream) {
    Json::Value doc = cloud_.control("GET", "/_control/logs/events?group=" + group + "&stream=" + stream);
    std::vector<LogEvent> out;
    for (const auto& e : doc["events"]) out.push_back({e["timestamp"].asInt64(), e["message"].asString()});
    return out;
  }
  int64_t now_ms() const { return to_epoch_ms(system_clock().now()); }

  LocalCloud& cloud_;
  Client client_;
  CloudWatchLogsClient& logs_;
};

TEST_F(LogsIntegration, GroupsStreamsAndEventsRoundTrip) {
  EXPECT_TRUE(logs_.create_log_group("it-basic"));
  EXPECT_FALSE(logs_.create_log_group("it-basic"));
  EXPECT_TRUE(logs_.create_log_stream("it-basic", "runpoolctl/ci/host-1"));
  EXPECT_FALSE(logs_.create_log_stream("it-basic", "runpoolctl/ci/host-1"));
  const int64_t t = now_ms();
  RejectedLogEvents r =
      logs_.put_log_events("it-basic", "runpoolctl/ci/host-1", {{t, "second"}, {t - 5, "first"}, {t, "third ü\n"}});
  EXPECT_FALSE(r.any());
  std::vector<LogEvent> want{{t - 5, "first"}, {t, "second"}, {t, "third ü\n"}};
  EXPECT_EQ(stored("it-basic", "runpoolctl%2Fci%2Fhost-1"), want);
}

TEST_F(LogsIntegration, MissingGroupOrStreamIsResourceNotFound) {
  try {
    logs_.create_log_stream("it-no-such-group", "s");
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "ResourceNotFoundException") << e.what();
  }
  ASSERT_TRUE(logs_.create_log_group("it-missing-stream"));
  try {
    logs_.put_log_events("it-missing-stream", "nope", {{now_ms(), "x"}});
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "ResourceNotFoundException") << e.what();
    EXPECT_NE(e.message().find("log stream"), std::string::npos) << e.what();
  }
}

TEST_F(LogsIntegration, EventsTooOldAreReportedNotStored) {
  ASSERT_TRUE(logs_.create_log_group("it-old"));
  ASSERT_TRUE(logs_.create_log_stream("it-old", "s"));
  const int64_t old = now_ms() - 15 * 24 * 3'600'000LL;
  RejectedLogEvents r = logs_.put_log_events("it-old", "s", {{old, "a"}, {old + 1, "b"}});
  EXPECT_EQ(r.too_old_end, 2);
  EXPECT_TRUE(stored("it-old", "s").empty());
}

TEST_F(LogsIntegration, RequestsAreSignedForLogs) {
  AwsCredentials wrong = cloud_.controller_credentials();
  wrong.secret_access_key = Secret("not-the-secret");
  Client bad(cloud_, wrong);
  try {
    bad.logs.create_log_group("it-unsigned");
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "InvalidSignatureException") << e.what();
  }
  EXPECT_TRUE(logs_.create_log_group("it-unsigned")) << "the bad call created nothing";
}

TEST_F(LogsIntegration, InjectedFaultsAreRetriedWithoutDuplicates) {
  ASSERT_TRUE(logs_.create_log_group("it-faults"));
  ASSERT_TRUE(logs_.create_log_stream("it-faults", "s"));
  Json::Value knobs;
  knobs["service"] = "logs";
  knobs["errorRate"] = 0.2;
  knobs["throttleRate"] = 0.1;
  cloud_.control("POST", "/_control/faults", knobs);
  cloud_.control("POST", "/_control/stats/reset");
  // 30 calls of 10 attempts each at a 30% fault rate: all of one call's attempts failing has a
  // chance of 30 × 0.3^10 ≈ 2e-4, no fault at all 0.7^30 ≈ 2e-5.
  constexpr int kCalls = 30;
  const int64_t t = now_ms();
  for (int i = 0; i < kCalls; ++i) logs_.put_log_events("it-faults", "s", {{t + i, "event " + std::to_string(i)}});
  cloud_.clear_faults();
  // A fault is answered before the stand-in sees the call: each event is stored exactly once.
  std::vector<LogEvent> got = stored("it-faults", "s");
  ASSERT_EQ(got.size(), static_cast<size_t>(kCalls));
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(got[i].message, "event " + std::to_string(i));
  Json::Value stats = cloud_.control("GET", "/_control/stats")["logs"]["PutLogEvents"];
  const int64_t faults = stats["errors"].asInt64() + stats["throttles"].asInt64();
  EXPECT_GE(faults, 1);
  EXPECT_EQ(stats["requests"].asInt64(), kCalls + faults) << "every fault retried once more, nothing else";
}

TEST_F(LogsIntegration, TheMetricsSinkSendsItsEventsInOneBatch) {
  ASSERT_TRUE(logs_.create_log_group("it-metrics"));
  metrics::CloudWatchLogsSink sink(logs_, "it-metrics", metrics::log_stream_name("runpoolctl/ci/host:1"));
  const int64_t t = now_ms();
  for (int i = 0; i < 3; ++i) {
    metrics::Event e;
    e.ns = "runpool";
    e.timestamp_ms = t + i;
    e.dimension("Pool", "ci").add("WarmClaims", i);
    sink.emit(e);
  }
  cloud_.control("POST", "/_control/stats/reset");
  sink.flush();
  sink.flush();  // nothing left: nothing sent
  Json::Value stats = cloud_.control("GET", "/_control/stats")["logs"];
  EXPECT_EQ(stats["CreateLogStream"]["requests"].asInt64(), 1);
  EXPECT_EQ(stats["PutLogEvents"]["requests"].asInt64(), 1);
  std::vector<LogEvent> got = stored("it-metrics", "runpoolctl%2Fci%2Fhost_1");
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i].timestamp_ms, t + i);
    Json::Value v = parse_json(got[i].message, "EMF event");
    EXPECT_EQ(v["WarmClaims"], i);
    EXPECT_EQ(v["_aws"]["CloudWatchMetrics"][0]["Namespace"], "runpool");
  }

  // A second command run: the stream exists, which is fine.
  metrics::Event e;
  e.ns = "runpool";
  e.timestamp_ms = t + 10;
  e.dimension("Pool", "ci").add("ColdLaunches", 1);
  sink.emit(e);
  sink.flush();
  EXPECT_EQ(stored("it-metrics", "runpoolctl%2Fci%2Fhost_1").size(), 4u);
}

}  // namespace
}  // namespace runpool::aws
