// A running `bin/Runner.Listener run`: its stdout and stderr are read from the files it writes
// them to (not pipes: it must outlive the agent), its _diag log is tailed, and each line becomes a
// RunnerEvent for the loop. Started (or, after an agent restart, adopted) by LocalRunnerHost.
#pragma once

#include <deque>
#include <memory>
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
  // Follows Listener `pid` that an earlier agent started: its output files (read through
  // /proc/<pid>/fd, from their current end), its _diag and perf logs from now. Its end is seen
  // when the process is gone; its exit status is unknown.
  static std::unique_ptr<LocalListener> adopt(pid_t pid, DiagTail diag, DiagTail perf);
  ~LocalListener() override;
  LocalListener(const LocalListener&) = delete;
  LocalListener& operator=(const LocalListener&) = delete;

  std::vector<RunnerEvent> poll_events() override;
  std::optional<ExitStatus> exit_status() override;
  void interrupt() override;
  void drain() override;
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
  bool adopted_ = false;  // not this agent's child: no wait status
  pid_t group_ = -1;      // signalled as a group (spawn makes it one); an adopted one may not be
};

}  // namespace runpool::agent
