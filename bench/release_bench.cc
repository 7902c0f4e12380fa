// Release: `runpoolctl release --label L` of N running runners until every instance is advertised
// in the pool again — from the command's start to the last pool message being visible (its
// SentTimestamp) — for N = 1, 10 and 50; also per instance, and where the time goes (runpoolctl's
// log and the agent's console). Each trial first provisions N warm from the pool (not measured).
//
//   release_bench [--sizes 1,10,50] [--trials-1 10] [--trials-10 5] [--trials-50 3] [--set key=value]…
#include "bench/bench_pool.h"

namespace runpool::bench {
namespace {

constexpr const char* kBench = "release_bench";
constexpr double kTarget = 2.0;

int default_trials(int size) { return size <= 1 ? 10 : size <= 10 ? 5 : 3; }

// instance id -> SentTimestamp of its pool message for `generation` (received, then visible again).
std::map<std::string, int64_t> sent_times(BenchPool& pool, const std::map<std::string, int64_t>& generations) {
  const std::string url = pool.queue_url();
  std::map<std::string, int64_t> sent;
  std::vector<std::string> handles;
  for (int round = 0; round < 20 && sent.size() < generations.size(); ++round) {
    auto got = pool.aws_.sqs.receive_messages({.queue_url = url, .max_messages = 10, .wait_seconds = 1,
                                               .visibility_timeout = 30, .system_attributes = {"SentTimestamp"}});
    if (got.empty()) break;
    for (const auto& m : got) {
      handles.push_back(m.receipt_handle);
      const Json::Value body = parse_json(m.body, "pool message");
      auto it = generations.find(body["instance_id"].asString());
      if (it != generations.end() && body["generation"].asInt64() == it->second && m.sent_time()) {
        sent[it->first] = to_epoch_ms(*m.sent_time());
      }
    }
  }
  for (const auto& h : handles) pool.aws_.sqs.change_message_visibility(url, h, 0);
  return sent;
}

}  // namespace

int run(const Options& o) {
  std::vector<int> sizes = o.get_ints("sizes", "1,10,50");
  std::sort(sizes.begin(), sizes.end());
  print_header(kBench, "release N running runners until each is advertised in the pool again");
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
    std::vector<double> all_advertised, command, per_instance, busy;
    Phases phases;
    RequestTally requests;
    int ok = 0;
    for (int t = 0; t < trials; ++t) {
      const std::string label = fmt::format("rel-{}-{}", size, t);
      CtlRun p = pool.provision(label, size);
      if (!p.ok()) throw std::runtime_error("provision " + label + " failed: " + describe(p.result));
      std::map<std::string, int64_t> generations;
      for (const auto& i : p.report["instances"]) generations[i["instance_id"].asString()] = i["generation"].asInt64();

      reset_requests(pool.cloud_);
      CtlRun r = pool.release(label);
      RequestTally req = read_requests(pool.cloud_);  // before the benchmark's own reads below
      if (!r.ok() || r.report["returned"].size() != generations.size()) {
        print_fact(fmt::format("x{} trial {} FAILED", size, t), r.result.out.substr(0, 300));
        continue;
      }
      ++ok;
      command.push_back(r.seconds);
      busy.push_back(r.host_cores_busy);
      ctl_cpu.push_back(r.cpu_s);
      add_requests(requests, req);
      const std::map<std::string, int64_t> sent = sent_times(pool, generations);
      int64_t last = 0;
      const std::vector<Json::Value> log = r.log();
      for (const auto& [id, g] : generations) {
        auto s = sent.find(id);
        if (s == sent.end()) continue;
        last = std::max(last, s->second);
        per_instance.push_back(static_cast<double>(s->second - r.start_ms) / 1000);
        const std::string console = pool.console(id);
        const std::string gen = std::to_string(g);
        const int64_t drain_written = log_time(log, "instance " + id + " draining (generation " + gen + ")");
        const int64_t noticed = console_time(console, "draining generation " + gen + ":");
        const int64_t stopped = console_time(console, "generation " + gen + " goes on to deregistration");
        const int64_t removed = console_time(console, "deregistered runner " + pool.pool_name_ + "-" + id + "-g" + gen);
        const int64_t drained = console_time(console, "generation " + gen + " drained, deregistered and cleaned");
        const int64_t returned = log_time(log, "instance " + id + " returned to the ");
        phases.add("start -> draining written (runpoolctl)", r.start_ms, drain_written);
        phases.add("draining -> agent sees it", drain_written, noticed);
        phases.add("agent: runner stops (stock drain: one long poll, deregistration)", noticed, stopped);
        phases.add("agent: runner stopped -> config.sh remove done", stopped, removed);
        phases.add("agent: clean, `drained` written", removed, drained);
        phases.add("`drained` -> idle + message sent (runpoolctl)", drained, returned);
      }
      if (sent.size() == generations.size()) {
        all_advertised.push_back(static_cast<double>(last - r.start_ms) / 1000);
      } else {
        print_fact(fmt::format("x{} trial {}", size, t),
                   fmt::format("only {} of {} pool messages found", sent.size(), generations.size()));
      }
    }
    print_series(fmt::format("x{}: release, start to all advertised", size), all_advertised, "s", kTarget);
    print_series(fmt::format("x{}: release command, start to exit", size), command, "s");
    print_series(fmt::format("x{}: per instance, start to advertised", size), per_instance, "s");
    phases.print(fmt::format("x{}: ", size));
    print_series(fmt::format("x{}: machine's CPU busy meanwhile", size), busy,
                 fmt::format("cores (of {})", sysconf(_SC_NPROCESSORS_ONLN)));
    print_requests(requests, ok, fmt::format("x{} release", size));
    if (all_advertised.empty()) continue;
    summary += fmt::format("{}x{} p95 {:.2f} s{}", summary.empty() ? "" : ", ", size, percentile(all_advertised, 95),
                           percentile(all_advertised, 95) <= kTarget ? "" : " (MISSED)");
  }
  print_costs(pool, ctl_cpu);
  print_fact("host load at end", host_load());
  print_summary(kBench, fmt::format("release to all advertised, target p95 <= {:g} s: {}", kTarget, summary));
  pool.close();
  return 0;
}

}  // namespace runpool::bench

int main(int argc, char** argv) {
  return runpool::bench::bench_main(argc, argv, "release_bench", runpool::bench::run);
}
