// Control plane at scale: `runpoolctl refresh`, `status` and `scale-down --dry-run` over a shared
// pool of n running runners (n = 1,000 and 10,000 by default): n records in the table, n instances
// in EC2, n runners on GitHub (bench/scale_seed.h). Per command: wall time, CPU and peak RSS of the
// runpoolctl process (wait4), and its requests as the local cloud counted them — DynamoDB Scan
// pages, DescribeInstances pages, GitHub list pages — which should grow as n / page size.
//
//   control_plane_bench [--sizes 1000,5000,10000] [--runs 3] [--idle-every 20] [--quota-percent 4]
//                       [--latency-ms github=300,ec2=150,dynamodb=10] [--ctl PATH] [--set key=value]…
//
// --latency-ms adds that much to every request of a service (the local cloud answers in about a
// millisecond; real services do not), so wall times can be read for a real network too.
// --ctl measures another runpoolctl build (a what-if: say so when quoting its figures).
// The state is steady, so `refresh` finds nothing to change and measures its reading cost; it runs
// for real. `scale-down` runs with --dry-run: a real pass would start drains of the idle runners
// over the quota and then wait (scale_down_drain_wait) for agents this benchmark does not run.
#include <map>

#include "bench/bench_support.h"
#include "bench/scale_ctl.h"
#include "bench/scale_seed.h"
#include "common/pool/lease_store.h"
#include "common/pool/runner_listing.h"

namespace runpool::bench {
namespace {

constexpr const char* kBench = "control_plane_bench";
constexpr double kTargetSeconds = 10;

struct Command {
  std::string name;
  std::vector<std::string> args;
  // Before each run: refresh's runner-listing marker aged, so the pass lists all of GitHub's
  // runners (the pass of the slower cadence) instead of looking up what changed.
  bool full_listing = false;
};

struct Figures {
  std::vector<double> wall, cpu, rss_mb, cloud_cpu;
  RequestTally last;  // every run asks the same; the last run's requests
  std::string check;  // what the answer said, checked against the seeded state
};

long count_of(const RequestTally& t, const std::string& service, const std::string& op) {
  return t.op(t.controller, service, op);
}
// Makes the next refresh list in full: the marker's last listing put far in the past, written as
// any pass writes it (conditionally on the generation read).
void age_listing_marker(pool::LeaseStore& leases, const std::string& pool) {
  const std::string name = pool::runner_listing_marker(pool);
  std::optional<pool::Lease> m = leases.get(name);
  if (!m) return;  // never listed: the pass lists anyway
  pool::Lease old = *m;
  old.generation = m->generation + 1;
  old.expires_ms = 0;
  if (!leases.replace(old, m->generation)) throw std::runtime_error("the runner-listing marker changed meanwhile");
}

long github_list_pages(const RequestTally& t) {
  long n = 0;
  if (auto it = t.controller.find("github"); it != t.controller.end()) {
    for (const auto& [route, c] : it->second) {
      if (route.rfind("GET ", 0) == 0 && route.size() > 16 && route.substr(route.size() - 16) == "/actions/runners") n += c;
    }
  }
  return n;
}

// What the answer must say for the seeded state; a mismatch is printed, never hidden.
std::string check(const std::string& cmd, const Json::Value& report, const ScaleSeeder& seed, int quota) {
  if (cmd.rfind("refresh", 0) == 0) {
    const int actions = static_cast<int>(report["actions"].size());
    const std::string listing = fmt::format("; runners {} ({} looked up), {} GitHub requests",
                                            report["runner_listing"].asString(), report["runners_looked_up"].asInt(),
                                            report["github_requests"].asInt64());
    return (actions == 0 ? "0 actions (steady state)" : fmt::format("UNEXPECTED: {} actions", actions)) + listing;
  }
  if (cmd == "status") {
    const int listed = static_cast<int>(report["instances"].size());
    return listed == seed.total() ? fmt::format("{} instances listed", listed)
                                  : fmt::format("UNEXPECTED: {} listed of {}", listed, seed.total());
  }
  std::map<std::string, int> rules;
  for (const auto& d : report["decisions"]) ++rules[d["decision"].asString() + " [" + d["rule"].asString() + "]"];
  std::string out;
  for (const auto& [rule, n] : rules) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, rule);
  const int drains = report["summary"]["drain"].asInt();
  const int want = std::max(0, seed.idle() - quota);
  if (drains != want) out += fmt::format(" — UNEXPECTED: {} drains, {} expected", drains, want);
  return out;
}

Figures measure(runpool::testing::LocalCloud& cloud, const controller::testing::CtlPool& pool, const Command& c,
                int runs, const ScaleSeeder& seed, int quota, const std::string& binary, pool::LeaseStore& leases) {
  Figures f;
  const pid_t lc = local_cloud_pid();
  for (int i = 0; i < runs; ++i) {
    if (c.full_listing) age_listing_marker(leases, "scale");
    cloud.control("DELETE", "/_control/github/ratelimits");
    reset_requests(cloud);
    const double lc_before = lc > 0 ? process_usage(lc).cpu_s : 0;
    ScaleRun r = run_scale_ctl(pool, c.args, std::chrono::seconds(300), binary);
    const double lc_after = lc > 0 ? process_usage(lc).cpu_s : 0;
    f.last = read_requests(cloud);
    if (r.exit_code != 0) {
      f.check = fmt::format("FAILED (exit {}): {}", r.exit_code, r.err.substr(0, 400));
      continue;
    }
    f.wall.push_back(r.wall_s);
    f.cpu.push_back(r.cpu_s());
    f.rss_mb.push_back(static_cast<double>(r.peak_rss_kb) / 1024);
    f.cloud_cpu.push_back(lc_after - lc_before);
    try {
      f.check = check(c.name, parse_json(r.out, c.name), seed, quota);
    } catch (const std::exception& e) {
      f.check = std::string("UNEXPECTED: unreadable answer: ") + e.what();
    }
  }
  return f;
}

void print_figures(const std::string& what, int n, const Figures& f, int scan_items) {
  print_series(what + ": wall time", f.wall, "s", kTargetSeconds);
  print_series(what + ": runpoolctl CPU (user+sys)", f.cpu, "s");
  print_series(what + ": runpoolctl peak RSS", f.rss_mb, "MB");
  print_series(what + ": local cloud CPU meanwhile", f.cloud_cpu, "s");
  const long scans = count_of(f.last, "dynamodb", "Scan");
  const long describes = count_of(f.last, "ec2", "DescribeInstances");
  const long lists = github_list_pages(f.last);
  print_fact(what + ": pages", fmt::format("Scan {}{}, DescribeInstances {} (n/1000 = {:.1f}), GitHub list {} "
                                           "(n/100 = {:.1f})",
                                           scans, scans ? fmt::format(" (~{} items/page)", scan_items / scans) : "",
                                           describes, n / 1000.0, lists, n / 100.0));
  for (const char* service : {"dynamodb", "sqs", "ec2", "github"}) {
    print_fact(fmt::format("{}: {} requests", what, service), describe_requests(f.last, f.last.controller, service, 1));
  }
  print_fact(what + ": answer", f.check);
}

}  // namespace

int run(const Options& o) {
  std::vector<int> sizes = o.get_ints("sizes", "1000,5000,10000");
  std::sort(sizes.begin(), sizes.end());
  const int runs = o.get_int("runs", 3);
  const int quota_percent = o.get_int("quota-percent", 4);
  print_header(kBench, "refresh, status and scale-down over n records, instances and runners");
  print_fact("host load at start", host_load());
  const std::string binary = o.get("ctl", "");
  print_fact("runpoolctl", binary.empty() ? std::string(RUNPOOL_CTL_BINARY) : binary + " (WHAT-IF build)");

  auto& cloud = runpool::testing::LocalCloud::shared();
  const std::string latency = o.get("latency-ms", "");
  std::stringstream latencies(latency);
  for (std::string part; std::getline(latencies, part, ',');) {
    const auto eq = part.find('=');
    if (eq == std::string::npos) throw std::runtime_error("--latency-ms takes service=ms,…");
    Json::Value knobs;
    knobs["service"] = part.substr(0, eq);
    knobs["latencyMs"] = std::stoi(part.substr(eq + 1));
    cloud.control("POST", "/_control/faults", knobs);
  }
  print_fact("added latency per request", latency.empty() ? "none (the local cloud's own)" : latency + " ms");
  // A large pool's listing cadence: the passes between full listings look runners up by id.
  std::string extra = "pool_mode = shared\nresource_classes = small=c7i.large\nrunner_listing_interval = 30m\n";
  for (const auto& line : o.config()) extra += line + "\n";
  controller::testing::CtlPool pool(cloud, "scale", "ctl-scale", extra);
  ScaleRun init = run_scale_ctl(pool, {"init"}, std::chrono::seconds(120));
  if (init.exit_code != 0) throw std::runtime_error("runpoolctl init failed: " + init.err);
  controller::testing::CloudClients aws(cloud);
  ScaleShape shape{.pool = "scale", .table = "ctl-scale", .labels = "self-hosted,linux,x64,small",
                   .reg_url = cloud.github_web() + "/acme/app", .idle_every = o.get_int("idle-every", 20)};
  ScaleSeeder seed(cloud, aws, shape);
  pool::DynamoLeaseStore leases(aws.db, "ctl-scale");

  std::string summary;
  for (int n : sizes) {
    const auto t0 = std::chrono::steady_clock::now();
    seed.add(n - seed.total());
    const int quota = seed.total() * quota_percent / 100;  // below the idle ones (n / idle-every): real drains
    print_fact(fmt::format("n={}: seeded", n),
               fmt::format("{} running shared runners, {} idle (quota {}), in {:.1f} s", seed.total(), seed.idle(),
                           quota, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
    const std::vector<Command> commands = {
        {"refresh (full listing)", {"--json", "refresh"}, true},
        {"refresh", {"--json", "refresh"}},
        {"status", {"--json", "status"}},
        {"scale-down", {"--json", "scale-down", "--dry-run", "--idle", std::to_string(quota)}},
    };
    std::string line;
    for (const auto& c : commands) {
      Figures f = measure(cloud, pool, c, runs, seed, quota, binary, leases);
      print_figures(fmt::format("n={} {}", n, c.name), n, f, seed.total());
      const double p95 = percentile(f.wall, 95);
      line += fmt::format("{}{} p95 {:.2f} s{}", line.empty() ? "" : ", ", c.name, p95,
                          f.wall.empty() ? " (FAILED)" : p95 <= kTargetSeconds ? "" : " (MISSED)");
    }
    summary += fmt::format("{}n={}: {}", summary.empty() ? "" : "; ", n, line);
  }
  print_fact("host load at end", host_load());
  print_summary(kBench, summary + fmt::format(" (target <= {:g} s each){}{}", kTargetSeconds,
                                              latency.empty() ? "" : "; added latency " + latency + " ms",
                                              binary.empty() ? "" : "; WHAT-IF runpoolctl " + binary));
  return 0;
}

}  // namespace runpool::bench

int main(int argc, char** argv) {
  return runpool::bench::bench_main(argc, argv, "control_plane_bench", runpool::bench::run);
}
