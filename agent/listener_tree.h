// The Listener's process tree: what of the runner user's processes belongs to the job in hand (the
// Listener's Worker and the job's processes below it) and what earlier jobs left beside it. A
// process a job detaches is reparented away from the Listener, whatever it is named.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace runpool::agent {

struct UserProcess {
  pid_t pid = 0;
  pid_t ppid = 0;
};

struct Leftovers {
  std::vector<pid_t> kill;   // processes outside the Listener's tree: what earlier jobs left
  bool job_in_hand = false;  // the Listener has a child (its Runner.Worker, or one being spawned)
};

// Whether a Runner.Worker of `uid` runs in `listener`'s tree (its child, its child's child, …, read
// from `proc`). A process outside it named so is none: a job may name a process anything, and
// what it left running is reparented away from the Listener.
bool listener_has_worker(uid_t uid, pid_t listener, const std::string& proc = "/proc");

// Which of the runner user's processes are leftovers while `listener` runs. The Listener's tree is
// its Worker and the job's processes: never leftovers (a Worker means busy). A process a job
// detached is reparented away from that tree, so it is one.
Leftovers find_leftovers(const std::vector<UserProcess>& procs, pid_t listener);

// The Listener an agent started, kept in a root-owned file outside the runner root for the agent
// that follows it after a restart: "<pid> <start time>\n".
struct ListenerMark {
  pid_t pid = 0;
  uint64_t start_time = 0;  // process_start_time()
  bool operator==(const ListenerMark&) const = default;
};
std::string format_listener_mark(const ListenerMark& mark);
std::optional<ListenerMark> parse_listener_mark(std::string_view text);  // nullopt: malformed

// A process of the runner user whose command line names Runner.Listener.
struct ListenerCandidate {
  pid_t pid = 0;
  std::optional<uint64_t> start_time;
  bool group_leader = false;
};

// Which candidate to follow (0: none). With a mark, only the process it names, started when it
// says: a job may name a process anything, lead a process group and outlive the Listener. Without
// one (an agent that kept none), the first group leader, else the first.
pid_t choose_listener(const std::vector<ListenerCandidate>& found, const std::optional<ListenerMark>& mark);

}  // namespace runpool::agent
