// Idle cost: the requests an idle pool instance makes — its agent's heartbeats and record polls —
// per idle instance-hour, at the agent's default intervals, counted by the local cloud per caller
// (the instances' role credentials) over a measured window and extrapolated to an hour. Nothing
// else runs meanwhile: no runpoolctl, no runner (an idle instance has none), and the benchmark
// itself makes no request until the window ends.
//
//   idle_cost_bench [--instances 3] [--window 300] [--set key=value]…
//
// Target: <= 4,000 DynamoDB requests per idle instance-hour, while meeting the warm-claim target
// (warm_claim_bench measures that, at the same intervals).
#include "bench/bench_pool.h"

namespace runpool::bench {
namespace {

constexpr const char* kBench = "idle_cost_bench";
constexpr double kDynamoTarget = 4000;

}  // namespace

int run(const Options& o) {
  const int instances = o.get_int("instances", 3);
  const int window_s = o.get_int("window", 300);
  print_header(kBench, "requests per idle instance-hour (heartbeats and record polls)");
  print_context(o);

  BenchPool pool(o.config(), o.get("stand-in-keys", "shared") == "fresh");
  pool.open();
  pool.fill(instances);
  if (!controller::e2e::eventually([&] { return pool.count_in(pool::State::kIdle) == instances; },
                                   std::chrono::seconds(120))) {
    throw std::runtime_error("the pool did not settle with every instance idle");
  }
  std::this_thread::sleep_for(std::chrono::seconds(10));  // cleaning done, pool messages sent

  reset_requests(pool.cloud_);
  pool.cloud_.control("POST", "/_control/stats/reset");  // IMDS is counted there (no proxy in front of it)
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(window_s));
  const RequestTally t = read_requests(pool.cloud_);
  const Json::Value stats = pool.cloud_.control("GET", "/_control/stats");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int still_idle = pool.count_in(pool::State::kIdle);

  // Per idle instance-hour.
  const double per = instances * seconds / 3600.0;
  print_fact("idle instances / window", fmt::format("{} / {:.0f} s ({} still idle at the end)", instances, seconds,
                                                    still_idle));
  for (const char* service : {"dynamodb", "sqs", "ec2"}) {
    print_fact(fmt::format("agents' {} per idle instance-hour", service), describe_requests(t, t.instances, service, per));
  }
  print_fact("runners' GitHub protocol per idle instance-hour", describe_requests(t, t.instances, "github-runner", per));
  long imds = 0;
  std::string imds_ops;
  for (const auto& op : stats["imds"].getMemberNames()) {
    const long n = stats["imds"][op]["requests"].asInt64();
    imds += n;
    imds_ops += fmt::format("{}{} {:.0f}", imds_ops.empty() ? "" : ", ", op, static_cast<double>(n) / per);
  }
  print_fact("IMDS per idle instance-hour", fmt::format("{:.0f} ({})", static_cast<double>(imds) / per, imds_ops));
  for (const char* service : {"dynamodb", "sqs", "ec2", "github"}) {
    const long n = t.total(t.controller, service);
    print_fact(fmt::format("controller-key {} requests in the window", service),
               n == 0 ? "0 (nothing but the agents spoke)" : fmt::format("UNEXPECTED: {}", n));
  }
  std::vector<double> each;
  for (const auto& [who, n] : t.per_instance_total) each.push_back(static_cast<double>(n) * 3600.0 / seconds);
  print_series("AWS requests per instance-hour, by instance", each, "requests");

  const double dynamo = static_cast<double>(t.total(t.instances, "dynamodb")) / per;
  print_fact("host load at end", host_load());
  print_summary(kBench, fmt::format("{:.0f} DynamoDB requests per idle instance-hour (GetItem {:.0f}, UpdateItem "
                                    "{:.0f}; target <= {:g}: {}), SQS {:.0f}, GitHub {:.0f}",
                                    dynamo, t.op(t.instances, "dynamodb", "GetItem") / per,
                                    t.op(t.instances, "dynamodb", "UpdateItem") / per, kDynamoTarget,
                                    dynamo <= kDynamoTarget ? "met" : "MISSED", t.total(t.instances, "sqs") / per,
                                    (t.total(t.instances, "github-runner") + t.total(t.controller, "github")) / per));
  pool.close();
  return 0;
}

}  // namespace runpool::bench

int main(int argc, char** argv) {
  return runpool::bench::bench_main(argc, argv, "idle_cost_bench", runpool::bench::run);
}
