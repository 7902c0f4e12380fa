// Reading the runner's own output (reference: actions-runner.md): its stdout, its _diag log and
// its perf log. A job request shows first as the perf counter MessageReceived_<type> (every
// message; a job's type is RunnerJobRequest, or PipelineAgentJobRequest on the legacy flow; before
// acknowledge) and, only when the server asks for acknowledgement, as
// the _diag "Acknowledging runner request" line. Busy itself is decide_busy (decisions.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace runpool::agent {

enum class RunnerPhase {
  kStarting,   // no "Listening for Jobs" yet
  kListening,  // idle, polling the broker
  kBusy,       // a job request arrived and has not completed
};

struct RunnerEvent {
  enum Kind {
    kNone,
    kListening,
    kJobRequested,
    kJobStarted,
    kJobCompleted,
    kVersion,
    kUpdateRequested,  // "Downloading 2.340.0 runner": GitHub asked for a self-update
    kUpdateFailed,     // stderr "Runner update failed: …": the Listener goes on with its version
  } kind = kNone;
  std::string job;     // job name (stdout) or request id (_diag)
  // kJobCompleted: Succeeded, Failed, Canceled…; kVersion, kUpdateRequested: the version;
  // kUpdateFailed: the runner's words.
  std::string result;
};

// Parses one line of the Listener's stdout ("2026-11-21 02:52:24Z: Running job: build").
RunnerEvent parse_stdout_line(std::string_view line);
// Parses one line of the Listener's stderr (the runner's WriteError: "Runner update failed: …").
RunnerEvent parse_stderr_line(std::string_view line);
// Parses one line of _diag/Runner_*.log ("[… INFO BrokerMessageListener] Acknowledging runner request '42'.";
// the tag is MessageListener on the legacy flow).
RunnerEvent parse_diag_line(std::string_view line);
// Parses one line of the perf log <RUNNER_PERFLOG>/Runner.perf ("MessageReceived_RunnerJobRequest:2026-…"):
// a job request for either job message type, any other message nothing.
RunnerEvent parse_perf_line(std::string_view line);

// Folds events into the phase, counting jobs. Pure; the agent feeds it lines as they come.
class RunnerActivity {
 public:
  void apply(const RunnerEvent& e);
  RunnerPhase phase() const { return phase_; }
  bool busy() const { return phase_ == RunnerPhase::kBusy; }
  int jobs_completed() const { return jobs_completed_; }
  const std::string& last_result() const { return last_result_; }
  const std::string& current_job() const { return current_job_; }
  // The Listener's "Current runner version: '2.336.0'" at start; "" until it said so.
  const std::string& runner_version() const { return runner_version_; }

 private:
  RunnerPhase phase_ = RunnerPhase::kStarting;
  int jobs_completed_ = 0;
  std::string last_result_;
  std::string current_job_;
  std::string runner_version_;
};

}  // namespace runpool::agent
