// Warm claim: `runpoolctl provision --count N` from a full pool (filled by a provision and a
// release) until every runner is registered and running — the command's whole run, as a workflow
// step sees it — for N = 1, 10 and 50. Each trial's instances are released back before the next.
//
//   warm_claim_bench [--sizes 1,10,50] [--trials-1 10] [--trials-10 5] [--trials-50 3] [--stand-in-keys shared|fresh] [--set key=value]…
//
// The pool is filled once, for the largest size; if it cannot be (the machine cannot run that
// many agents and runners), the benchmark says so and halves the size until one fits.
#include "bench/bench_pool.h"

namespace runpool::bench {
namespace {

constexpr const char* kBench = "warm_claim_bench";

std::optional<double> target_for(int size) {
  if (size == 1) return 1.0;
  if (size == 50) return 3.0;
  return std::nullopt;
}

int default_trials(int size) { return size <= 1 ? 10 : size <= 10 ? 5 : 3; }

// Where a warm claim's time goes, per instance: runpoolctl's log (local clock) and the agent's
// console (the same clock: one host).
void add_phases(BenchPool& pool, const CtlRun& p, const std::string& label, Phases& phases) {
  const std::vector<Json::Value> log = p.log();
  int64_t last_running = 0;
  for (const auto& i : p.report["instances"]) {
    const std::string id = i["instance_id"].asString();
    const std::string g = std::to_string(i["generation"].asInt64());
    const std::string console = pool.console(id);
    const int64_t claimed = log_time(log, "claimed " + id + " (");
    const int64_t noticed = console_time(console, "registering a runner for " + label + " (generation " + g + ")");
    const int64_t configured = console_time(console, "registered runner " + pool.pool_name_ + "-" + id + "-g" + g);
    const int64_t reported = console_time(console, "reported registered for generation " + g);
    const int64_t running = log_time(log, "instance " + id + " is running for ");
    last_running = std::max(last_running, running);
    phases.add("start -> claim written (runpoolctl)", p.start_ms, claimed);
    phases.add("claim -> agent sees it", claimed, noticed);
    phases.add("agent: config.sh registers", noticed, configured);
    phases.add("agent: Listener up, `registered` written", configured, reported);
    phases.add("`registered` -> runpoolctl marks running", reported, running);
  }
  phases.add("last running -> command exits", last_running, p.end_ms);
}

}  // namespace

int run(const Options& o) {
  std::vector<int> sizes = o.get_ints("sizes", "1,10,50");
  std::sort(sizes.begin(), sizes.end());
  print_header(kBench, "provision N from a full pool until all are registered and running");
  print_context(o);

  BenchPool pool(o.config(), o.get("stand-in-keys", "shared") == "fresh");
  pool.open();
  const int filled = fill_for_sizes(pool, sizes);
  if (filled == 0) {
    print_summary(kBench, "could not fill a pool of even one instance on this machine");
    return 1;
  }
  std::string summary;
  std::vector<double> ctl_cpu;
  for (int size : sizes) {
    const int trials = o.get_int("trials-" + std::to_string(size), default_trials(size));
    std::vector<double> wall, per_instance, busy, cpu_per_runner;
    Phases phases;
    RequestTally requests;
    int ok = 0, not_warm = 0;
    long mem_low = mem_available_mb();
    for (int t = 0; t < trials; ++t) {
      const std::string label = fmt::format("warm-{}-{}", size, t);
      reset_requests(pool.cloud_);
      CtlRun p = pool.provision(label, size);
      // Nothing but runpoolctl and the agents spoke to AWS since the reset: their requests alone.
      RequestTally req = read_requests(pool.cloud_);
      mem_low = std::min(mem_low, mem_available_mb());
      if (!p.ok()) {
        print_fact(fmt::format("x{} trial {} FAILED", size, t), p.result.out.substr(0, 300));
      } else if (p.report["warm"].asInt() != size) {
        // Part of it launched cold: not a warm claim, so not a sample (reported, with why).
        ++not_warm;
        for (const auto& l : p.log()) {
          const std::string msg = l["msg"].asString();
          if (msg.find("pool small: claimed") == 0 || msg.find("dropping") == 0 || msg.find("leaving") == 0) {
            print_fact(fmt::format("x{} trial {} not all warm", size, t), msg);
          }
        }
      } else {
        ++ok;
        wall.push_back(p.seconds);
        busy.push_back(p.host_cores_busy);
        cpu_per_runner.push_back(p.host_cores_busy * p.seconds / size);
        ctl_cpu.push_back(p.cpu_s);
        add_requests(requests, req);
        for (const auto& i : p.report["instances"]) per_instance.push_back(i["running_after_ms"].asDouble() / 1000);
        add_phases(pool, p, label, phases);
      }
      CtlRun r = pool.release(label);
      if (!r.ok()) throw std::runtime_error("release " + label + " failed: " + describe(r.result));
      // The next trial needs the whole pool back.
      controller::e2e::eventually([&] { return pool.count_in(pool::State::kIdle) == filled; }, std::chrono::seconds(60));
    }
    print_series(fmt::format("x{}: provision, start to all running", size), wall, "s", target_for(size));
    print_series(fmt::format("x{}: per instance, start to running", size), per_instance, "s");
    phases.print(fmt::format("x{}: ", size));
    if (not_warm > 0) print_fact(fmt::format("x{}: trials not all warm (left out)", size), std::to_string(not_warm));
    print_series(fmt::format("x{}: machine's CPU busy meanwhile", size), busy,
                 fmt::format("cores (of {})", sysconf(_SC_NPROCESSORS_ONLN)));
    // On one host every instance's runner starts on the same cores: N registrations need N times
    // this much CPU, whatever runpool does (on EC2 each instance brings its own).
    print_series(fmt::format("x{}: machine CPU-seconds per runner started", size), cpu_per_runner, "s");
    print_requests(requests, ok, fmt::format("x{} provision", size));
    print_fact(fmt::format("x{}: lowest memory available", size), fmt::format("{} MB", mem_low));
    if (wall.empty()) continue;
    summary += fmt::format("{}x{} p95 {:.2f} s{}", summary.empty() ? "" : ", ", size, percentile(wall, 95),
                           target_for(size) ? (percentile(wall, 95) <= *target_for(size) ? " (target met)"
                                                                                          : " (target MISSED)")
                                            : "");
  }
  print_costs(pool, ctl_cpu);
  print_fact("host load at end", host_load());
  if (filled < o.get_ints("sizes", "1,10,50").back()) summary += fmt::format("; largest pool that ran here: {}", filled);
  print_summary(kBench, "warm claim " + summary);
  pool.close();
  return 0;
}

}  // namespace runpool::bench

int main(int argc, char** argv) {
  return runpool::bench::bench_main(argc, argv, "warm_claim_bench", runpool::bench::run);
}
