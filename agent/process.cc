#include "agent/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace runpool::agent {
namespace {

// In the child, between fork and exec: only async-signal-safe calls from here on.
[[noreturn]] void child_fail(int fd, int stage) {
  int data[2] = {stage, errno};
  ssize_t n = write(fd, data, sizeof data);
  (void)n;
  _exit(127);
}

void close_other_fds(int keep) {
#ifdef SYS_close_range
  if (keep > 3 && syscall(SYS_close_range, 3u, static_cast<unsigned>(keep - 1), 0u) != 0) {
    for (int fd = 3; fd < keep; ++fd) close(fd);
  }
  if (syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u) == 0) return;
#endif
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536) max = 65536;
  for (int fd = 3; fd < max; ++fd) {
    if (fd != keep) close(fd);
  }
}

const char* stage_name(int stage) {
  switch (stage) {
    case 1: return "chdir";
    case 2: return "setgroups";
    case 3: return "setgid";
    case 4: return "setuid";
    case 5: return "exec";
    case 6: return "session keyring";
    default: return "start";
  }
}

void append_tail(std::string& out, const std::string& more, size_t tail) {
  out += more;
  if (out.size() > tail) out.erase(0, out.size() - tail);
}

// /proc/<pid>/stat past the ")" that ends comm (a comm may hold ")" and spaces): "S ppid …";
// "" when gone.
std::string stat_after_comm(pid_t pid, const std::string& proc) {
  std::ifstream in(proc + "/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return "";
  auto close = line.rfind(')');
  return close == std::string::npos ? "" : line.substr(close + 1);
}

bool is_zombie(pid_t pid, const std::string& proc) {
  const std::string rest = stat_after_comm(pid, proc);
  return rest.size() < 2 || rest[1] == 'Z' || rest[1] == 'X';  // gone counts as dead
}

// An unlinked file the child appends to (fds[1]) and the agent reads from the start through a
// descriptor of its own (fds[0], its own offset). False (errno set) when it cannot be made.
bool capture_file(int fds[2]) {
  char path[] = "/tmp/runpool-output-XXXXXX";
  int w = mkostemp(path, O_CLOEXEC | O_APPEND);
  if (w < 0) return false;
  unlink(path);
  int r = open(("/proc/self/fd/" + std::to_string(w)).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (r < 0) {
    int e = errno;
    close(w);
    errno = e;
    return false;
  }
  fds[0] = r;
  fds[1] = w;
  return true;
}

}  // namespace

std::optional<UserIdentity> lookup_user(const std::string& name) {
  struct passwd pw {};
  struct passwd* result = nullptr;
  std::vector<char> buf(16384);
  if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &result) != 0 || !result) return std::nullopt;
  UserIdentity u;
  u.name = name;
  u.uid = pw.pw_uid;
  u.gid = pw.pw_gid;
  int n = 64;
  std::vector<gid_t> groups(n);
  if (getgrouplist(name.c_str(), pw.pw_gid, groups.data(), &n) < 0) {
    groups.resize(n);
    if (getgrouplist(name.c_str(), pw.pw_gid, groups.data(), &n) < 0) n = 0;
  }
  groups.resize(n);
  if (groups.empty()) groups.push_back(pw.pw_gid);
  u.groups = groups;
  return u;
}

std::optional<gid_t> lookup_group(const std::string& name) {
  struct group gr {};
  struct group* result = nullptr;
  std::vector<char> buf(16384);
  if (getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &result) != 0 || !result) return std::nullopt;
  return result->gr_gid;
}

Child spawn(const SpawnOptions& o) {
  if (o.argv.empty()) throw std::invalid_argument("spawn: no argv");
  // Everything the child needs is built before fork: it may only make system calls after it.
  std::vector<char*> argv;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : o.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const char* cwd = o.cwd.empty() ? nullptr : o.cwd.c_str();

  int out[2] = {-1, -1}, err[2] = {-1, -1}, status_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {out[0], out[1], err[0], err[1], status_pipe[0], status_pipe[1]}) {
      if (fd >= 0) close(fd);
    }
  };
  const bool files = o.capture_output && o.output_to_files;
  if (pipe2(status_pipe, O_CLOEXEC) != 0 ||
      (o.capture_output && !files && (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)) ||
      (files && (!capture_file(out) || !capture_file(err)))) {
    int e = errno;
    close_all();
    throw std::runtime_error(std::string(files ? "spawn: output file: " : "spawn: pipe: ") + std::strerror(e));
  }
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) {
    close_all();
    throw std::runtime_error(std::string("spawn: /dev/null: ") + std::strerror(errno));
  }

  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close_all();
    close(devnull);
    throw std::runtime_error(std::string("spawn: fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    setpgid(0, 0);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int s = 1; s < NSIG; ++s) {
      if (s != SIGKILL && s != SIGSTOP) sigaction(s, &dfl, nullptr);
    }
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, nullptr);
    dup2(devnull, 0);
    dup2(o.capture_output ? out[1] : devnull, 1);
    dup2(o.capture_output ? err[1] : devnull, 2);
    close_other_fds(status_pipe[1]);
    if (cwd && chdir(cwd) != 0) child_fail(status_pipe[1], 1);
    if (o.user) {
      if (setgroups(o.user->groups.size(), o.user->groups.data()) != 0) child_fail(status_pipe[1], 2);
      if (setgid(o.user->gid) != 0) child_fail(status_pipe[1], 3);
      if (setuid(o.user->uid) != 0) child_fail(status_pipe[1], 4);
      if (o.user->uid != 0 && (setuid(0) == 0 || geteuid() == 0)) child_fail(status_pipe[1], 4);
    }
    // After setuid: the new keyring is the user's. A kernel without keys (ENOSYS) has none to share.
    if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) < 0 && errno != ENOSYS) child_fail(status_pipe[1], 6);
    execve(argv[0], argv.data(), envp.data());
    child_fail(status_pipe[1], 5);
  }

  setpgid(pid, pid);  // also here, so the group exists before anyone signals it
  close(devnull);
  close(status_pipe[1]);
  status_pipe[1] = -1;
  if (o.capture_output) {
    close(out[1]);
    close(err[1]);
    out[1] = err[1] = -1;
  }
  int data[2] = {0, 0};
  ssize_t n;
  do {
    n = read(status_pipe[0], data, sizeof data);
  } while (n < 0 && errno == EINTR);
  close(status_pipe[0]);
  status_pipe[0] = -1;
  if (n > 0) {
    int ws;
    waitpid(pid, &ws, 0);
    close_all();
    throw std::runtime_error("cannot start " + o.argv[0] + ": " + stage_name(data[0]) + ": " + std::strerror(data[1]));
  }
  Child c;
  c.pid = pid;
  if (o.capture_output) {
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
    fcntl(err[0], F_SETFL, fcntl(err[0], F_GETFL) | O_NONBLOCK);
    c.stdout_fd = out[0];
    c.stderr_fd = err[0];
    c.output_in_files = files;
  }
  return c;
}

bool read_available(int fd, std::string& buffer) {
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n > 0) {
      buffer.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

ExitStatus exit_status_of(int ws) {
  if (WIFSIGNALED(ws)) return {true, WTERMSIG(ws)};
  return {false, WIFEXITED(ws) ? WEXITSTATUS(ws) : -1};
}

CommandOutcome run_command(const SpawnOptions& o, Duration timeout, const std::function<void()>& alive,
                           size_t tail_bytes, const std::function<bool()>& cancelled) {
  CommandOutcome result;
  Child c = spawn(o);
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> term_sent;
  bool out_open = c.stdout_fd >= 0, err_open = c.stderr_fd >= 0;
  for (;;) {
    struct pollfd fds[2];
    nfds_t nfds = 0;
    if (out_open) fds[nfds++] = {c.stdout_fd, POLLIN, 0};
    if (err_open) fds[nfds++] = {c.stderr_fd, POLLIN, 0};
    if (nfds) poll(fds, nfds, 100);
    else std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::string chunk;
    if (out_open) out_open = read_available(c.stdout_fd, chunk);
    if (err_open) err_open = read_available(c.stderr_fd, chunk);
    append_tail(result.output, chunk, tail_bytes);
    if (alive) alive();
    // Looked at without reaping it: until it is reaped the leader's pid stays the group's id,
    // so the group can still be signalled as a whole, never a recycled pid.
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == c.pid) break;
    auto now = std::chrono::steady_clock::now();
    if (!term_sent) {
      if (now - start >= timeout) result.timed_out = true;
      else if (cancelled && cancelled()) result.cancelled = true;
      if (result.timed_out || result.cancelled) {
        kill(-c.pid, SIGTERM);
        term_sent = now;
      }
    } else if (now - *term_sent >= std::chrono::seconds(2)) {
      kill(-c.pid, SIGKILL);
    }
  }
  if (term_sent) kill(-c.pid, SIGKILL);  // members that outlived (or ignored) the SIGTERM
  int ws = 0;
  while (waitpid(c.pid, &ws, 0) < 0 && errno == EINTR) {
  }
  // What is left in the pipes (descendants may hold them open: read without waiting).
  std::string rest;
  if (out_open) read_available(c.stdout_fd, rest);
  if (err_open) read_available(c.stderr_fd, rest);
  append_tail(result.output, rest, tail_bytes);
  if (c.stdout_fd >= 0) close(c.stdout_fd);
  if (c.stderr_fd >= 0) close(c.stderr_fd);
  result.status = exit_status_of(ws);
  result.exit_code = (result.status.signaled || term_sent) ? -1 : result.status.code;
  return result;
}

std::vector<pid_t> processes_of_user(uid_t uid, const std::string& proc) {
  std::vector<pid_t> out;
  DIR* d = opendir(proc.c_str());
  if (!d) return out;
  const pid_t self = getpid();
  while (struct dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (!end || *end != '\0' || pid <= 0 || pid == self) continue;
    std::ifstream in(proc + "/" + e->d_name + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("Uid:", 0) != 0) continue;
      std::istringstream fields(line.substr(4));
      long real = -1, effective = -1;
      fields >> real >> effective;
      if ((real == static_cast<long>(uid) || effective == static_cast<long>(uid)) && !is_zombie(pid, proc)) {
        out.push_back(static_cast<pid_t>(pid));
      }
      break;
    }
  }
  closedir(d);
  return out;
}

std::string process_cmdline(pid_t pid, const std::string& proc) {
  std::ifstream in(proc + "/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && s.back() == '\0') s.pop_back();
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  return s;
}

pid_t process_parent(pid_t pid, const std::string& proc) {
  std::istringstream rest(stat_after_comm(pid, proc));
  char state = 0;
  long ppid = 0;
  if (!(rest >> state >> ppid) || ppid < 0) return 0;
  return static_cast<pid_t>(ppid);
}

std::optional<uint64_t> process_start_time(pid_t pid, const std::string& proc) {
  // After comm: state (3rd field), ppid, …, starttime (22nd) — the 20th word.
  std::istringstream rest(stat_after_comm(pid, proc));
  std::string word;
  for (int i = 0; i < 19 && rest >> word; ++i) {
  }
  uint64_t start = 0;
  if (!(rest >> start)) return std::nullopt;
  return start;
}

bool descends_from(pid_t pid, pid_t ancestor, const std::string& proc, int max_links) {
  if (ancestor <= 0) return false;
  for (int i = 0; i < max_links && pid > 1; ++i) {
    pid = process_parent(pid, proc);
    if (pid == ancestor) return true;
  }
  return false;
}

size_t end_processes_of_user(const UserIdentity& user, Duration grace, const std::function<void()>& alive) {
  if (user.uid == 0) throw std::invalid_argument("refusing to end every process of root");
  auto pids = processes_of_user(user.uid);
  if (pids.empty()) return 0;
  for (pid_t p : pids) kill(p, SIGTERM);
  const auto start = std::chrono::steady_clock::now();
  while (!processes_of_user(user.uid).empty() && std::chrono::steady_clock::now() - start < grace) {
    if (alive) alive();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (int round = 0; round < 40; ++round) {
    if (processes_of_user(user.uid).empty()) return 0;
    // kill(-1) as the user reaches all of its processes at once, forks in flight included.
    pid_t helper = fork();
    if (helper == 0) {
      if (setgroups(0, nullptr) != 0 || setgid(user.gid) != 0 || setuid(user.uid) != 0 || geteuid() == 0) _exit(1);
      kill(-1, SIGKILL);
      _exit(0);
    }
    if (helper > 0) {
      int ws;
      waitpid(helper, &ws, 0);
    }
    if (alive) alive();
    std::this_thread::sleep_for(std::chrono::milliseconds(25 + 25 * std::min(round, 8)));
  }
  return processes_of_user(user.uid).size();
}

}  // namespace runpool::agent
