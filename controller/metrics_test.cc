// The commands emit their events through ctx.metrics (against the in-memory fakes), and
// CommandMetrics wires the sinks the settings ask for.
#include "controller/metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/json.h"
#include "common/testing/fake_http.h"
#include "common/metrics/testing.h"
#include "controller/provision.h"
#include "controller/refresh.h"
#include "controller/release.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using metrics::testing::CollectingSink;
using metrics::testing::dimension_of;
using metrics::testing::values_of;
using testing::World;

struct Metered {
  World w;
  CollectingSink sink;
  Context ctx{w.settings, w.clock, w.table, w.queue, w.compute, w.github, w.out, w.cancelled, sink};
};

TEST(CommandMetrics, ProvisionReportsWarmClaimsColdLaunchesAndLatencies) {
  Metered m;
  m.w.add_idle("i-00000000000000aa1");
  ASSERT_EQ(run_provision(m.ctx, testing::provision_options(3)), kExitOk) << m.w.out.str();
  ASSERT_EQ(m.sink.events.size(), 1u);
  const metrics::Event& e = m.sink.events[0];
  EXPECT_EQ(e.ns, "runpool");
  EXPECT_EQ(e.timestamp_ms, m.w.now());
  EXPECT_EQ(dimension_of(e, "ResourceClass"), "small");
  EXPECT_EQ(values_of(e, "WarmClaims"), std::vector<double>{1});
  EXPECT_EQ(values_of(e, "ColdLaunches"), std::vector<double>{2});
  EXPECT_EQ(values_of(e, "ProvisionFailures"), std::vector<double>{0});
  ASSERT_EQ(values_of(e, "ProvisionLatency").size(), 1u);
  EXPECT_GT(values_of(e, "ProvisionLatency")[0], 0);
  EXPECT_EQ(values_of(e, "WarmReadyLatency").size(), 1u);
  EXPECT_EQ(values_of(e, "ColdReadyLatency").size(), 2u);
}

TEST(CommandMetrics, AFailedProvisionIsCounted) {
  Metered m;
  m.w.agents.register_ok = false;
  m.w.settings.provision_timeout = std::chrono::seconds(5);
  ASSERT_EQ(run_provision(m.ctx, testing::provision_options(1)), kExitFailed);
  ASSERT_EQ(m.sink.events.size(), 1u);
  EXPECT_EQ(values_of(m.sink.events[0], "ProvisionFailures"), std::vector<double>{1});
  EXPECT_TRUE(values_of(m.sink.events[0], "ProvisionLatency").empty());
}

TEST(CommandMetrics, ReleaseReportsDrainedAndStragglers) {
  Metered m;
  ASSERT_EQ(run_provision(m.ctx, testing::provision_options(2)), kExitOk);
  m.sink.events.clear();
  ASSERT_EQ(run_release(m.ctx, {"ci-1-1-build", true, std::nullopt, false, {}}), kExitOk) << m.w.out.str();
  ASSERT_EQ(m.sink.events.size(), 1u);
  const metrics::Event& e = m.sink.events[0];
  EXPECT_EQ(values_of(e, "InstancesDrained"), std::vector<double>{2});
  EXPECT_EQ(values_of(e, "StragglersTerminated"), std::vector<double>{0});
  EXPECT_EQ(values_of(e, "ReleaseFailures"), std::vector<double>{0});
  EXPECT_GT(values_of(e, "ReleaseLatency").at(0), 0);

  // Agents that never drain: the release times out and terminates them.
  ASSERT_EQ(run_provision(m.ctx, testing::provision_options(1, "run-2")), kExitOk);
  m.w.agents.drain_ok = false;
  m.sink.events.clear();
  run_release(m.ctx, {"run-2", true, std::chrono::seconds(3), false, {}});
  ASSERT_EQ(m.sink.events.size(), 1u);
  EXPECT_EQ(values_of(m.sink.events[0], "StragglersTerminated"), std::vector<double>{1});
  EXPECT_EQ(values_of(m.sink.events[0], "InstancesDrained"), std::vector<double>{0});
}

TEST(CommandMetrics, RefreshReportsLeaksTerminationsAndPoolDepth) {
  Metered m;
  // A running instance whose agent failed: terminated under agent.failed.
  ASSERT_EQ(run_provision(m.ctx, testing::provision_options(1, "run-1")), kExitOk);
  // An idle record whose instance EC2 does not know (reclaimed long ago): closed as gone.
  m.w.add_idle("i-00000000000000aa1");
  const std::string failing = m.w.compute.launched.at(0);
  pool::AgentReport failed;
  failed.signal = pool::AgentSignal::kFailed;
  failed.generation = 1;
  failed.signal_detail = "config.sh failed";
  ASSERT_TRUE(m.w.table.report(failing, failed));
  m.sink.events.clear();

  run_refresh(m.ctx, {false, true});
  auto summary = m.sink.with("Leaks");
  ASSERT_EQ(summary.size(), 1u) << m.w.out.str();
  EXPECT_EQ(values_of(summary[0], "RecordsClosedGone"), std::vector<double>{1});
  EXPECT_EQ(values_of(summary[0], "Leaks"), std::vector<double>{1});
  EXPECT_EQ(values_of(summary[0], "Terminations"), std::vector<double>{1});
  std::vector<metrics::Event> by_rule;
  for (const auto& e : m.sink.with("Terminations")) {
    if (!dimension_of(e, "Rule").empty()) by_rule.push_back(e);
  }
  ASSERT_EQ(by_rule.size(), 1u);
  EXPECT_EQ(dimension_of(by_rule[0], "Rule"), "agent.failed");
  auto depth = m.sink.with("IdleInstances");
  std::map<std::string, std::pair<double, double>> per_class;
  for (const auto& e : depth) {
    per_class[dimension_of(e, "ResourceClass")] = {values_of(e, "IdleInstances").at(0),
                                                   values_of(e, "PoolQueueMessages").at(0)};
  }
  EXPECT_EQ(per_class, (std::map<std::string, std::pair<double, double>>{{"small", {1, 1}}, {"large", {0, 0}}}));
}

class CommandMetricsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "runpool-ctl-metrics-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(CommandMetricsFile, OffUnlessAsked) {
  Settings s = testing::test_settings();
  CommandMetrics none(s, nullptr, "host");
  EXPECT_FALSE(none.enabled());
  EXPECT_EQ(&none.sink(), &metrics::no_metrics());
}

TEST_F(CommandMetricsFile, MetricsFileGetsOneEmfLinePerEvent) {
  World w;
  w.settings.metrics_file = (dir_ / "runpoolctl.emf").string();
  {
    CommandMetrics cm(w.settings, nullptr, "host");
    EXPECT_TRUE(cm.enabled());
    Context ctx{w.settings, w.clock, w.table, w.queue, w.compute, w.github, w.out, w.cancelled, cm.sink()};
    ASSERT_EQ(run_provision(ctx, testing::provision_options(1)), kExitOk);
  }
  std::ifstream in(dir_ / "runpoolctl.emf");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  Json::Value v = parse_json(line, "EMF line");
  EXPECT_EQ(v["ColdLaunches"], 1);
  EXPECT_EQ(v["Pool"], "ci");
  EXPECT_EQ(v["_aws"]["CloudWatchMetrics"][0]["Namespace"], "runpool");
  EXPECT_FALSE(std::getline(in, line));
}

class CommandMetricsLogs : public ::testing::Test {
 protected:
  CommandMetricsLogs()
      : creds_(aws::AwsCredentials{"AKIDTEST", Secret("secret"), Secret(), std::nullopt}),
        caller_(http_, creds_, clock_, aws::ServiceSettings{"logs", "http://127.0.0.1:9", "us-east-1", RetryPolicy{2}}),
        logs_(caller_) {
    w_.settings.metrics_log_group = "/runpool/metrics";
  }
  int provision_with_metrics() {
    CommandMetrics cm(w_.settings, &logs_, "fv-az12:3");
    EXPECT_TRUE(cm.enabled());
    Context ctx{w_.settings, w_.clock, w_.table, w_.queue, w_.compute, w_.github, w_.out, w_.cancelled, cm.sink()};
    int rc = run_provision(ctx, testing::provision_options(1));
    EXPECT_EQ(http_.count(), 0u) << "nothing is sent before the command ends";
    return rc;
  }

  World w_;
  runpool::testing::FakeHttp http_;
  FakeClock clock_;
  aws::StaticCredentialsProvider creds_;
  aws::AwsCaller caller_;
  aws::CloudWatchLogsClient logs_;
};

TEST_F(CommandMetricsLogs, OnePutLogEventsWhenTheCommandEnds) {
  http_.push(200, "{}");
  http_.push(200, "{}");
  ASSERT_EQ(provision_with_metrics(), kExitOk);
  ASSERT_EQ(http_.count(), 2u);
  EXPECT_EQ(http_.header(0, "X-Amz-Target"), "Logs_20140328.CreateLogStream");
  EXPECT_EQ(http_.header(1, "X-Amz-Target"), "Logs_20140328.PutLogEvents");
  Json::Value body = http_.body_json(1);
  EXPECT_EQ(body["logGroupName"], "/runpool/metrics");
  EXPECT_EQ(body["logStreamName"], "runpoolctl/ci/fv-az12_3");
  ASSERT_EQ(body["logEvents"].size(), 1u);
  Json::Value line = parse_json(body["logEvents"][0]["message"].asString(), "EMF");
  EXPECT_EQ(line["ColdLaunches"], 1);
  EXPECT_EQ(body["logEvents"][0]["timestamp"].asInt64(), w_.now());
}

TEST_F(CommandMetricsLogs, LogsUnreachableIsOnlyAWarning) {
  http_.on(runpool::testing::FakeHttp::refused());
  metrics::testing::CapturedLog log;
  EXPECT_EQ(provision_with_metrics(), kExitOk);
  EXPECT_NE(log.text().find("1 event(s) not sent to /runpool/metrics"), std::string::npos) << log.text();
}

TEST_F(CommandMetricsLogs, ABadGroupNameTurnsOnlyThatSinkOff) {
  w_.settings.metrics_log_group = "has spaces";
  metrics::testing::CapturedLog log;
  CommandMetrics cm(w_.settings, &logs_, "host");
  EXPECT_FALSE(cm.enabled());
  EXPECT_NE(log.text().find("metrics_log_group"), std::string::npos);
}

}  // namespace
}  // namespace runpool::controller
