// One runpoolctl run for control_plane_bench, with its own resource usage: wait4 gives this child's
// CPU and peak RSS alone (bench_support.h's children_usage sums every child and keeps the largest
// peak, which cannot tell one run from the next).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/runpoolctl_harness.h"

namespace runpool::bench {

struct ScaleRun {
  int exit_code = -1;  // -1: killed (also when it ran past its timeout)
  std::string out, err;
  double wall_s = 0, user_s = 0, sys_s = 0;
  long peak_rss_kb = 0;
  double cpu_s() const { return user_s + sys_s; }
};

// `binary`: another runpoolctl to measure (a what-if build); empty: the one built with the benchmark.
inline ScaleRun run_scale_ctl(const controller::testing::CtlPool& pool, const std::vector<std::string>& args,
                              std::chrono::seconds timeout, const std::string& binary = "") {
  static int n = 0;
  const std::string out_path = pool.dir() + "/scale-" + std::to_string(++n) + ".out";
  const std::string err_path = pool.dir() + "/scale-" + std::to_string(n) + ".err";
  std::vector<std::string> argv_s = {binary.empty() ? RUNPOOL_CTL_BINARY : binary, "--config", pool.config_path()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s;
  for (const auto& [k, v] : pool.env()) env_s.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(out, 1);
    dup2(err, 2);
    dup2(devnull, 0);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  ScaleRun r;
  int status = 0;
  rusage ru{};
  // Polled so that a hung run is bounded; 2 ms steps keep the wall time's error small.
  while (true) {
    pid_t got = wait4(pid, &status, WNOHANG, &ru);
    if (got == pid) break;
    if (std::chrono::steady_clock::now() - t0 > timeout) {
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &ru);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  r.user_s = secs(ru.ru_utime);
  r.sys_s = secs(ru.ru_stime);
  r.peak_rss_kb = ru.ru_maxrss;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = controller::testing::slurp(out_path);
  r.err = controller::testing::slurp(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return r;
}

}  // namespace runpool::bench
