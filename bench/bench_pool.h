// The pool a run-scoped benchmark measures: the e2e harness's (tests/e2e/e2e_fixture.h) — a pool
// and table of its own, the real runpoolctl, real runpool-agents on local-cloud instances running
// the stand-in runner (drain-capable, registration near-instant) — but with runpoolctl's and the
// agent's default timings instead of the e2e tests' faster ones, so the figures are what an
// installation gets. `--set key=value` adds runpoolctl keys (later lines win) for what-if runs.
#pragma once

#include <cctype>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "bench/bench_support.h"
#include "tests/e2e/e2e_fixture.h"

namespace runpool::bench {

using controller::testing::CtlResult;
using controller::testing::describe;

// A 2048-bit RSA private key, PEM. The stand-in runners of a benchmark register with this one key
// (`.standin.json` "rsaKey") instead of generating one each: on EC2 each runner generates its key
// on its own CPU, here 50 generations at once would cost 5-15 s of the 2 cores.
inline std::string rsa_key_pem() {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_RSA_gen(2048), EVP_PKEY_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!key || !bio || PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    throw std::runtime_error("could not make the stand-in runners' RSA key");
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// One runpoolctl run, timed.
struct CtlRun {
  CtlResult result;
  Json::Value report;                // its --json answer (null when it printed none)
  int64_t start_ms = 0, end_ms = 0;  // wall clock, as the local cloud's records and messages
  double seconds = 0;                // steady clock
  double cpu_s = 0;                  // its user + system time
  double host_cores_busy = 0;        // the whole machine's CPU use meanwhile, in cores
  bool ok() const { return result.exit_code == 0; }
  // Its --log-format json lines (stderr), parsed.
  std::vector<Json::Value> log() const {
    std::vector<Json::Value> out;
    std::istringstream in(result.err);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] != '{') continue;
      try {
        out.push_back(parse_json(line, "log line"));
      } catch (const std::exception&) {
      }
    }
    return out;
  }
};

// Epoch ms of the first runpoolctl log line whose message contains `needle`; 0 when none.
inline int64_t log_time(const std::vector<Json::Value>& log, const std::string& needle) {
  for (const auto& l : log) {
    if (l["msg"].asString().find(needle) != std::string::npos) return l["ts_ms"].asInt64();
  }
  return 0;
}
// Epoch ms of an agent log line ("2026-01-01T10:00:00.123Z info …"); 0 for any other line.
inline int64_t line_time(const std::string& line) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(line.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &ms) != 7) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + ms;
}
// Epoch ms of the last agent log line of an instance's console that contains `needle` (the first
// agent line of all for ""); 0 when none.
inline int64_t console_time(const std::string& console, const std::string& needle) {
  int64_t found = 0;
  std::istringstream in(console);
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find(needle);
    // "generation 1" must not match "generation 12".
    if (at == std::string::npos) continue;
    if (!needle.empty() && std::isdigit(static_cast<unsigned char>(line[at + needle.size()]))) continue;
    if (int64_t t = line_time(line)) {
      found = t;
      if (needle.empty()) break;
    }
  }
  return found;
}

class BenchPool : public controller::e2e::E2eTest {
 public:
  // `fresh_keys`: each stand-in registration generates its own RSA key, as the real runner does
  // (--stand-in-keys fresh); by default they share one made here.
  explicit BenchPool(std::vector<std::string> extra_config = {}, bool fresh_keys = false)
      : extra_(std::move(extra_config)), fresh_keys_(fresh_keys) {}
  ~BenchPool() override { close(); }
  void TestBody() override {}

  // Sets the pool up (init included); throws when that fails.
  void open() {
    SetUp();
    if (HasFatalFailure() || !pool_ || !table_) throw std::runtime_error("could not set the benchmark's pool up");
    opened_ = true;
    Json::Value standin;
    standin["mode"] = "stock";  // the runner as released: the stock drain (labels, one poll, deregister)
    if (!fresh_keys_) {
      // The key a runner makes at registration, and the one GitHub puts in each just-in-time
      // configuration (made on GitHub's servers, not on the instance or the controller's machine).
      const std::string pem = rsa_key_pem();
      standin["rsaKey"] = pem;
      Json::Value gh;
      gh["jitKeyPem"] = pem;
      cloud_.control("POST", "/_control/github/settings", gh);
    }
    std::ofstream(std::filesystem::path(base_) / "runner-template" / ".standin.json", std::ios::trunc)
        << write_json(standin);
    print_fact("stand-in runners' keys",
               fresh_keys_ ? "a new 2048-bit RSA key per registration and per JIT configuration (as the real ones)"
                           : "one preset RSA key for every registration and JIT configuration (--stand-in-keys fresh: one each)");
  }
  // Terminates every instance of the pool.
  void close() {
    if (!opened_) return;
    opened_ = false;
    TearDown();
  }

  CtlRun run(const std::vector<std::string>& args, std::chrono::milliseconds timeout = std::chrono::minutes(20)) {
    std::vector<std::string> a = {"--log-format", "json"};
    a.insert(a.end(), args.begin(), args.end());
    CtlRun r;
    const Usage before = children_usage();
    const double busy = host_busy_s();
    r.start_ms = controller::e2e::now_ms();
    const auto t0 = std::chrono::steady_clock::now();
    r.result = pool_->run(a, {}, timeout);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.end_ms = controller::e2e::now_ms();
    r.cpu_s = children_usage().cpu_s - before.cpu_s;
    r.host_cores_busy = r.seconds > 0 ? (host_busy_s() - busy) / r.seconds : 0;
    if (!r.result.out.empty()) {
      try {
        r.report = parse_json(r.result.out, "runpoolctl --json");
      } catch (const std::exception&) {
      }
    }
    return r;
  }
  CtlRun provision(const std::string& label, int count, const std::vector<std::string>& more = {}) {
    return run(provision_args(label, count, more));
  }
  // A release that waits until its instances are back in the pool (--wait).
  CtlRun release(const std::string& label) { return run({"--json", "release", "--wait", "--label", label}); }
  // A release as a workflow runs it: it returns once the drains are written.
  CtlRun release_no_wait(const std::string& label) { return run({"--json", "release", "--label", label}); }

  // `count` instances idle in the pool: launched by a provision, then released. Throws if not.
  void fill(int count) {
    const std::string label = "fill-" + std::to_string(count) + "-" + std::to_string(++fills_);
    CtlRun p = provision(label, count);
    if (!p.ok()) throw std::runtime_error("filling the pool: provision failed: " + describe(p.result));
    CtlRun r = release(label);
    if (!r.ok()) throw std::runtime_error("filling the pool: release failed: " + describe(r.result));
  }
  int count_in(pool::State state) {
    int n = 0;
    for (const auto& r : records()) n += r.state == state ? 1 : 0;
    return n;
  }
  long visible_messages(const std::string& cls = "small") {
    return aws_.sqs.get_queue_attributes(queue_url(cls)).approximate_number_of_messages.value_or(-1);
  }
  // The agents of the pool's live instances: CPU so far (summed), the largest peak RSS.
  Usage agents_usage() {
    Usage u;
    for (const auto& r : records()) {
      if (r.state == pool::State::kTerminated || r.state == pool::State::kTerminating) continue;
      for (pid_t p : pids_matching(r.instance_id, "runpool-agent")) {
        Usage a = process_usage(p);
        u.cpu_s += a.cpu_s;
        u.peak_rss_kb = std::max(u.peak_rss_kb, a.peak_rss_kb);
      }
    }
    return u;
  }

  using E2eTest::aws_;
  using E2eTest::cloud_;
  using E2eTest::pool_name_;
  using E2eTest::console;
  using E2eTest::queue_url;
  using E2eTest::record;
  using E2eTest::records;

 protected:
  std::string more_config() const override {
    // runpoolctl's and the agent's defaults (docs/runpoolctl.md, docs/agent.md) for every key the
    // test harness sets faster; terminate_wait only speeds the clean-up up, never a measurement.
    std::string c =
        "poll_interval = 200ms\nclaim_wait = 1s\nprovision_timeout = 10m\nrelease_timeout = 15m\n"
        "cancel_drain_wait = 1m\nmax_heartbeat_age = 2m\nagent_heartbeat_interval = 30s\n"
        "agent_assignment_poll_interval = 1s\nagent_extra = terminate_wait=5s\n";
    for (const auto& line : extra_) c += line + "\n";
    return c;
  }

 private:
  std::vector<std::string> extra_;
  bool fresh_keys_ = false;
  bool opened_ = false;
  int fills_ = 0;
};

// Fills the pool with `want` instances or, when the machine cannot run that many agents and
// runners, the largest halving of it that fits (saying so); the size filled, 0 for none.
inline int fill_largest(BenchPool& pool, int want) {
  for (int size = want; size >= 1; size /= 2) {
    const long mem = mem_available_mb();
    const auto t0 = std::chrono::steady_clock::now();
    try {
      pool.fill(size);
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double busy = host_busy_s();
      std::this_thread::sleep_for(std::chrono::seconds(5));
      print_fact(fmt::format("pool filled with {}", size),
                 fmt::format("in {:.1f} s (cold provision + release); {} MB memory available before; "
                             "machine's CPU busy with them idle (5 s): {:.2f} cores",
                             took, mem, (host_busy_s() - busy) / 5));
      return size;
    } catch (const std::exception& e) {
      std::string why = e.what();
      print_fact(fmt::format("a pool of {} could NOT be filled here", size), why.substr(0, 400));
    }
  }
  return 0;
}

// fill_largest for the largest of `sizes` (ascending): the sizes beyond what was filled are
// dropped and the size filled ends the list. 0 (nothing filled) leaves `sizes` as it was.
inline int fill_for_sizes(BenchPool& pool, std::vector<int>& sizes) {
  const int filled = fill_largest(pool, sizes.back());
  if (filled == 0) return 0;
  sizes.erase(std::remove_if(sizes.begin(), sizes.end(), [&](int s) { return s > filled; }), sizes.end());
  if (sizes.empty() || sizes.back() != filled) sizes.push_back(filled);
  return filled;
}

// What the processes cost: runpoolctl per run (`ctl_cpu`: one sample per run), the agents of the
// pool's live instances and the local cloud, so far.
inline void print_costs(BenchPool& pool, const std::vector<double>& ctl_cpu) {
  print_series("runpoolctl CPU per run", ctl_cpu, "s");
  print_fact("runpoolctl peak RSS", fmt::format("{:.1f} MB", static_cast<double>(children_usage().peak_rss_kb) / 1024));
  if (const Usage agents = pool.agents_usage(); agents.peak_rss_kb > 0) {
    print_fact("agents of the live instances: CPU so far", fmt::format("{:.2f} s in all", agents.cpu_s));
    print_fact("agent peak RSS (largest)", fmt::format("{:.1f} MB", static_cast<double>(agents.peak_rss_kb) / 1024));
  }
  if (pid_t lc = local_cloud_pid(); lc > 0) {
    const Usage u = process_usage(lc);
    print_fact("local cloud (node) CPU so far / peak RSS",
               fmt::format("{:.1f} s / {:.1f} MB", u.cpu_s, static_cast<double>(u.peak_rss_kb) / 1024));
  }
}

// Prints what a benchmark ran on and with: the machine's load, the settings changed by --set.
inline void print_context(const Options& o) {
  print_fact("host load at start", host_load());
  const double busy = host_busy_s();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  print_fact("machine's CPU busy before start (2 s)", fmt::format("{:.2f} cores", (host_busy_s() - busy) / 2));
  std::string set;
  for (const auto& c : o.config()) set += (set.empty() ? "" : "; ") + c;
  print_fact("timings", set.empty() ? "runpoolctl's and the agent's defaults" : "defaults except " + set);
}

}  // namespace runpool::bench
