// Cold provision overhead: what a provision with an empty pool spends outside the instances' boot
// itself. Each trial provisions N fresh instances (the pool's queue empty: nothing was ever
// released into it), breaks the run down with runpoolctl's JSON log (--log-level debug: the
// GitHub calls too), the agents' consoles and the state table, counts its requests, then
// terminates the instances.
//
//   cold_provision_bench [--sizes 1,10] [--trials-1 5] [--trials-10 2] [--set key=value]…
//
// The boot (launched → the agent reports `registered`) is the instance's: EC2's pending time, the
// user-data, the agent's start, config.sh and the Listener. Everything else is overhead.
#include "bench/bench_pool.h"

namespace runpool::bench {
namespace {

constexpr const char* kBench = "cold_provision_bench";

int default_trials(int size) { return size <= 1 ? 5 : 2; }

struct Breakdown {
  Phases run;       // per provision
  Phases instance;  // per instance
  std::vector<double> wall, overhead, boot_window;
  std::vector<double> clock_created, clock_running;
  std::vector<double> agent_cpu, agent_rss_mb;  // per agent, from its start to running  // table time minus log time (the AWS clock's estimate)
};

void break_down(BenchPool& pool, const CtlRun& p, const std::string& label, Breakdown& b) {
  const std::vector<Json::Value> log = p.log();
  const int64_t first_log = log.empty() ? 0 : log.front()["ts_ms"].asInt64();
  const int64_t token = log_time(log, "/registration-token: HTTP");
  const int64_t claimed = log_time(log, "pool small: claimed 0 of");
  int64_t first_launched = 0, last_launched = 0, last_reported = 0, last_running = 0;
  for (const auto& i : p.report["instances"]) {
    const std::string id = i["instance_id"].asString();
    const std::string console = pool.console(id);
    const int64_t launched = log_time(log, "launched " + id + " (");
    const int64_t agent_up = console_time(console, "");
    const int64_t noticed = console_time(console, "registering a runner for " + label + " (generation 1)");
    const int64_t reported = console_time(console, "reported registered for generation 1");
    const int64_t running = log_time(log, "instance " + id + " is running for ");
    first_launched = first_launched ? std::min(first_launched, launched) : launched;
    last_launched = std::max(last_launched, launched);
    last_reported = std::max(last_reported, reported);
    last_running = std::max(last_running, running);
    b.instance.add("boot: record written -> agent's first log line", launched, agent_up);
    b.instance.add("boot: agent up -> sees its assignment", agent_up ? agent_up : launched, noticed);
    b.instance.add("boot: config.sh + Listener -> `registered`", noticed, reported);
    b.instance.add("`registered` -> runpoolctl marks running", reported, running);
    // The table's own times are on the AWS clock (Date headers, 1 s resolution): how far off.
    const pool::InstanceRecord r = pool.record(id);
    if (launched) b.clock_created.push_back(static_cast<double>(r.created_ms - launched) / 1000);
    if (running && r.state == pool::State::kRunning) {
      b.clock_running.push_back(static_cast<double>(r.state_since_ms - running) / 1000);
    }
  }
  b.run.add("process start -> first log line", p.start_ms, first_log);
  b.run.add("label query + registration token", first_log, token);
  b.run.add("claim: long poll of the empty pool", token, claimed);
  b.run.add("CreateFleet + first record written", claimed, first_launched);
  b.run.add("first -> last record written", first_launched, last_launched);
  b.run.add("last `registered` -> last running", last_reported, last_running);
  b.run.add("last running -> command exits", last_running, p.end_ms);
  b.wall.push_back(p.seconds);
  if (first_launched && last_reported) {
    const double boot = static_cast<double>(last_reported - first_launched) / 1000;
    b.boot_window.push_back(boot);
    b.overhead.push_back(p.seconds - boot);
  }
}

}  // namespace

int run(const Options& o) {
  std::vector<int> sizes = o.get_ints("sizes", "1,10");
  print_header(kBench, "a provision with an empty pool, broken down");
  print_context(o);
  BenchPool pool(o.config(), o.get("stand-in-keys", "shared") == "fresh");
  pool.open();

  std::string summary;
  std::vector<double> ctl_cpu;
  for (int size : sizes) {
    const int trials = o.get_int("trials-" + std::to_string(size), default_trials(size));
    Breakdown b;
    RequestTally requests;
    int ok = 0;
    for (int t = 0; t < trials; ++t) {
      const std::string label = fmt::format("cold-{}-{}", size, t);
      reset_requests(pool.cloud_);
      CtlRun p = pool.run({"--log-level", "debug", "--json", "provision", "--count", std::to_string(size), "--label",
                           label, "--usage-class", "on-demand"});
      RequestTally req = read_requests(pool.cloud_);
      if (!p.ok() || p.report["launched"].asInt() != size) {
        print_fact(fmt::format("x{} trial {} FAILED (or not all launched)", size, t), p.result.out.substr(0, 300));
      } else {
        ++ok;
        ctl_cpu.push_back(p.cpu_s);
        add_requests(requests, req);
        break_down(pool, p, label, b);
      }
      if (p.ok()) {
        const Usage agents = pool.agents_usage();  // this trial's: the earlier ones are terminated
        b.agent_cpu.push_back(agents.cpu_s / size);
        b.agent_rss_mb.push_back(static_cast<double>(agents.peak_rss_kb) / 1024);
      }
      // Gone for good, never released: the next trial finds the pool empty again.
      std::vector<std::string> ids;
      for (const auto& i : p.report["instances"]) ids.push_back(i["instance_id"].asString());
      if (!ids.empty()) pool.aws_.ec2.terminate_instances(ids);
    }
    print_series(fmt::format("x{}: cold provision, start to all running", size), b.wall, "s");
    print_series(fmt::format("x{}: instances' boot (first record -> last `registered`)", size), b.boot_window, "s");
    print_series(fmt::format("x{}: overhead outside the boot", size), b.overhead, "s");
    b.run.print(fmt::format("x{}: ", size));
    b.instance.print(fmt::format("x{}: per instance, ", size));
    print_series(fmt::format("x{}: table created_at - log of its write", size), b.clock_created, "s");
    print_series(fmt::format("x{}: table state_since(running) - log", size), b.clock_running, "s");
    print_series(fmt::format("x{}: agent CPU, start to running (each)", size), b.agent_cpu, "s");
    print_series(fmt::format("x{}: agent peak RSS (largest)", size), b.agent_rss_mb, "MB");
    if (ok > 0) {
      print_fact(fmt::format("x{}: CreateFleet calls per provision", size),
                 fmt::format("{:.1f}", static_cast<double>(requests.op(requests.controller, "ec2", "CreateFleet")) / ok));
      long tokens = 0;
      for (const auto& [route, n] : requests.controller["github"]) {
        if (route.find("registration-token") != std::string::npos) tokens += n;
      }
      print_fact(fmt::format("x{}: registration-token requests per provision", size),
                 fmt::format("{:.1f}", static_cast<double>(tokens) / ok));
    }
    print_requests(requests, ok, fmt::format("x{} cold provision", size));
    summary += fmt::format("{}x{}: {:.2f} s of {:.2f} s outside the boot (p50)", summary.empty() ? "" : "; ", size,
                           percentile(b.overhead, 50), percentile(b.wall, 50));
  }
  print_costs(pool, ctl_cpu);
  print_fact("host load at end", host_load());
  print_summary(kBench, summary);
  pool.close();
  return 0;
}

}  // namespace runpool::bench

int main(int argc, char** argv) {
  return runpool::bench::bench_main(argc, argv, "cold_provision_bench", runpool::bench::run);
}
