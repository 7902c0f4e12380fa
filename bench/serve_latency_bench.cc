// Demand-driven pools: a job queued with `runs-on: <scale set>` to its runner starting it, through
// `runpoolctl serve`, for N = 1, 10 and 50 jobs queued at once, three ways:
//   armed — N runners kept listening (scale_set_min_armed = N): the job goes straight to one;
//   warm  — N instances idle in the pool: serve claims them with a JIT configuration at demand;
//   cold  — an empty pool: serve launches N instances.
// The times are the GitHub stand-in broker's own (the job's queuedAt and startedAt). Beside them:
// the requests serve and the agents sent per job. The same jobs through provision/release would
// add a hosted runner's start for the provision job, which the local cloud cannot show.
//
// First, serve idle: one runner armed and no job for --idle-window seconds, serve's own requests
// counted and given per hour (target: at most 60 table reads an hour besides the lease's renewals).
//
//   serve_latency_bench [--sizes 1,10,50] [--trials 3] [--idle-window 300] [--serve-logs DIR] [--set key=value]…
// --serve-logs keeps each round's serve log (JSON lines) as DIR/<round>.log, to tell where a
// round's time went. --idle-window 0 skips the idle measurement.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "bench/bench_pool.h"

namespace runpool::bench {
namespace {

constexpr const char* kBench = "serve_latency_bench";
constexpr const char* kScaleSet = "bench-serve";

class ServePool : public BenchPool {
 public:
  using BenchPool::BenchPool;
  using E2eTest::queue_job;
  using E2eTest::job;

  std::unique_ptr<controller::testing::CtlProcess> serve(int min_armed, int max_runners) {
    return start_ctl({"--set", "scale_set_min_armed=" + std::to_string(min_armed), "--set",
                      "scale_set_max_runners=" + std::to_string(max_runners), "serve"});
  }
  int armed() {
    int n = 0;
    for (const auto& r : records()) n += (r.state == pool::State::kRunning && !r.busy && r.label == kScaleSet) ? 1 : 0;
    return n;
  }
  bool all_idle() {
    for (const auto& r : records()) {
      if (r.state != pool::State::kIdle && r.state != pool::State::kTerminated) return false;
    }
    return true;
  }
};

std::string g_serve_logs;  // --serve-logs

void stop(controller::testing::CtlProcess& serve, const std::string& round) {
  serve.signal(SIGTERM);
  const controller::testing::CtlResult r = serve.wait(std::chrono::seconds(60));
  if (!g_serve_logs.empty()) std::ofstream(g_serve_logs + "/" + round + ".log", std::ios::trunc) << r.err;
}

// The requests of one round: from the jobs' queueing to a settle time after the last one ended
// (the cleaning and the return to the pool included), with no read of the benchmark's own in it
// (it signs with the controller's key too).
RequestTally settle_and_count(ServePool& pool) {
  std::this_thread::sleep_for(std::chrono::seconds(5));
  return read_requests(pool.cloud_);
}

// Queues `n` jobs at once and waits for them; each one's queued -> started, in seconds.
std::vector<double> run_jobs(ServePool& pool, int n, const std::string& tag) {
  std::vector<int64_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(pool.queue_job(kScaleSet, tag + "-" + std::to_string(i), "true", 200));
  std::vector<double> out;
  for (int64_t id : ids) {
    // Until it ends: completed, or lost (its runner stopped renewing its lock) or canceled.
    controller::e2e::eventually(
        [&] {
          const std::string state = pool.job(id)["state"].asString();
          return state == "completed" || state == "lost" || state == "canceled";
        },
        std::chrono::minutes(5));
    const Json::Value j = pool.job(id);
    if (j["state"].asString() != "completed" || j["startedAt"].isNull()) {
      print_fact(tag + " job " + std::to_string(id) + " did not run", write_json(j));
      // Its runner's instance, to tell why: the agent's and the runner's own lines.
      for (const auto& r : pool.records()) {
        if (!j["runnerName"].asString().empty() && j["runnerName"].asString().find(r.instance_id) != std::string::npos) {
          std::printf("--- console of %s\n%s\n", r.instance_id.c_str(), pool.console(r.instance_id).c_str());
        }
      }
      continue;
    }
    out.push_back((j["startedAt"].asDouble() - j["queuedAt"].asDouble()) / 1000);
  }
  return out;
}

// serve with one runner armed and nothing to do: what it asks of AWS and GitHub per hour. Counted
// after a settling minute (the session's first statistics, the runner marked running), so the
// window holds only the quiet set's passes, the lease's renewals and the long polls.
void measure_idle(ServePool& pool, int window_s) {
  auto serve = pool.serve(1, 1);
  controller::e2e::eventually([&] { return pool.armed() >= 1; }, std::chrono::minutes(5));
  std::this_thread::sleep_for(std::chrono::seconds(70));
  reset_requests(pool.cloud_);
  std::this_thread::sleep_for(std::chrono::seconds(window_s));
  const RequestTally t = read_requests(pool.cloud_);
  stop(*serve, "idle");
  const double hours = window_s / 3600.0;
  for (const char* service : {"dynamodb", "sqs", "ec2", "github"}) {
    print_fact(fmt::format("idle serve, one runner armed: runpoolctl {} requests per hour", service),
               describe_requests(t, t.controller, service, hours));
  }
  const double queries = static_cast<double>(t.op(t.controller, "dynamodb", "Query")) / hours;
  print_fact("idle serve: table Queries per hour (target <= 60)",
             fmt::format("{:.0f} ({})", queries, queries <= 60 ? "target met" : "target MISSED"));
}

}  // namespace

int run(const Options& o) {
  std::vector<int> sizes = o.get_ints("sizes", "1,10,50");
  std::sort(sizes.begin(), sizes.end());
  const int trials = o.get_int("trials", 3);
  g_serve_logs = o.get("serve-logs", "");
  if (!g_serve_logs.empty()) std::filesystem::create_directories(g_serve_logs);
  print_header(kBench, "job queued -> started through runpoolctl serve: armed, warm and cold");
  print_context(o);
  std::vector<std::string> config = {std::string("scale_set_name = ") + kScaleSet};
  config.insert(config.end(), o.config().begin(), o.config().end());
  ServePool pool(config);
  pool.open();
  // GitHub cancels (and requeues) an acquired job no runner takes in time; the stand-in's timeout
  // is compressed to 20 s. Many runners starting at once on a small machine take longer than that,
  // and a cancelled job would hide its wait: the benchmark lets every job wait for its runner.
  // Likewise a running job's lock: GitHub's lasts 10 min and the runner renews it every minute;
  // the test suites compress it to 3 s, which 50 runners on 2 cores cannot always keep renewed.
  Json::Value gh;
  gh["scaleSetAssignTimeoutMs"] = 600000;
  gh["lockExpiryMs"] = 600000;
  pool.cloud_.control("POST", "/_control/github/settings", gh);
  print_fact("GitHub's assign timeout and job lock", "10 min each, as on GitHub (the suites compress them to 20 s and 3 s)");
  const int filled = fill_for_sizes(pool, sizes);
  if (filled == 0) {
    print_summary(kBench, "could not fill a pool of even one instance on this machine");
    return 1;
  }
  if (const int idle_window = o.get_int("idle-window", 300); idle_window > 0) {
    measure_idle(pool, idle_window);
    controller::e2e::eventually([&] { return pool.all_idle(); }, std::chrono::minutes(5));
  }
  std::string summary;
  for (int size : sizes) {
    std::map<std::string, std::vector<double>> latency;
    std::map<std::string, RequestTally> requests;
    std::map<std::string, int> jobs;
    for (int t = 0; t < trials; ++t) {
      // Armed: N runners listening before the jobs come.
      {
        auto serve = pool.serve(size, size);
        controller::e2e::eventually([&] { return pool.armed() >= size; }, std::chrono::minutes(5));
        reset_requests(pool.cloud_);
        auto v = run_jobs(pool, size, fmt::format("armed-{}-{}", size, t));
        // The job, its instance's cleaning and the re-arming: what each job served armed costs.
        add_requests(requests["armed"], settle_and_count(pool));
        jobs["armed"] += static_cast<int>(v.size());
        latency["armed"].insert(latency["armed"].end(), v.begin(), v.end());
        stop(*serve, fmt::format("armed-{}-{}", size, t));
      }
      // Warm: the armed runners removed, every instance idle in the pool.
      {
        auto serve = pool.serve(0, size);
        controller::e2e::eventually([&] { return pool.all_idle(); }, std::chrono::minutes(5));
        const size_t before = pool.records().size();
        reset_requests(pool.cloud_);
        auto v = run_jobs(pool, size, fmt::format("warm-{}-{}", size, t));
        add_requests(requests["warm"], settle_and_count(pool));
        // A claim that cannot take the pool's instances in time launches the rest: then "warm"
        // was partly cold.
        if (pool.records().size() > before) {
          print_fact(fmt::format("x{} warm round {}: launched", size, t),
                     fmt::format("{} instance(s) (claims fell short)", pool.records().size() - before));
        }
        controller::e2e::eventually([&] { return pool.all_idle(); }, std::chrono::minutes(5));
        jobs["warm"] += static_cast<int>(v.size());
        latency["warm"].insert(latency["warm"].end(), v.begin(), v.end());
        stop(*serve, fmt::format("warm-{}-{}", size, t));
      }
    }
    // Cold, once per size: the pool emptied (every idle instance retired as outdated), serve
    // launches; the pool is then as full as before for the next size.
    {
      CtlRun retired = pool.run({"--json", "retire", "--ami", "ami-0000000000000bec1"});
      if (!retired.ok()) throw std::runtime_error("emptying the pool failed: " + describe(retired.result));
      controller::e2e::eventually([&] { return pool.count_in(pool::State::kIdle) == 0; }, std::chrono::minutes(2));
      auto serve = pool.serve(0, size);
      reset_requests(pool.cloud_);
      auto v = run_jobs(pool, size, fmt::format("cold-{}", size));
      add_requests(requests["cold"], settle_and_count(pool));
      controller::e2e::eventually([&] { return pool.all_idle(); }, std::chrono::minutes(5));
      jobs["cold"] += static_cast<int>(v.size());
      latency["cold"] = v;
      stop(*serve, fmt::format("cold-{}", size));
      if (pool.count_in(pool::State::kIdle) < filled) pool.fill(filled - pool.count_in(pool::State::kIdle));
    }
    for (const char* way : {"armed", "warm", "cold"}) {
      std::optional<double> target;
      if (size == 1 && std::string(way) == "armed") target = 1.0;
      if (size == 1 && std::string(way) == "warm") target = 2.0;
      print_series(fmt::format("x{} {}: job queued -> started", size, way), latency[way], "s", target);
      print_requests(requests[way], jobs[way], fmt::format("x{} {} job", size, way));
      if (latency[way].empty()) continue;
      summary += fmt::format("{}x{} {} p95 {:.2f} s{}", summary.empty() ? "" : ", ", size, way,
                             percentile(latency[way], 95),
                             target ? (percentile(latency[way], 95) <= *target ? " (target met)" : " (target MISSED)")
                                    : "");
    }
  }
  print_fact("host load at end", host_load());
  if (filled < o.get_ints("sizes", "1,10,50").back()) summary += fmt::format("; largest pool that ran here: {}", filled);
  print_summary(kBench, summary);
  pool.close();
  return 0;
}

}  // namespace runpool::bench

int main(int argc, char** argv) {
  return runpool::bench::bench_main(argc, argv, "serve_latency_bench", runpool::bench::run);
}
