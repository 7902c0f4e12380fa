#include "agent/runner_output.h"

#include <cctype>

namespace runpool::agent {
namespace {

// Strips the "yyyy-MM-dd HH:mm:ssZ: " prefix the Listener puts on stdout lines.
std::string_view after_timestamp(std::string_view line) {
  auto pos = line.find("Z: ");
  return pos == std::string_view::npos ? line : line.substr(pos + 3);
}

std::string_view trim_end(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  return s;
}

bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

}  // namespace

RunnerEvent parse_stdout_line(std::string_view raw) {
  std::string_view line = trim_end(after_timestamp(raw));
  RunnerEvent e;
  constexpr std::string_view kRunning = "Running job: ";
  constexpr std::string_view kJob = "Job ";
  constexpr std::string_view kCompleted = " completed with result: ";
  constexpr std::string_view kVersion = "Current runner version: '";
  // SelfUpdater.cs 71 / SelfUpdaterV2.cs 69, written without a time stamp (Terminal.WriteLine).
  constexpr std::string_view kDownloading = "Downloading ";
  constexpr std::string_view kRunnerWord = " runner";
  if (line == "Listening for Jobs") {
    e.kind = RunnerEvent::kListening;
  } else if (line.starts_with(kVersion) && line.size() > kVersion.size() + 1 && line.back() == '\'') {
    e.kind = RunnerEvent::kVersion;
    e.result = line.substr(kVersion.size(), line.size() - kVersion.size() - 1);
  } else if (line.starts_with(kDownloading) && line.ends_with(kRunnerWord) &&
             line.size() > kDownloading.size() + kRunnerWord.size()) {
    e.kind = RunnerEvent::kUpdateRequested;
    e.result = line.substr(kDownloading.size(), line.size() - kDownloading.size() - kRunnerWord.size());
  } else if (line.starts_with(kRunning)) {
    e.kind = RunnerEvent::kJobStarted;
    e.job = line.substr(kRunning.size());
  } else if (line.starts_with(kJob)) {
    auto pos = line.rfind(kCompleted);
    if (pos != std::string_view::npos && pos >= kJob.size()) {
      e.kind = RunnerEvent::kJobCompleted;
      e.job = line.substr(kJob.size(), pos - kJob.size());
      e.result = line.substr(pos + kCompleted.size());
    }
  }
  return e;
}

RunnerEvent parse_stderr_line(std::string_view raw) {
  // SelfUpdater.cs 124 / SelfUpdaterV2.cs 124 through Terminal.WriteError (stderr).
  constexpr std::string_view kFailed = "Runner update failed: ";
  std::string_view line = trim_end(raw);
  RunnerEvent e;
  if (line.starts_with(kFailed)) {
    e.kind = RunnerEvent::kUpdateFailed;
    e.result = line.substr(kFailed.size());
  }
  return e;
}

RunnerEvent parse_diag_line(std::string_view raw) {
  std::string_view line = trim_end(raw);
  RunnerEvent e;
  constexpr std::string_view kAck = "Acknowledging runner request '";
  auto pos = line.find(kAck);
  const bool listener_tag = line.find(" BrokerMessageListener]") != std::string_view::npos ||
                            line.find(" MessageListener]") != std::string_view::npos;
  if (pos != std::string_view::npos && listener_tag) {
    auto start = pos + kAck.size();
    auto end = line.find('\'', start);
    if (end != std::string_view::npos) {
      e.kind = RunnerEvent::kJobRequested;
      e.job = line.substr(start, end - start);
    }
  }
  return e;
}

RunnerEvent parse_perf_line(std::string_view raw) {
  // "MessageReceived_<message type>:<time>" for every message (Runner.cs 607); the type is the
  // server's and the runner matches it ignoring case. Jobs come as RunnerJobRequest (broker) or
  // PipelineAgentJobRequest (legacy).
  RunnerEvent e;
  constexpr std::string_view kPrefix = "MessageReceived_";
  std::string_view line = trim_end(raw);
  const size_t colon = line.find(':');
  if (!line.starts_with(kPrefix) || colon == std::string_view::npos) return e;
  const std::string_view type = line.substr(kPrefix.size(), colon - kPrefix.size());
  if (equals_ignore_case(type, "RunnerJobRequest") || equals_ignore_case(type, "PipelineAgentJobRequest")) {
    e.kind = RunnerEvent::kJobRequested;
  }
  return e;
}

void RunnerActivity::apply(const RunnerEvent& e) {
  switch (e.kind) {
    case RunnerEvent::kNone:
    case RunnerEvent::kUpdateRequested:
    case RunnerEvent::kUpdateFailed:
      break;
    case RunnerEvent::kVersion:
      runner_version_ = e.result;
      break;
    case RunnerEvent::kListening:
      // A (re)started Listener is idle unless a job is still in flight from before the restart.
      if (phase_ == RunnerPhase::kStarting) phase_ = RunnerPhase::kListening;
      break;
    case RunnerEvent::kJobRequested:
    case RunnerEvent::kJobStarted:
      phase_ = RunnerPhase::kBusy;
      if (!e.job.empty() && (e.kind == RunnerEvent::kJobStarted || current_job_.empty())) current_job_ = e.job;
      break;
    case RunnerEvent::kJobCompleted:
      phase_ = RunnerPhase::kListening;
      ++jobs_completed_;
      last_result_ = e.result;
      current_job_.clear();
      break;
  }
}

}  // namespace runpool::agent
