#include "agent/local_listener.h"

#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "agent/runner_update.h"

namespace runpool::agent {

LocalListener::LocalListener(Child child, DiagTail diag, DiagTail perf)
    : child_(child), diag_(std::move(diag)), perf_(std::move(perf)), group_(-child.pid) {
  out_open_ = child_.stdout_fd >= 0;
  err_open_ = child_.stderr_fd >= 0;
}

namespace {

// The read side of what `pid` writes to `fd`, positioned at its end: only a regular file (the
// output files LocalRunnerHost gives its Listeners); -1 otherwise.
int follow_output(pid_t pid, int fd) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  int r = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (r < 0) return -1;
  struct stat st{};
  if (fstat(r, &st) != 0 || !S_ISREG(st.st_mode) || lseek(r, 0, SEEK_END) < 0) {
    close(r);
    return -1;
  }
  return r;
}

bool is_listener(pid_t pid) { return process_cmdline(pid).find("Runner.Listener") != std::string::npos; }

}  // namespace

std::unique_ptr<LocalListener> LocalListener::adopt(pid_t pid, DiagTail diag, DiagTail perf) {
  Child c;
  c.pid = pid;
  c.stdout_fd = follow_output(pid, 1);
  c.stderr_fd = follow_output(pid, 2);
  c.output_in_files = true;
  auto l = std::make_unique<LocalListener>(c, std::move(diag), std::move(perf));
  l->adopted_ = true;
  if (getpgid(pid) != pid) l->group_ = pid;  // not a group leader: the process alone
  return l;
}

LocalListener::~LocalListener() {
  // A Listener still running is left alone: an agent that stops (or restarts) must not cancel a
  // job; the next agent adopts it.
  if (child_.stdout_fd >= 0) close(child_.stdout_fd);
  if (child_.stderr_fd >= 0) close(child_.stderr_fd);
}

void LocalListener::remember(const std::string& line) {
  if (line.empty()) return;
  tail_.push_back(line.size() > 300 ? line.substr(0, 300) : line);
  while (tail_.size() > 8) tail_.pop_front();
}

void LocalListener::take_lines(std::string& buffer, bool is_stdout, std::vector<RunnerEvent>& events) {
  size_t start = 0;
  for (size_t nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n', start)) {
    std::string line = buffer.substr(start, nl - start);
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    remember(line);
    if (is_stdout) {
      spdlog::info("runner: {}", line);
      RunnerEvent e = parse_stdout_line(line);
      if (e.kind != RunnerEvent::kNone) events.push_back(e);
    } else {
      spdlog::warn("runner stderr: {}", line);
      RunnerEvent e = parse_stderr_line(line);
      if (e.kind != RunnerEvent::kNone) events.push_back(e);
    }
  }
  buffer.erase(0, start);
  if (buffer.size() > 65536) buffer.clear();  // a runaway line: not one of the runner's
}

void LocalListener::read_pipes(std::vector<RunnerEvent>& events) {
  // Files (LocalRunnerHost::start_listener): their end is only "nothing new yet".
  if (out_open_) out_open_ = read_available(child_.stdout_fd, out_buf_) || child_.output_in_files;
  if (err_open_) err_open_ = read_available(child_.stderr_fd, err_buf_) || child_.output_in_files;
  take_lines(out_buf_, true, events);
  take_lines(err_buf_, false, events);
}

std::vector<RunnerEvent> LocalListener::poll_events() {
  std::vector<RunnerEvent> events;
  // Files do not order lines between them: stdout first, job requests after. A completion and
  // the next request in one poll leave the next one busy; a whole job within one poll is told by
  // its request after its completion, which the request count recognises (decisions.h).
  read_pipes(events);
  for (const auto& line : perf_.poll()) {
    RunnerEvent e = parse_perf_line(line);
    if (e.kind != RunnerEvent::kNone) {
      spdlog::info("runner perf: {}", line);
      events.push_back(e);
    }
  }
  for (const auto& line : diag_.poll()) {
    RunnerEvent e = parse_diag_line(line);
    if (e.kind != RunnerEvent::kNone) {
      spdlog::info("runner diag: {}", line);
      events.push_back(e);
    }
  }
  return events;
}

std::optional<ExitStatus> LocalListener::exit_status() {
  if (exit_) return exit_;
  if (adopted_) {
    // A zombie (its parent reaps it) has no command line: gone as well.
    if (is_listener(child_.pid)) return std::nullopt;
    exit_ = ExitStatus{false, 0, true};
    if (group_ < 0) ::kill(group_, SIGKILL);  // never a lone pid that may be reused by now
    return exit_;
  }
  int ws = 0;
  pid_t w = waitpid(child_.pid, &ws, WNOHANG);
  if (w != child_.pid) return std::nullopt;
  exit_ = exit_status_of(ws);
  // Whatever of its group is left (a Worker of a lost job) goes with it — except after an update
  // exit: update.sh is a plain child of the Listener, in this group, and swaps bin/ only once the
  // Listener is gone. The loop decides (decide_runner_update): waited for, or ended with the
  // runner user's processes when the assignment fails.
  if (!is_update_exit(*exit_)) ::kill(group_, SIGKILL);
  return exit_;
}

void LocalListener::interrupt() {
  // The Listener alone: the real runner's Worker and its steps share the Listener's process group
  // (.NET starts children without setpgid), and the Listener cancels its job in its own order.
  if (!exit_) ::kill(child_.pid, SIGINT);
}

void LocalListener::drain() {
  if (!exit_) ::kill(child_.pid, SIGUSR1);  // the Listener alone, not its group
}

void LocalListener::kill() {
  if (!exit_) ::kill(group_, SIGKILL);
}

std::string LocalListener::output_tail() const {
  std::string out;
  for (const auto& l : tail_) {
    if (!out.empty()) out += " | ";
    out += l;
  }
  return out;
}

}  // namespace runpool::agent
