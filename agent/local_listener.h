// A running `bin/Runner.Listener run`: its stdout and stderr are read from the files it writes
// them to (not pipes: it must outlive the agent), its _diag log is tailed, and each line becomes a
// RunnerEvent for the loop. Started by LocalRunnerHost.
#pragma once

#include <deque>
#include <string>

#include "agent/diag_tail.h"
#include "agent/process.h"
#include "agent/runner_host.h"

namespace runpool::agent {

class LocalListener final : public ListenerProcess {
 public:
  // Takes over `child` (its pipes); `diag` and `perf` (its RUNNER_PERFLOG) were created before
  // the child started.
  LocalListener(Child child, DiagTail diag, DiagTail perf);
  ~LocalListener() override;
  LocalListener(const LocalListener&) = delete;
  LocalListener& operator=(const LocalListener&) = delete;

  std::vector<RunnerEvent> poll_events() override;
  std::optional<ExitStatus> exit_status() override;
  void interrupt() override;
  void kill() override;
  std::string output_tail() const override;

  pid_t pid() const { return child_.pid; }

 private:
  void read_pipes(std::vector<RunnerEvent>& events);
  void take_lines(std::string& buffer, bool is_stdout, std::vector<RunnerEvent>& events);
  void remember(const std::string& line);

  Child child_;
  DiagTail diag_;
  DiagTail perf_;
  std::string out_buf_, err_buf_;
  bool out_open_ = true, err_open_ = true;
  std::deque<std::string> tail_;
  std::optional<ExitStatus> exit_;
};

}  // namespace runpool::agent
