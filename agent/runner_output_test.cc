#include "agent/runner_output.h"

#include <gtest/gtest.h>

namespace runpool::agent {
namespace {

TEST(ParseStdoutLine, KnownLines) {
  EXPECT_EQ(parse_stdout_line("2026-11-21 02:52:24Z: Listening for Jobs").kind, RunnerEvent::kListening);
  auto version = parse_stdout_line("Current runner version: '2.336.0'\n");
  EXPECT_EQ(version.kind, RunnerEvent::kVersion);
  EXPECT_EQ(version.result, "2.336.0");
  EXPECT_EQ(parse_stdout_line("Current runner version: ''").kind, RunnerEvent::kNone);
  RunnerActivity a;
  a.apply(version);
  EXPECT_EQ(a.runner_version(), "2.336.0");
  EXPECT_EQ(a.phase(), RunnerPhase::kStarting) << "a version line says nothing about listening";
  auto started = parse_stdout_line("2026-11-21 02:52:25Z: Running job: build (linux)\n");
  EXPECT_EQ(started.kind, RunnerEvent::kJobStarted);
  EXPECT_EQ(started.job, "build (linux)");
  auto done = parse_stdout_line("2026-11-21 02:53:00Z: Job build (linux) completed with result: Succeeded");
  EXPECT_EQ(done.kind, RunnerEvent::kJobCompleted);
  EXPECT_EQ(done.job, "build (linux)");
  EXPECT_EQ(done.result, "Succeeded");
}

TEST(ParseStdoutLine, OtherLinesAreIgnored) {
  for (const char* line : {"", "√ Connected to GitHub", "2026-11-21 02:52:24Z: Runner update in progress",
                           "Job x", "Running job:", "2026-11-21 02:52:24Z: Job  completed with result: "}) {
    EXPECT_EQ(parse_stdout_line(line).kind, RunnerEvent::kNone) << line;
  }
}

TEST(ParseStdoutLine, AnUpdateRequestNamesItsVersion) {
  auto e = parse_stdout_line("Downloading 2.340.0 runner");
  EXPECT_EQ(e.kind, RunnerEvent::kUpdateRequested);
  EXPECT_EQ(e.result, "2.340.0");
  EXPECT_EQ(parse_stdout_line("2026-11-21 02:52:24Z: Downloading 2.340.0 runner").result, "2.340.0");
  EXPECT_EQ(parse_stdout_line("Downloading  runner").kind, RunnerEvent::kNone) << "no version";
  EXPECT_EQ(parse_stdout_line("Downloading runner").kind, RunnerEvent::kNone);
  EXPECT_EQ(parse_stdout_line("Downloading action repository 'actions/checkout@v4'").kind, RunnerEvent::kNone);
}

TEST(ParseStderrLine, OnlyAFailedUpdate) {
  auto e = parse_stderr_line("Runner update failed: Access to the path '/r/config.sh' is denied.\n");
  EXPECT_EQ(e.kind, RunnerEvent::kUpdateFailed);
  EXPECT_EQ(e.result, "Access to the path '/r/config.sh' is denied.");
  EXPECT_EQ(parse_stderr_line("An error occurred: Runner update failed: x").kind, RunnerEvent::kNone);
  EXPECT_EQ(parse_stderr_line("Runner is not configured.").kind, RunnerEvent::kNone);
}

TEST(ParseDiagLine, AcknowledgeMarksTheRequest) {
  auto e = parse_diag_line("[2026-11-21 02:52:24Z INFO BrokerMessageListener] Acknowledging runner request '1234'.");
  EXPECT_EQ(e.kind, RunnerEvent::kJobRequested);
  EXPECT_EQ(e.job, "1234");
  EXPECT_EQ(parse_diag_line("[2026-11-21 02:52:24Z INFO JobDispatcher] Job request 1234 for plan p job j received.")
                .kind,
            RunnerEvent::kNone);
  EXPECT_EQ(parse_diag_line("[x INFO Other] Acknowledging runner request '1'.").kind, RunnerEvent::kNone);
  EXPECT_EQ(parse_diag_line("[x INFO BrokerMessageListener] Acknowledging runner request '1").kind,
            RunnerEvent::kNone);
}

TEST(ParseDiagLine, BothListenerTags) {
  // The legacy flow writes the same line from MessageListener.
  auto e = parse_diag_line("[2026-11-21 02:52:24Z INFO MessageListener] Acknowledging runner request '9'.");
  EXPECT_EQ(e.kind, RunnerEvent::kJobRequested);
  EXPECT_EQ(e.job, "9");
  EXPECT_EQ(parse_diag_line("[x INFO MyMessageListener] Acknowledging runner request '1'.").kind, RunnerEvent::kNone);
}

TEST(ParsePerfLine, OnlyTheJobRequestCounters) {
  // MessageReceived_<message type>: the broker's and the legacy flow's job types, in the server's case.
  for (const char* line : {"MessageReceived_RunnerJobRequest:2026-11-21T02:52:24.123Z",
                           "MessageReceived_RunnerJobRequest:2026-11-21T02:52:24.123Z\r",
                           "MessageReceived_PipelineAgentJobRequest:2026-11-21T02:52:24.1234567Z",
                           "MessageReceived_runnerjobrequest:2026-11-21T02:52:24Z"}) {
    EXPECT_EQ(parse_perf_line(line).kind, RunnerEvent::kJobRequested) << line;
  }
  for (const char* line : {"", "SessionCreated:2026-11-21T02:52:24.123Z", "SentJobToWorker_5:2026-11-21T02:52:24Z",
                           "MessageReceived_RunnerRefresh:2026-11-21T02:52:24Z", "MessageReceived_RunnerJobRequest",
                           "MessageReceived_JobCancellation:2026-11-21T02:52:24Z", "MessageReceived_AgentRefresh:x",
                           "MessageReceived_RunnerJobRequestX:2026-11-21T02:52:24Z",
                           "JobRequestRenewed_5:2026-11-21T02:52:24Z"}) {
    EXPECT_EQ(parse_perf_line(line).kind, RunnerEvent::kNone) << line;
  }
}

TEST(RunnerActivity, BusyFromRequestUntilCompletion) {
  RunnerActivity a;
  EXPECT_EQ(a.phase(), RunnerPhase::kStarting);
  a.apply(parse_stdout_line("2026-11-21 02:52:24Z: Listening for Jobs"));
  EXPECT_EQ(a.phase(), RunnerPhase::kListening);
  // The request arrives before any Worker or "Running job" line: busy already.
  a.apply(parse_diag_line("[t INFO BrokerMessageListener] Acknowledging runner request '7'."));
  EXPECT_TRUE(a.busy());
  a.apply(parse_stdout_line("t Z: Running job: test"));
  EXPECT_TRUE(a.busy());
  EXPECT_EQ(a.current_job(), "test");
  a.apply(parse_stdout_line("2026-11-21 02:52:24Z: Job test completed with result: Failed"));
  EXPECT_FALSE(a.busy());
  EXPECT_EQ(a.jobs_completed(), 1);
  EXPECT_EQ(a.last_result(), "Failed");
}

TEST(RunnerActivity, ListeningAgainDoesNotHideAJobInFlight) {
  RunnerActivity a;
  a.apply({RunnerEvent::kListening, "", ""});
  a.apply({RunnerEvent::kJobStarted, "j", ""});
  a.apply({RunnerEvent::kListening, "", ""});
  EXPECT_TRUE(a.busy());
}

}  // namespace
}  // namespace runpool::agent
