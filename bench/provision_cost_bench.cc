// Cost per provision and per release: the requests runpoolctl makes to DynamoDB, SQS, EC2 and
// GitHub for one warm provision, one cold provision and one release, per operation and per
// instance — counted by the local cloud per caller (`/_control/requests`; GitHub REST calls from
// `/_control/github/calls`), so the agents' own requests meanwhile are told apart (shown too).
// Checks that a provision asks GitHub for one registration token, not one per instance, and a
// release for one remove token.
//
//   provision_cost_bench [--sizes 1,10] [--trials 3] [--set key=value]…
//
// Cold provisions use the `large` class, whose queue nothing is ever released into, and their
// instances are terminated afterwards; warm ones claim from the `small` pool, filled first.
#include "bench/bench_pool.h"

namespace runpool::bench {
namespace {

constexpr const char* kBench = "provision_cost_bench";

long route_count(const RequestTally& t, const std::string& needle) {
  long n = 0;
  auto it = t.controller.find("github");
  if (it == t.controller.end()) return 0;
  for (const auto& [route, c] : it->second) {
    if (route.find(needle) != std::string::npos) n += c;
  }
  return n;
}

long controller_total(const RequestTally& t) {
  long n = 0;
  for (const char* s : {"dynamodb", "sqs", "ec2", "github"}) n += t.total(t.controller, s);
  return n;
}

// Prints one kind of operation's tally; the token check for `token_route`.
std::string report(const std::string& what, const RequestTally& sum, int ops, int size, const std::string& token_route) {
  if (ops == 0) {
    print_fact(what, "no successful run");
    return what + ": no data";
  }
  print_requests(sum, ops, what);
  const double per_op = static_cast<double>(controller_total(sum)) / ops;
  print_fact(fmt::format("runpoolctl requests per {} (all services)", what), fmt::format("{:.1f}", per_op));
  print_fact(fmt::format("runpoolctl requests per instance ({})", what), fmt::format("{:.1f}", per_op / size));
  const double tokens = static_cast<double>(route_count(sum, token_route)) / ops;
  print_fact(fmt::format("{} requests per {}", token_route, what),
             fmt::format("{:.1f} ({})", tokens, tokens == 1.0 ? "one per operation, not per instance" : "NOT one per operation"));
  return fmt::format("{:.0f} requests ({:.1f}/instance, {} {:.0f})", per_op, per_op / size, token_route, tokens);
}

}  // namespace

int run(const Options& o) {
  const std::vector<int> sizes = o.get_ints("sizes", "1,10");
  const int trials = o.get_int("trials", 3);
  print_header(kBench, "requests per provision and per release");
  print_context(o);
  BenchPool pool(o.config(), o.get("stand-in-keys", "shared") == "fresh");
  pool.open();

  std::string summary;
  std::vector<double> ctl_cpu;
  for (int size : sizes) {
    RequestTally cold, warm, release;
    int n_cold = 0, n_warm = 0, n_release = 0;
    for (int t = 0; t < trials; ++t) {
      const std::string label = fmt::format("cost-cold-{}-{}", size, t);
      reset_requests(pool.cloud_);
      CtlRun p = pool.provision(label, size, {"--resource-class", "large"});
      RequestTally req = read_requests(pool.cloud_);
      if (p.ok() && p.report["launched"].asInt() == size) {
        add_requests(cold, req);
        ctl_cpu.push_back(p.cpu_s);
        ++n_cold;
      }
      std::vector<std::string> ids;
      for (const auto& i : p.report["instances"]) ids.push_back(i["instance_id"].asString());
      if (!ids.empty()) pool.aws_.ec2.terminate_instances(ids);
    }
    pool.fill(size);
    for (int t = 0; t < trials; ++t) {
      const std::string label = fmt::format("cost-warm-{}-{}", size, t);
      reset_requests(pool.cloud_);
      CtlRun p = pool.provision(label, size);
      RequestTally req = read_requests(pool.cloud_);
      if (p.ok() && p.report["warm"].asInt() == size) {
        add_requests(warm, req);
        ctl_cpu.push_back(p.cpu_s);
        ++n_warm;
      }
      reset_requests(pool.cloud_);
      CtlRun r = pool.release(label);
      req = read_requests(pool.cloud_);
      if (!r.ok()) throw std::runtime_error("release " + label + " failed: " + describe(r.result));
      if (static_cast<int>(r.report["returned"].size()) == size) {
        add_requests(release, req);
        ctl_cpu.push_back(r.cpu_s);
        ++n_release;
      }
    }
    summary += (summary.empty() ? "" : "; ") + fmt::format("x{}: warm provision ", size);
    summary += report(fmt::format("x{} warm provision", size), warm, n_warm, size, "registration-token");
    summary += ", cold provision " + report(fmt::format("x{} cold provision", size), cold, n_cold, size, "registration-token");
    summary += ", release " + report(fmt::format("x{} release", size), release, n_release, size, "remove-token");
  }
  print_costs(pool, ctl_cpu);
  print_fact("host load at end", host_load());
  print_summary(kBench, summary);
  pool.close();
  return 0;
}

}  // namespace runpool::bench

int main(int argc, char** argv) {
  return runpool::bench::bench_main(argc, argv, "provision_cost_bench", runpool::bench::run);
}
