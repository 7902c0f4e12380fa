#include "agent/local_listener.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

namespace runpool::agent {

LocalListener::LocalListener(Child child, DiagTail diag, DiagTail perf)
    : child_(child), diag_(std::move(diag)), perf_(std::move(perf)) {
  out_open_ = child_.stdout_fd >= 0;
  err_open_ = child_.stderr_fd >= 0;
}

LocalListener::~LocalListener() {
  // A Listener still running is left alone: an agent that stops (or restarts) must not cancel a
  // job; the next agent finds it as a stray and retires it gracefully.
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
  int ws = 0;
  pid_t w = waitpid(child_.pid, &ws, WNOHANG);
  if (w != child_.pid) return std::nullopt;
  exit_ = exit_status_of(ws);
  // Whatever of its group is left (a Worker of a lost job) goes with it.
  ::kill(-child_.pid, SIGKILL);
  return exit_;
}

void LocalListener::interrupt() {
  if (!exit_) ::kill(-child_.pid, SIGINT);
}

void LocalListener::kill() {
  if (!exit_) ::kill(-child_.pid, SIGKILL);
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
