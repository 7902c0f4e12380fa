// What ending an assignment's job user costs, piece by piece, on this machine: creating and
// retiring the user (groupadd, useradd, userdel, groupdel), sweeping a tree where a job left many
// files among others', and sweeping every local filesystem for a uid (what each release's
// cleaning does). Needs root.
//   clean_sweep_bench [--files N] [--rounds N]
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "agent/tenant_sweep.h"
#include "agent/tenant_users.h"
#include "bench/bench_support.h"

namespace runpool::bench {
namespace {

namespace fs = std::filesystem;

int run(const Options& o) {
  if (geteuid() != 0) throw std::runtime_error("needs root (useradd, chown to other uids)");
  const int files = o.get_int("files", 20000);
  const int rounds = o.get_int("rounds", 5);
  constexpr uid_t kUid = 1987650000;
  print_header("clean_sweep", "the end of an assignment's job user");

  // The job user's life: created at the assignment's start, retired at its end.
  char dir[] = "/tmp/runpool-sweep-bench-XXXXXX";
  if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp");
  agent::TenantUsersSettings ts;
  ts.range = {1987600000, 1987609999};
  ts.state_file = std::string(dir) + "/job-users";
  ts.home = std::string(dir) + "/home";
  agent::SystemTenantUsers users(ts, nullptr);
  std::vector<double> create, retire;
  for (int i = 0; i < rounds; ++i) {
    auto t = std::chrono::steady_clock::now();
    users.create({});
    create.push_back(seconds_since(t));
    t = std::chrono::steady_clock::now();
    users.retire();
    retire.push_back(seconds_since(t));
  }
  print_series("job user created (groupadd + useradd)", create, "s");
  print_series("job user retired (userdel + groupdel)", retire, "s");

  // A job's mess among others' files: half of them the job's, in nested directories.
  std::vector<double> tree;
  size_t removed = 0, walked = 0;
  for (int r = 0; r < rounds; ++r) {
    const fs::path base = fs::path(dir) / "tree";
    for (int i = 0; i < files; ++i) {
      const fs::path d = base / std::to_string(i % 100) / std::to_string(i % 7);
      fs::create_directories(d);
      const fs::path f = d / ("f" + std::to_string(i));
      std::ofstream(f) << "x";
      if (i % 2 == 0 && lchown(f.c_str(), kUid, kUid) != 0) throw std::runtime_error("chown");
    }
    agent::SweepOptions so;
    so.roots = {base.string()};
    so.sysvipc_dir = std::string(dir) + "/none";
    so.check_mqueue = false;
    auto t = std::chrono::steady_clock::now();
    auto rep = agent::sweep_tenant(kUid, so, nullptr);
    tree.push_back(seconds_since(t));
    removed = rep.files;
    walked = rep.walked;
    fs::remove_all(base);
  }
  print_series(fmt::format("sweep of {} files, {} the job's", walked, removed), tree, "s");

  // Every local filesystem, as an instance's cleaning does (nothing of the uid to remove).
  std::vector<double> everything;
  size_t entries = 0;
  for (int r = 0; r < rounds; ++r) {
    agent::SweepOptions so;
    auto t = std::chrono::steady_clock::now();
    auto rep = agent::sweep_tenant(kUid + 1, so, nullptr);
    everything.push_back(seconds_since(t));
    entries = rep.walked;
  }
  print_series(fmt::format("sweep of every local filesystem ({} entries)", entries), everything, "s");
  fs::remove_all(dir);
  print_summary("clean_sweep", fmt::format("job user {:.3f} s + {:.3f} s; whole machine ({} entries) {:.2f} s p50",
                                           percentile(create, 50), percentile(retire, 50), entries,
                                           percentile(everything, 50)));
  return 0;
}

}  // namespace
}  // namespace runpool::bench

int main(int argc, char** argv) { return runpool::bench::bench_main(argc, argv, "clean_sweep_bench", runpool::bench::run); }
