// Telling busy from idle from the runner's own output (reference: actions-runner.md). The agent is
// the authority on busy, so this must not trust the absence of a Worker process: a job is busy
// from the moment its request arrives (the _diag "Acknowledging runner request" line, or the perf
// counter MessageReceived_RunnerJobRequest) until "completed with result".
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
  enum Kind { kNone, kListening, kJobRequested, kJobStarted, kJobCompleted } kind = kNone;
  std::string job;     // job name (stdout) or request id (_diag)
  std::string result;  // for kJobCompleted: Succeeded, Failed, Canceled…
};

// Parses one line of the Listener's stdout ("2026-11-21 02:52:24Z: Running job: build").
RunnerEvent parse_stdout_line(std::string_view line);
// Parses one line of _diag/Runner_*.log ("[… INFO BrokerMessageListener] Acknowledging runner request '42'.").
RunnerEvent parse_diag_line(std::string_view line);

// Folds events into the phase, counting jobs. Pure; the agent feeds it lines as they come.
class RunnerActivity {
 public:
  void apply(const RunnerEvent& e);
  RunnerPhase phase() const { return phase_; }
  bool busy() const { return phase_ == RunnerPhase::kBusy; }
  int jobs_completed() const { return jobs_completed_; }
  const std::string& last_result() const { return last_result_; }
  const std::string& current_job() const { return current_job_; }

 private:
  RunnerPhase phase_ = RunnerPhase::kStarting;
  int jobs_completed_ = 0;
  std::string last_result_;
  std::string current_job_;
};

}  // namespace runpool::agent
