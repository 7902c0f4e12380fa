// Processes the agent starts and ends: fork/exec as another user (setgroups/setgid/setuid) in a
// process group of its own, with default signal dispositions, an empty signal mask, a clean
// environment and no inherited descriptors; commands run to completion under a timeout; and the
// /proc scans that find (and end) every process of the runner user.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/decisions.h"
#include "common/clock.h"

namespace runpool::agent {

struct UserIdentity {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, as initgroups would set them
};

// nullopt when the user does not exist.
std::optional<UserIdentity> lookup_user(const std::string& name);
// The group's id; nullopt when the group does not exist.
std::optional<gid_t> lookup_group(const std::string& name);

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is the executable's path
  std::vector<std::string> env;   // "NAME=value", the whole environment
  std::string cwd;
  std::optional<UserIdentity> user;  // run as this user; nullopt: as the agent
  bool capture_output = true;        // stdout and stderr to pipes; else /dev/null
  // Captured into two unlinked files instead of pipes: a child that outlives the agent (kill -9
  // included) never meets a broken pipe (SIGPIPE, EPIPE) at its next line of output.
  bool output_to_files = false;
};

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;  // non-blocking, close-on-exec; -1 without capture
  int stderr_fd = -1;
  bool output_in_files = false;  // the fds read files (EOF: nothing new yet), not pipes
};

// Starts the process in a new process group (its pid is the group id) and a new session keyring
// of its own (never the agent's: under systemd every child would share the service's, and with it
// every key one job adds). Throws std::runtime_error when it cannot be started (exec failure
// included, with errno's text).
Child spawn(const SpawnOptions& options);

// Reads what is available from a non-blocking descriptor into `buffer`; false at EOF or error.
bool read_available(int fd, std::string& buffer);

struct CommandOutcome {
  int exit_code = -1;  // -1: timed out, cancelled, killed by a signal, or not started
  bool timed_out = false;
  bool cancelled = false;  // `cancelled` asked to stop it
  std::string output;  // the last `tail_bytes` of stdout and stderr, interleaved as read
  ExitStatus status{};  // as waitpid gave it (a signal's number, or the exit code)
};

// Runs to completion. On timeout (or once `cancelled` returns true) the process group gets
// SIGTERM, then SIGKILL after 2 s — and SIGKILL as soon as the leader is gone, so that nothing of
// the group outlives a stopped command. `alive` is called about every 100 ms while waiting (the
// watchdog's pulse), `cancelled` as often.
CommandOutcome run_command(const SpawnOptions& options, Duration timeout, const std::function<void()>& alive,
                           size_t tail_bytes = 4096, const std::function<bool()>& cancelled = {});

// The /proc scans read `proc` ("/proc"; tests give a tree of <pid>/{status,stat,cmdline} files).
// Every process (but this one) whose real or effective uid is `uid`.
std::vector<pid_t> processes_of_user(uid_t uid, const std::string& proc = "/proc");
// /proc/<pid>/cmdline with NULs as spaces; "" when gone.
std::string process_cmdline(pid_t pid, const std::string& proc = "/proc");
// The parent of `pid` from /proc/<pid>/stat (0 when gone or unreadable).
pid_t process_parent(pid_t pid, const std::string& proc = "/proc");
// When `pid` started (clock ticks after boot, /proc/<pid>/stat's 22nd field): with the pid, what
// tells a process from a later one that got its pid. nullopt when gone or unreadable.
std::optional<uint64_t> process_start_time(pid_t pid, const std::string& proc = "/proc");
// Whether `ancestor` is the parent of `pid`, or its parent's parent, … — at most `max_links`
// links up (a bound: the walk reads a tree that changes under it).
bool descends_from(pid_t pid, pid_t ancestor, const std::string& proc = "/proc", int max_links = 64);

// Ends every process of `user`: SIGTERM to each, then, once `grace` passed or they are gone,
// SIGKILL from a helper that takes the user's identity and calls kill(-1) — which reaches every
// process of the user, even ones forked while the scan ran — until /proc shows none. Returns the
// number of processes still there at the end (0 = all gone).
size_t end_processes_of_user(const UserIdentity& user, Duration grace, const std::function<void()>& alive);

// The exit status of a waitpid() status word.
ExitStatus exit_status_of(int wait_status);

}  // namespace runpool::agent
