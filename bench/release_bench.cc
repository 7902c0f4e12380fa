// Release: `runpoolctl release --label L` of N running runners, as a workflow's last job runs it
// (no --wait: it returns once the drains are written), then at once the next provision of N of
// the class, which finds the queue empty and takes the instances from their drains as their
// agents report `drained` (controller/take_draining.h). Timed: the release command, start to exit
// (what the workflow waits); release start → every agent's `drained` (the instance takeable again);
// release start → the next provision's runners all running (the instance back in service); per
// instance, and where the time goes (runpoolctl's logs and the agents' consoles). N = 1, 10, 50;
// each trial's next provision is the following trial's release; the rest of the filled pool is
// held by another label meanwhile, so that the class queue is empty.
//
//   release_bench [--sizes 1,10,50] [--trials-1 10] [--trials-10 5] [--trials-50 3] [--set key=value]…
#include "bench/bench_pool.h"

namespace runpool::bench {
namespace {

constexpr const char* kBench = "release_bench";
constexpr double kTarget = 2.0;        // the release command
constexpr double kBackTarget = 55.0;   // the instance back in service, with the stock drain

int default_trials(int size) { return size <= 1 ? 10 : size <= 10 ? 5 : 3; }

}  // namespace

int run(const Options& o) {
  std::vector<int> sizes = o.get_ints("sizes", "1,10,50");
  std::sort(sizes.begin(), sizes.end());
  print_header(kBench, "release N running runners (no --wait), then the next provision of N takes them from their drains");
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
    std::vector<double> command, all_drained, back_in_service, per_instance_drained, busy;
    std::vector<double> warm_taken, launched;
    Phases phases;
    RequestTally requests;
    int ok = 0;
    std::string label = fmt::format("rel-{}-0", size);
    CtlRun p = pool.provision(label, size);
    if (!p.ok()) throw std::runtime_error("provision " + label + " failed: " + describe(p.result));
    // The rest of the pool held by a label of its own meanwhile: each next provision finds its
    // class queue empty, as after a release that did not wait, and must take from the drains.
    const std::string held = fmt::format("rel-{}-held", size);
    if (filled > size) {
      CtlRun h = pool.provision(held, filled - size);
      if (!h.ok()) throw std::runtime_error("provision " + held + " failed: " + describe(h.result));
    }
    for (int t = 0; t < trials; ++t) {
      std::map<std::string, int64_t> generations;
      for (const auto& i : p.report["instances"]) generations[i["instance_id"].asString()] = i["generation"].asInt64();

      reset_requests(pool.cloud_);
      CtlRun r = pool.release_no_wait(label);
      RequestTally req = read_requests(pool.cloud_);  // the release's alone
      const std::string next = fmt::format("rel-{}-{}", size, t + 1);
      CtlRun n = pool.provision(next, size);
      if (!r.ok() || r.report["draining"].size() + r.report["returned"].size() != generations.size() || !n.ok()) {
        print_fact(fmt::format("x{} trial {} FAILED", size, t),
                   r.result.out.substr(0, 300) + " / " + n.result.out.substr(0, 300));
        if (!n.ok()) throw std::runtime_error("provision " + next + " failed: " + describe(n.result));
        p = n;
        label = next;
        continue;
      }
      ++ok;
      command.push_back(r.seconds);
      busy.push_back(r.host_cores_busy);
      ctl_cpu.push_back(r.cpu_s);
      add_requests(requests, req);
      warm_taken.push_back(n.report["warm"].asDouble());
      launched.push_back(n.report["launched"].asDouble());
      back_in_service.push_back(static_cast<double>(n.end_ms - r.start_ms) / 1000);
      const std::vector<Json::Value> rlog = r.log(), nlog = n.log();
      int64_t last_drained = 0;
      bool every_drained = true;
      for (const auto& [id, g] : generations) {
        const std::string console = pool.console(id);
        const std::string gen = std::to_string(g);
        const int64_t drain_written = log_time(rlog, "instance " + id + " draining (generation " + gen + ")");
        const int64_t noticed = console_time(console, "draining generation " + gen + ":");
        const int64_t stopped = console_time(console, "generation " + gen + " goes on to deregistration");
        const int64_t removed = console_time(console, "deregistered runner " + pool.pool_name_ + "-" + id + "-g" + gen);
        const int64_t drained = console_time(console, "generation " + gen + " drained, deregistered and cleaned");
        const int64_t taken = log_time(nlog, "claimed " + id + " (");
        const int64_t registered =
            console_time(console, "registered runner " + pool.pool_name_ + "-" + id + "-g" + std::to_string(g + 1));
        if (drained == 0) every_drained = false;
        last_drained = std::max(last_drained, drained);
        if (drained) per_instance_drained.push_back(static_cast<double>(drained - r.start_ms) / 1000);
        phases.add("start -> draining written (runpoolctl)", r.start_ms, drain_written);
        phases.add("draining -> agent sees it", drain_written, noticed);
        phases.add("agent: runner stops (stock drain: one long poll, deregistration)", noticed, stopped);
        // The stock drain deregisters before the Listener stops (no "deregistered runner" line then).
        if (removed > stopped) {
          phases.add("agent: runner stopped -> config.sh remove done", stopped, removed);
          phases.add("agent: clean, `drained` written", removed, drained);
        } else {
          phases.add("agent: runner stopped -> cleaned, `drained` written", stopped, drained);
        }
        phases.add("`drained` -> taken by the next provision", drained, taken);
        phases.add("taken -> registered for the next label", taken, registered);
      }
      if (every_drained) all_drained.push_back(static_cast<double>(last_drained - r.start_ms) / 1000);
      p = n;
      label = next;
    }
    // The pool as it was for the next size: the last label and the held ones released, waiting.
    for (const std::string& l : {label, held}) {
      CtlRun back = pool.release(l);
      if (!back.ok()) print_fact(fmt::format("x{} release --wait {}", size, l), describe(back.result).substr(0, 300));
    }

    print_series(fmt::format("x{}: release command, start to exit", size), command, "s", kTarget);
    print_series(fmt::format("x{}: release start to every agent's drained", size), all_drained, "s");
    print_series(fmt::format("x{}: release start to next provision all running", size), back_in_service, "s",
                 kBackTarget);
    print_series(fmt::format("x{}: per instance, start to drained", size), per_instance_drained, "s");
    print_series(fmt::format("x{}: next provision: warm (taken from drains)", size), warm_taken, "instances");
    print_series(fmt::format("x{}: next provision: launched cold", size), launched, "instances");
    phases.print(fmt::format("x{}: ", size));
    print_series(fmt::format("x{}: machine's CPU busy during release", size), busy,
                 fmt::format("cores (of {})", sysconf(_SC_NPROCESSORS_ONLN)));
    print_requests(requests, ok, fmt::format("x{} release", size));
    if (command.empty()) continue;
    summary += fmt::format("{}x{} command p95 {:.2f} s{}, back in service p95 {:.1f} s{}", summary.empty() ? "" : "; ",
                           size, percentile(command, 95), percentile(command, 95) <= kTarget ? "" : " (MISSED)",
                           percentile(back_in_service, 95),
                           percentile(back_in_service, 95) <= kBackTarget ? "" : " (MISSED)");
  }
  print_costs(pool, ctl_cpu);
  print_fact("host load at end", host_load());
  print_summary(kBench, fmt::format("release command target p95 <= {:g} s, back in service <= {:g} s: {}", kTarget,
                                    kBackTarget, summary));
  pool.close();
  return 0;
}

}  // namespace runpool::bench

int main(int argc, char** argv) {
  return runpool::bench::bench_main(argc, argv, "release_bench", runpool::bench::run);
}
