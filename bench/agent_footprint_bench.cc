// Agent footprint: the runpool-agent process's CPU and resident memory at the agent's default
// intervals (heartbeat 30 s, record poll 1 s, notice poll 5 s: agent/agent_settings.cc), measured
// over a window of a few minutes and extrapolated to an hour — busy (its runner running a job from
// the broker) and idle (in the pool, waiting for a claim). The agent process only, every thread
// of it: not the stand-in runner (Node) it supervises, nor children such as config.sh.
//
//   agent_footprint_bench [--window 180] [--slice 10] [--set key=value]…
//
// Targets: idle <= 0.2% of one core; <= 15 MB resident.
#include "bench/bench_pool.h"
#include "bench/footprint_sampler.h"

namespace runpool::bench {
namespace {

constexpr const char* kBench = "agent_footprint_bench";
constexpr double kIdleCorePctTarget = 0.2;
constexpr double kRssTargetMb = 15;

class FootprintPool : public BenchPool {
 public:
  using BenchPool::BenchPool;
  using E2eTest::ids_of;
  using E2eTest::job;
  using E2eTest::pids_matching;
  using E2eTest::queue_job;
};

// The instance's runpool-agent: the process whose executable is the built agent.
pid_t agent_pid(FootprintPool& pool, const std::string& id) {
  std::error_code ec;
  const auto binary = std::filesystem::canonical(RUNPOOL_AGENT_BINARY, ec);
  std::vector<pid_t> found;
  for (pid_t p : pool.pids_matching(id, "runpool-agent")) {
    if (std::filesystem::read_symlink("/proc/" + std::to_string(p) + "/exe", ec) == binary) found.push_back(p);
  }
  if (found.size() != 1) throw std::runtime_error(fmt::format("{} agent processes on {}", found.size(), id));
  return found[0];
}

void print_window(const std::string& what, const FootprintWindow& w) {
  print_fact(what + ": window", fmt::format("{:.0f} s{}", w.seconds, w.alive ? "" : " (the agent DIED during it)"));
  print_fact(what + ": CPU over the window",
             fmt::format("{:.2f} s = {:.3f}% of one core = {:.1f} CPU s per hour", w.cpu_s, w.pct_of_core(),
                         w.cpu_s_per_hour()));
  print_series(what + ": CPU per slice", w.slice_pct, "% of one core");
  print_series(what + ": resident (VmRSS, 1/s)", w.rss_mb, "MB");
  print_fact(what + ": peak resident (VmHWM)",
             fmt::format("{:.1f} MB {}   target <= {:g} MB: {}", w.peak_mb,
                         w.hwm_reset ? "within the window" : "over its life (clear_refs refused)", kRssTargetMb,
                         w.peak_mb <= kRssTargetMb ? "met" : "MISSED"));
}

}  // namespace

int run(const Options& o) {
  const auto window = std::chrono::seconds(o.get_int("window", 180));
  const auto slice = std::chrono::seconds(o.get_int("slice", 10));
  print_header(kBench, "runpool-agent CPU and memory, busy and idle, at the default intervals");
  print_context(o);
  print_fact("measured", "the runpool-agent process only (all its threads; not the Node stand-in runner "
                         "nor reaped children)");

  FootprintPool pool(o.config(), o.get("stand-in-keys", "shared") == "fresh");
  pool.open();
  const std::string label = "footprint";
  CtlRun p = pool.provision(label, 1);
  if (!p.ok()) throw std::runtime_error("provision failed: " + describe(p.result));
  const std::string id = FootprintPool::ids_of(p.report).at(0);
  const pid_t pid = agent_pid(pool, id);

  // Busy: a job longer than the window, running on this instance's runner.
  const int64_t job = pool.queue_job(label, "footprint-busy", "true",
                                     static_cast<int>((window + std::chrono::seconds(20)).count() * 1000));
  if (!controller::e2e::eventually([&] { return pool.job(job)["state"].asString() == "running"; },
                                   std::chrono::seconds(120))) {
    throw std::runtime_error("the job never started: " + pool.job(job).toStyledString());
  }
  const FootprintWindow busy = sample_process(pid, window, slice);
  const std::string busy_memory = rss_breakdown(pid);
  const std::string job_state = pool.job(job)["state"].asString();
  const double life_peak_busy = static_cast<double>(status_kb(pid, "VmHWM")) / 1024;

  // Idle: released (the job finishes first: drain-capable), drained, cleaned, back in the pool.
  CtlRun r = pool.release(label);
  if (!r.ok()) throw std::runtime_error("release failed: " + describe(r.result));
  if (!controller::e2e::eventually([&] { return pool.record(id).state == pool::State::kIdle; },
                                   std::chrono::seconds(120))) {
    throw std::runtime_error("the instance did not return to the pool");
  }
  std::this_thread::sleep_for(std::chrono::seconds(10));  // let the cleaning and the pool message settle
  const pid_t idle_pid = agent_pid(pool, id);
  const FootprintWindow idle = sample_process(idle_pid, window, slice);
  const std::string idle_memory = rss_breakdown(idle_pid);
  const bool still_idle = pool.record(id).state == pool::State::kIdle;

  print_fact("instance", fmt::format("{} (agent pid {}{})", id, idle_pid, idle_pid == pid ? "" : fmt::format(
                                                                                              ", was {}", pid)));
  print_window("busy", busy);
  print_fact("busy: resident memory at the end", busy_memory);
  print_fact("busy: the job during the window", job_state == "running" ? "running throughout"
                                                                          : "UNEXPECTED: " + job_state + " at the end");
  print_window("idle", idle);
  print_fact("idle: resident memory at the end", idle_memory);
  print_fact("idle: target CPU", fmt::format("<= {:g}% of one core: {}", kIdleCorePctTarget,
                                             idle.pct_of_core() <= kIdleCorePctTarget ? "met" : "MISSED"));
  print_fact("idle: the record during the window", still_idle ? "idle throughout" : "UNEXPECTED: no longer idle");
  print_fact("agent peak resident over its life",
             fmt::format("{:.1f} MB after the busy window, {:.1f} MB at the end", life_peak_busy,
                         static_cast<double>(status_kb(idle_pid, "VmHWM")) / 1024));
  print_fact("host load at end", host_load());
  const double peak = std::max(busy.peak_mb, idle.peak_mb);
  print_summary(kBench,
                fmt::format("idle {:.3f}% of one core ({:.1f} CPU s per idle hour; target <= {:g}%: {}), busy {:.3f}%; "
                            "peak RSS idle {:.1f} MB, busy {:.1f} MB (target <= {:g} MB: {})",
                            idle.pct_of_core(), idle.cpu_s_per_hour(), kIdleCorePctTarget,
                            idle.pct_of_core() <= kIdleCorePctTarget ? "met" : "MISSED", busy.pct_of_core(),
                            idle.peak_mb, busy.peak_mb, kRssTargetMb, peak <= kRssTargetMb ? "met" : "MISSED"));
  pool.close();
  return 0;
}

}  // namespace runpool::bench

int main(int argc, char** argv) {
  return runpool::bench::bench_main(argc, argv, "agent_footprint_bench", runpool::bench::run);
}
