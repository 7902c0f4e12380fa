#include "agent/listener_tree.h"

#include <set>

#include "agent/process.h"

namespace runpool::agent {

Leftovers find_leftovers(const std::vector<UserProcess>& procs, pid_t listener) {
  std::set<pid_t> tree = {listener};
  // Parents may come after their children in the list: grow the tree until it stops growing.
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& p : procs) {
      if (!tree.contains(p.pid) && tree.contains(p.ppid)) grew = tree.insert(p.pid).second;
    }
  }
  Leftovers out;
  for (const auto& p : procs) {
    if (!tree.contains(p.pid)) out.kill.push_back(p.pid);
    else if (p.pid != listener) out.job_in_hand = true;
  }
  return out;
}

bool listener_has_worker(uid_t uid, pid_t listener, const std::string& proc) {
  if (listener <= 0) return false;
  for (pid_t p : processes_of_user(uid, proc)) {
    if (process_cmdline(p, proc).find("Runner.Worker") != std::string::npos && descends_from(p, listener, proc)) {
      return true;
    }
  }
  return false;
}

}  // namespace runpool::agent
