// Looking for a run's secrets where they must not be: every secret learned during the run becomes
// needles (the whole value, and for long ones its first 20 characters, which catch a clipped
// value); a scanner counts what it read and names every hit with where it was found. A sampler
// keeps the argv of every process on the machine, and the runners' _diag logs, several times a
// second, for the whole run.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace runpool::controller::e2e {

class SecretSet {
 public:
  // `what` names the secret in reports (never its value). Values shorter than 12 characters are
  // not secrets worth a needle (they would match by chance).
  void add(const std::string& what, const std::string& value, bool with_prefix = true) {
    if (value.size() < 12) return;
    needles_.emplace(value, what);
    values_.insert(value);
    if (with_prefix && value.size() > 30) needles_.emplace(value.substr(0, 20), what + " (its first 20 characters)");
    names_.insert(what);
  }
  size_t secrets() const { return values_.size(); }  // distinct values
  size_t kinds() const { return names_.size(); }
  const std::map<std::string, std::string>& needles() const { return needles_; }
  // The names of the secrets `text` holds.
  std::set<std::string> found_in(const std::string& text) const {
    std::set<std::string> out;
    for (const auto& [needle, what] : needles_) {
      if (text.find(needle) != std::string::npos) out.insert(what);
    }
    return out;
  }

 private:
  std::map<std::string, std::string> needles_;  // needle → what
  std::set<std::string> names_, values_;
};

// Hits and counts of one scan: what was read, and every (place, secret) found.
struct ScanReport {
  size_t files = 0, bytes = 0, lines = 0, texts = 0;
  std::vector<std::string> leaks;  // "<place>: <secret name>"

  void scan(const SecretSet& s, const std::string& place, const std::string& text) {
    ++texts;
    bytes += text.size();
    for (char c : text) lines += c == '\n';
    for (const auto& what : s.found_in(text)) leaks.push_back(place + ": " + what);
  }
};

inline std::string read_all(const std::string& path, size_t max = 16u << 20) {
  std::ifstream in(path, std::ios::binary);
  std::string out;
  if (!in) return out;
  out.resize(max);
  in.read(out.data(), static_cast<std::streamsize>(max));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

inline std::string nul_to_space(std::string s) {
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  return s;
}

// The real uid of a process (/proc/<pid>/status); -1 when gone.
inline long process_uid(pid_t pid) {
  std::istringstream in(read_all("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Uid:", 0) == 0) return std::stol(line.substr(4));
  }
  return -1;
}

// Every process's argv on this machine, every 100 ms while running: the distinct command lines,
// and the uids of the processes working under `runner_dir` (this test's runner roots): the
// Listener, config.sh, the Worker and the jobs' processes.
class ArgvSampler {
 public:
  explicit ArgvSampler(std::string runner_dir) : runner_dir_(std::move(runner_dir)) {}
  void start() {
    thread_ = std::thread([this] {
      while (!stop_) {
        sample();
        for (int i = 0; i < 10 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  ~ArgvSampler() { stop(); }

  std::set<std::string> cmdlines() {
    std::lock_guard<std::mutex> l(mu_);
    return cmdlines_;
  }
  std::map<std::string, std::set<long>> runner_uids() {  // "Runner.Listener", "a job's process"… → uids
    std::lock_guard<std::mutex> l(mu_);
    return runner_uids_;
  }
  std::map<std::string, std::string> diag() {  // runner log path → its content as last seen
    std::lock_guard<std::mutex> l(mu_);
    return diag_;
  }
  size_t samples() const { return samples_; }
  size_t processes_seen() const { return processes_; }

 private:
  void sample() {
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      const std::string cmd = nul_to_space(read_all(it->path().string() + "/cmdline", 1 << 16));
      if (cmd.empty()) continue;
      ++processes_;
      std::lock_guard<std::mutex> l(mu_);
      cmdlines_.insert(cmd);
      // The runner's processes and its jobs' work under the runner roots (their titles may
      // name no path).
      std::error_code cwd_ec;
      const std::string cwd = std::filesystem::read_symlink(it->path() / "cwd", cwd_ec).string();
      if (cwd_ec || cwd.rfind(runner_dir_, 0) != 0) continue;
      std::string what = "a job's process";
      for (const char* known : {"Runner.Listener", "Runner.Worker", "config.sh"}) {
        if (cmd.find(known) != std::string::npos) what = known;
      }
      if (long uid = process_uid(std::stoi(name)); uid >= 0) runner_uids_[what].insert(uid);
    }
    // The runners' own logs (_diag), which the agent's cleaning deletes: kept as last seen.
    for (std::filesystem::recursive_directory_iterator it(runner_dir_, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string p = it->path().string();
      if (p.find("/_diag/") == std::string::npos || !it->is_regular_file(ec)) continue;
      std::string text = read_all(p, 4u << 20);
      std::lock_guard<std::mutex> l(mu_);
      if (text.size() >= diag_[p].size()) diag_[p] = std::move(text);
    }
    ++samples_;
  }

  std::string runner_dir_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> samples_{0}, processes_{0};
  std::mutex mu_;
  std::set<std::string> cmdlines_;
  std::map<std::string, std::set<long>> runner_uids_;
  std::map<std::string, std::string> diag_;
};

}  // namespace runpool::controller::e2e
