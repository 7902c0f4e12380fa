// Shared by the benchmarks under bench/: figures (percentiles and a printer), command-line
// options, what processes cost (CPU seconds, peak RSS) and the local cloud's request counters.
// A benchmark prints figures; it never passes or fails (exit 1 only when it could not measure at
// all). The pool the run-scoped benchmarks measure is bench/bench_pool.h.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "agent/process.h"
#include "tests/support/local_cloud.h"

namespace runpool::bench {

using runpool::testing::LocalCloud;

// ---- figures

// Nearest-rank percentile (p in 0..100) of `v`; 0 for no samples.
// Seconds from `t` until now, on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

// One measured quantity: "name  n=… p50=… p95=… max=… unit", and against a p95 target if given.
inline void print_series(const std::string& name, const std::vector<double>& v, const std::string& unit,
                         std::optional<double> target_p95 = std::nullopt) {
  std::string line = fmt::format("  {:<44} n={:<3} p50={:.3f} p95={:.3f} max={:.3f} {}", name, v.size(),
                                 percentile(v, 50), percentile(v, 95), percentile(v, 100), unit);
  if (target_p95) {
    line += fmt::format("   target p95 <= {:g} {}: {}", *target_p95, unit,
                        v.empty() ? "no data" : percentile(v, 95) <= *target_p95 ? "met" : "MISSED");
  }
  std::cout << line << "\n" << std::flush;
}
inline void print_fact(const std::string& name, const std::string& value) {
  std::cout << fmt::format("  {:<44} {}\n", name, value) << std::flush;
}
inline void print_header(const std::string& bench, const std::string& what) {
  std::cout << "\n== " << bench << ": " << what << "\n" << std::flush;
}
// The one line a reader looks for first.
inline void print_summary(const std::string& bench, const std::string& text) {
  std::cout << "SUMMARY " << bench << ": " << text << "\n" << std::flush;
}

// Named intervals measured per instance or per run, printed in the order first added.
class Phases {
 public:
  // Adds one sample in seconds; `from` or `to` 0 (an event not seen) adds nothing.
  void add(const std::string& name, int64_t from_ms, int64_t to_ms) {
    if (from_ms == 0 || to_ms == 0) return;
    if (!values_.count(name)) order_.push_back(name);
    values_[name].push_back(static_cast<double>(to_ms - from_ms) / 1000.0);
  }
  void print(const std::string& prefix) const {
    for (const auto& name : order_) print_series(prefix + name, values_.at(name), "s");
  }

 private:
  std::vector<std::string> order_;
  std::map<std::string, std::vector<double>> values_;
};

// ---- options: --name value or --name=value; --set key=value (repeatable) adds a runpoolctl key

class Options {
 public:
  Options(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) != 0) throw std::runtime_error("unexpected argument " + a);
      std::string key = a.substr(2), value;
      if (auto eq = key.find('='); eq != std::string::npos) {
        value = key.substr(eq + 1);
        key = key.substr(0, eq);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        throw std::runtime_error(a + " needs a value");
      }
      if (key == "set") {
        if (value.find('=') == std::string::npos) throw std::runtime_error("--set needs key=value");
        config_.push_back(value.replace(value.find('='), 1, " = "));
      } else {
        values_[key] = value;
      }
    }
  }
  int get_int(const std::string& key, int def) const {
    auto it = values_.find(key);
    return it == values_.end() ? def : std::stoi(it->second);
  }
  std::string get(const std::string& key, const std::string& def) const {
    auto it = values_.find(key);
    return it == values_.end() ? def : it->second;
  }
  std::vector<int> get_ints(const std::string& key, const std::string& def) const {
    std::vector<int> out;
    std::stringstream ss(get(key, def));
    for (std::string part; std::getline(ss, part, ',');) out.push_back(std::stoi(part));
    return out;
  }
  const std::vector<std::string>& config() const { return config_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> config_;
};

// ---- what processes cost

struct Usage {
  double cpu_s = 0;     // user + system
  long peak_rss_kb = 0;  // VmHWM / ru_maxrss
};
// The children this process waited for (runpoolctl runs): CPU so far, the largest peak RSS.
inline Usage children_usage() {
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return {s(ru.ru_utime) + s(ru.ru_stime), ru.ru_maxrss};
}
// A live process from /proc; zeros when it is gone.
inline Usage process_usage(pid_t pid) {
  Usage u;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return u;
  std::istringstream rest(text.substr(close + 2));
  std::vector<std::string> f((std::istream_iterator<std::string>(rest)), std::istream_iterator<std::string>());
  if (f.size() > 12) u.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) u.peak_rss_kb = std::stol(line.substr(6));
  }
  return u;
}
// The local cloud's node process: this process's child running localcloud.js.
inline pid_t local_cloud_pid() {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream st(e.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(st)), std::istreambuf_iterator<char>());
    auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (ppid == getpid() && agent::process_cmdline(pid).find("localcloud.js") != std::string::npos) return pid;
  }
  return -1;
}
// CPU time the whole machine has spent busy (not idle or waiting for I/O) since boot, in seconds.
inline double host_busy_s() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  return (user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
}
inline std::string host_load() {
  std::ifstream in("/proc/loadavg");
  std::string one, five;
  in >> one >> five;
  return one + " (1 min), " + five + " (5 min)";
}
inline long mem_available_mb() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemAvailable:", 0) == 0) return std::stol(line.substr(13)) / 1024;
  }
  return 0;
}

// ---- requests, counted by the local cloud

// service -> operation -> count. Services: dynamodb, sqs, ec2 (by the AWS proxies, split by
// caller) and github (REST calls: runpoolctl's, the only REST client; the runners' own protocol
// is counted apart under github-runner).
using OpCounts = std::map<std::string, std::map<std::string, long>>;
struct RequestTally {
  OpCounts controller;  // runpoolctl — and anything else signing with the controller's key
  OpCounts instances;   // every instance's agent, summed
  std::map<std::string, long> per_instance_total;
  long total(const OpCounts& side, const std::string& service) const {
    long n = 0;
    if (auto it = side.find(service); it != side.end()) {
      for (const auto& [op, c] : it->second) n += c;
    }
    return n;
  }
  long op(const OpCounts& side, const std::string& service, const std::string& operation) const {
    auto it = side.find(service);
    if (it == side.end()) return 0;
    auto o = it->second.find(operation);
    return o == it->second.end() ? 0 : o->second;
  }
};
// Zeroes the counters. Between this and read_requests the benchmark must not call AWS itself
// with the controller's key, or its own requests count as runpoolctl's.
inline void reset_requests(LocalCloud& cloud) {
  cloud.control("POST", "/_control/requests/reset");
  cloud.control("DELETE", "/_control/github/calls");
}
inline RequestTally read_requests(LocalCloud& cloud) {
  RequestTally t;
  const Json::Value aws = cloud.control("GET", "/_control/requests");
  for (const auto& service : aws.getMemberNames()) {
    for (const auto& principal : aws[service].getMemberNames()) {
      const bool instance = principal.rfind("instance:", 0) == 0;
      for (const auto& op : aws[service][principal].getMemberNames()) {
        long n = aws[service][principal][op].asInt64();
        (instance ? t.instances : t.controller)[service][op] += n;
        if (instance) t.per_instance_total[principal] += n;
      }
    }
  }
  const Json::Value gh = cloud.control("GET", "/_control/github/calls");
  for (const auto& route : gh["byRoute"].getMemberNames()) t.controller["github"][route] = gh["byRoute"][route].asInt64();
  for (const auto& route : gh["runnerProtocol"].getMemberNames()) {
    t.instances["github-runner"][route] = gh["runnerProtocol"][route].asInt64();
  }
  return t;
}
inline void add_requests(RequestTally& sum, const RequestTally& t) {
  for (OpCounts RequestTally::*side : {&RequestTally::controller, &RequestTally::instances}) {
    for (const auto& [service, ops] : t.*side) {
      for (const auto& [op, n] : ops) (sum.*side)[service][op] += n;
    }
  }
  for (const auto& [who, n] : t.per_instance_total) sum.per_instance_total[who] += n;
}
// "dynamodb 12.0 (GetItem 8.0, UpdateItem 4.0)" per `per` operations.
inline std::string describe_requests(const RequestTally& t, const OpCounts& side, const std::string& service,
                                     double per) {
  auto it = side.find(service);
  if (it == side.end() || it->second.empty()) return "0";
  std::string ops;
  for (const auto& [op, n] : it->second) {
    ops += fmt::format("{}{} {:.1f}", ops.empty() ? "" : ", ", op, static_cast<double>(n) / per);
  }
  return fmt::format("{:.1f} ({})", static_cast<double>(t.total(side, service)) / per, ops);
}

// Per `ops` operations called `what`: runpoolctl's requests per service, then the agents' and
// runners' requests made meanwhile (heartbeats and record polls of every live instance included).
inline void print_requests(const RequestTally& sum, int ops, const std::string& what) {
  if (ops <= 0) return;
  const double n = ops;
  for (const char* service : {"dynamodb", "sqs", "ec2", "github"}) {
    print_fact(fmt::format("runpoolctl {} requests per {}", service, what), describe_requests(sum, sum.controller, service, n));
  }
  for (const char* service : {"dynamodb", "ec2", "github-runner"}) {
    print_fact(fmt::format("agents' {} requests per {}", service, what), describe_requests(sum, sum.instances, service, n));
  }
}

// Every benchmark's main: `run` with the command line's options; a failure is one line on stderr
// naming the benchmark, and exit 1.
inline int bench_main(int argc, char** argv, const char* name, int (*run)(const Options&)) {
  try {
    return run(Options(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace runpool::bench
