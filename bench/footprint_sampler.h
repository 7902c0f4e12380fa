// What one process costs over a measured window, read from /proc: CPU (utime + stime of every
// thread, exited ones included, not of reaped children), sampled each second; resident memory
// each second; and its peak — VmHWM after resetting it at the window's start (writing 5 to
// /proc/<pid>/clear_refs), so a peak from before the window does not count.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"

namespace runpool::bench {

struct FootprintWindow {
  double seconds = 0;                // measured
  double cpu_s = 0;                  // over the window
  std::vector<double> slice_pct;     // % of one core per slice
  std::vector<double> rss_mb;        // VmRSS, one sample a second
  double peak_mb = 0;                // VmHWM within the window (or over the life, see hwm_reset)
  bool hwm_reset = false;            // clear_refs accepted the reset
  bool alive = true;                 // the process lived through the window
  double pct_of_core() const { return seconds > 0 ? 100.0 * cpu_s / seconds : 0; }
  double cpu_s_per_hour() const { return seconds > 0 ? cpu_s * 3600.0 / seconds : 0; }
};

inline long status_kb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

inline bool reset_peak_rss(pid_t pid) {
  std::ofstream out("/proc/" + std::to_string(pid) + "/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

// Samples `pid` for `window` (slices of `slice`, each a percentile sample of CPU).
inline FootprintWindow sample_process(pid_t pid, std::chrono::seconds window, std::chrono::seconds slice) {
  FootprintWindow w;
  w.hwm_reset = reset_peak_rss(pid);
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = process_usage(pid).cpu_s;
  double slice_cpu = cpu0;
  auto slice_t = t0;
  for (auto next = t0 + std::chrono::seconds(1); next <= t0 + window; next += std::chrono::seconds(1)) {
    std::this_thread::sleep_until(next);
    const long rss = status_kb(pid, "VmRSS");
    if (rss < 0) {
      w.alive = false;
      break;
    }
    w.rss_mb.push_back(static_cast<double>(rss) / 1024);
    if (next - slice_t >= slice) {
      const double cpu = process_usage(pid).cpu_s;
      w.slice_pct.push_back(100.0 * (cpu - slice_cpu) / std::chrono::duration<double>(next - slice_t).count());
      slice_cpu = cpu;
      slice_t = next;
    }
  }
  w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  w.cpu_s = process_usage(pid).cpu_s - cpu0;
  w.peak_mb = static_cast<double>(status_kb(pid, "VmHWM")) / 1024;
  return w;
}

// Where the resident memory is (smaps): private dirty pages (heap, stacks, library data — what
// the process really costs), private clean (its own code), shared clean (library code other
// processes map too), PSS, and the mappings holding the most, e.g.
// "RSS 16.1 MB = private dirty 2.0 + private clean 1.2 + shared clean 12.9; PSS 3.9 MB; 4 threads,
// 45 libraries; libcrypto.so.3 3.3 MB, …".
inline std::string rss_breakdown(pid_t pid, int top = 8) {
  std::map<std::string, long> by_file, total;
  std::set<std::string> libraries;
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps");
  std::string current;
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    const auto dash = line.find('-');
    if (dash != std::string::npos && dash < colon && std::isxdigit(static_cast<unsigned char>(line[0]))) {
      std::istringstream f(line);
      std::string range, perms, offset, dev, inode, path;
      f >> range >> perms >> offset >> dev >> inode;
      std::getline(f >> std::ws, path);
      current = path.empty() ? "[anon]" : path.substr(path.rfind('/') + 1);
      if (current.find(".so") != std::string::npos) libraries.insert(current);
      continue;
    }
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    if (key != "Rss" && key != "Pss" && key != "Private_Dirty" && key != "Private_Clean" && key != "Shared_Clean" &&
        key != "Shared_Dirty") {
      continue;
    }
    const long kb = std::stol(line.substr(colon + 1));
    total[key] += kb;
    if (key == "Rss") by_file[current] += kb;
  }
  auto mb = [](long kb) { return fmt::format("{:.1f}", static_cast<double>(kb) / 1024); };
  std::string out = fmt::format(
      "RSS {} MB = private dirty {} + private clean {} + shared clean {} + shared dirty {}; PSS {} MB; {} threads, "
      "{} libraries",
      mb(total["Rss"]), mb(total["Private_Dirty"]), mb(total["Private_Clean"]), mb(total["Shared_Clean"]),
      mb(total["Shared_Dirty"]), mb(total["Pss"]), status_kb(pid, "Threads"), libraries.size());
  std::vector<std::pair<long, std::string>> sorted;
  for (const auto& [name, kb] : by_file) sorted.emplace_back(kb, name);
  std::sort(sorted.rbegin(), sorted.rend());
  for (int i = 0; i < top && i < static_cast<int>(sorted.size()); ++i) {
    out += fmt::format("{}{} {}", i == 0 ? "; largest (MB): " : ", ", sorted[i].second, mb(sorted[i].first));
  }
  return out;
}

}  // namespace runpool::bench
