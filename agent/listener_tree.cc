#include "agent/listener_tree.h"

#include <charconv>
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

std::string format_listener_mark(const ListenerMark& m) {
  return std::to_string(m.pid) + " " + std::to_string(m.start_time) + "\n";
}

std::optional<ListenerMark> parse_listener_mark(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  ListenerMark m;
  const auto pid_part = text.substr(0, space), start_part = text.substr(space + 1);
  auto [p, pe] = std::from_chars(pid_part.data(), pid_part.data() + pid_part.size(), m.pid);
  auto [s, se] = std::from_chars(start_part.data(), start_part.data() + start_part.size(), m.start_time);
  if (pe != std::errc() || p != pid_part.data() + pid_part.size() || se != std::errc() ||
      s != start_part.data() + start_part.size() || m.pid <= 0) {
    return std::nullopt;
  }
  return m;
}

pid_t choose_listener(const std::vector<ListenerCandidate>& found, const std::optional<ListenerMark>& mark) {
  if (mark) {
    for (const auto& c : found) {
      if (c.pid == mark->pid && c.start_time == mark->start_time) return c.pid;
    }
    return 0;
  }
  for (const auto& c : found) {
    if (c.group_leader) return c.pid;
  }
  return found.empty() ? 0 : found.front().pid;
}

}  // namespace runpool::agent
