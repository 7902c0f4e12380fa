// Local instances share one machine, and a test may end one mid-assignment: the job user its
// agent made then outlives it (on EC2 the instance's disk goes with it). Retired here — its
// processes ended, its files in the test's tree and the scratch places removed, the user and
// group deleted — so the machine's user database does not grow with every run.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "agent/process.h"
#include "agent/tenant_sweep.h"
#include "agent/tenant_users.h"

namespace runpool::testing {

inline void retire_leftover_job_users(const std::filesystem::path& base) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    std::ifstream in(it->path() / "job-users");
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    auto st = agent::parse_tenant_state(ss.str());
    if (!st || !st->current) continue;
    agent::UserIdentity u{agent::tenant_name(*st->current), *st->current, *st->current, {*st->current}};
    agent::end_processes_of_user(u, std::chrono::seconds(1), nullptr);
    agent::SweepOptions o;
    o.roots = {base.string(), "/dev/shm", "/var/tmp"};
    agent::sweep_tenant(u.uid, o, nullptr);
    for (const char* tool : {"/usr/sbin/userdel", "/usr/sbin/groupdel"}) {
      agent::SpawnOptions cmd;
      cmd.argv = {tool, u.name};
      cmd.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
      agent::run_command(cmd, std::chrono::seconds(30), nullptr);
    }
  }
}

}  // namespace runpool::testing
