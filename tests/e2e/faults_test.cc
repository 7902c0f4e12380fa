// The full lifecycle under faults, end to end: the real runpoolctl (and its scheduled refresh) and
// the real agents, while the local cloud fails 10% of every AWS call (5xx, throttling, 503 with
// Retry-After), GitHub answers secondary rate limits (403 and 429 with retry-after), every
// endpoint is slow, IMDS tokens expire under the agents, and the state table is unavailable for
// many heartbeat periods while the instances are idle and while jobs run. Each must end the same
// way: every job succeeded exactly once, no refresh pass disturbed a healthy instance, nothing
// left running or registered; and the local cloud's counters prove the faults were met.
// CI size by default; RUNPOOL_RELIABILITY_FULL=1 for more instances, jobs and trials.
#include <random>

#include "tests/e2e/faults_fixture.h"

namespace runpool::controller::e2e {
namespace {

class Faults : public FaultsE2e {
 protected:
  const FaultsSize size_ = FaultsSize::from_env();

  // The scenario's lifecycles, each with the schedule running beside it, then retirement.
  void trials(const std::string& tag) { trials(tag, Hooks{}); }
  void trials(const std::string& tag, const Hooks& hooks) {
    for (int t = 0; t < size_.trials; ++t) {
      std::vector<std::string> ids = lifecycle(tag + std::to_string(t), size_, hooks);
      if (HasFailure()) print_passes();
      ASSERT_FALSE(HasFailure()) << "trial " << t;
      for (const auto& [msg, n] : agent_warnings(ids)) {
        std::printf("[faults] %s agents: %dx %s\n", tag.c_str(), n, msg.c_str());
      }
      retire_and_expect_nothing_left(ids);
      ASSERT_FALSE(HasFailure()) << "trial " << t;
    }
    EXPECT_TRUE(disturbing_actions().empty()) << ::testing::PrintToString(disturbing_actions());
    int failed = 0;
    for (const auto& p : passes()) failed += p.exit_code != 0;
    std::printf("[faults] %s: %d trial(s) of %d instances, %d jobs per workflow (2 workflows); %zu scheduled "
                "refresh passes, %d failed; %s\n",
                tag.c_str(), size_.trials, size_.instances, size_.jobs, passes().size(), failed,
                HasFailure() ? "FAILURES above" : "every job once, nothing left running or registered");
  }
  // What the scheduled passes said, for a failure's diagnosis.
  void print_passes() {
    for (const auto& p : passes()) {
      std::printf("[faults] a scheduled pass (exit %d):\n%s", p.exit_code, p.err.c_str());
    }
  }
  Json::Value rates(double error, double throttle, double retry_after) const {
    Json::Value k;
    k["errorRate"] = error;
    k["throttleRate"] = throttle;
    k["retryAfterRate"] = retry_after;
    k["retryAfterSeconds"] = 1;
    k["spread"] = size_.spread;
    return k;
  }
};

// (1) 10% of every AWS call fails: 4% 5xx, 4% throttled, 2% 503 with Retry-After — DynamoDB,
// SQS, EC2 and IMDS at once.
TEST_F(Faults, TenPercentAwsErrorsAndThrottling) {
  for (const char* s : {"dynamodb", "sqs", "ec2", "imds"}) set_faults(s, rates(0.04, 0.04, 0.02));
  trials("aws");
  print_counts("aws");
  FaultCounts all;
  for (const char* s : {"dynamodb", "sqs", "ec2", "imds"}) {
    FaultCounts c = counts(s);
    EXPECT_GT(c.injected(), 0) << s << " met no fault";
    all.errors += c.errors;
    all.throttles += c.throttles;
    all.retry_afters += c.retry_afters;
  }
  EXPECT_GT(all.errors, 0);
  EXPECT_GT(all.throttles, 0);
  EXPECT_GT(all.retry_afters, 0);
}

// (2) GitHub's secondary rate limits: 20% of REST calls answered 403 and 20% 429, each with
// retry-after: 1 (a lifecycle makes only about ten REST calls). runpoolctl must wait exactly what
// it was told, once per refusal.
TEST_F(Faults, GithubSecondaryRateLimitsWithRetryAfter) {
  set_faults("github", rates(0, 0.2, 0.2));
  trials("gh");
  print_counts("gh");
  FaultCounts c = counts("github");
  EXPECT_GT(c.throttles, 0) << "no 403 secondary limit was met";
  EXPECT_GT(c.retry_afters, 0) << "no 429 secondary limit was met";
  const int waits = ctl_log_lines("secondary rate limit (retry-after); waiting 1000 ms");
  std::printf("[faults] gh: runpoolctl waited the retry-after %d times for %lld refusals\n", waits,
              (long long)(c.throttles + c.retry_afters));
  EXPECT_EQ(waits, c.throttles + c.retry_afters) << "a refusal not answered by waiting its retry-after";
}

// (3) Slow endpoints: every request of every service delayed.
TEST_F(Faults, SlowEndpoints) {
  const std::map<std::string, int> latency = {
      {"dynamodb", 100}, {"sqs", 100}, {"ec2", 250}, {"imds", 50}, {"github", 250}};
  for (const auto& [s, ms] : latency) {
    Json::Value k;
    k["latencyMs"] = ms;
    set_faults(s, k);
  }
  trials("slow");
  print_counts("slow");
  for (const auto& [s, ms] : latency) EXPECT_GT(counts(s).requests, 0) << s << " was never called, never slowed";
}

// (4) IMDS tokens expire under the agents: no token lives more than a second, and every live
// token is expired every 1-2.5 s (at random). Role credentials are within the agent's 5-minute
// refresh margin from 5 s on, so from then it fetches them through IMDS (with those tokens)
// before its AWS calls.
TEST_F(Faults, ImdsTokensExpireDuringTheRun) {
  Json::Value s;
  s["imdsTokenMaxTtlSeconds"] = 1;
  s["credentialTtlMs"] = 5 * 60 * 1000 + 5'000;  // the agent refreshes 5 min before expiry
  cloud_.control("POST", "/_control/ec2/settings", s);
  std::map<std::string, Json::Value> tokens;  // instance -> its IMDS's last token counts
  std::mutex tokens_mu;
  std::atomic<bool> stop{false};
  std::thread expirer([&] {
    CurlHttpClient http;
    // A random period, so the expiries cannot lock in phase with the agents' own renewals.
    std::mt19937 rng{std::random_device{}()};
    std::uniform_int_distribution<int> pause(10, 25);  // tenths of a second
    for (int i = 0; i < 1000 && !stop; ++i) {
      Json::Value all;
      try {
        all = cloud_.control("GET", "/_control/ec2/instances?state=running");
      } catch (const std::exception&) {
        continue;
      }
      for (const auto& inst : all["instances"]) {
        if (inst["tags"]["runpool:pool"].asString() != pool_name_ || inst["imdsUrl"].asString().empty()) continue;
        HttpRequest req;
        req.method = "DELETE";
        req.url = inst["imdsUrl"].asString() + "/_localcloud/tokens";
        try {
          http.send(req);
          req.method = "GET";
          auto doc = try_parse_json(http.send(req).body);
          std::lock_guard<std::mutex> lock(tokens_mu);
          if (doc) tokens[inst["id"].asString()] = *doc;
        } catch (const std::exception&) {
        }
      }
      for (int t = pause(rng); t > 0 && !stop; --t) std::this_thread::sleep_for(100ms);
    }
  });
  trials("imds");
  stop = true;
  expirer.join();
  print_counts("imds");
  int64_t issued = 0, revoked = 0, refused_expired = 0, refused_revoked = 0;
  for (const auto& [id, c] : tokens) {
    issued += c["issued"].asInt64();
    revoked += c["revoked"].asInt64();
    refused_expired += c["refused"]["expired"].asInt64();
    refused_revoked += c["refused"]["revoked"].asInt64();
  }
  int64_t credential_fetches = 0;
  const Json::Value stats = cloud_.control("GET", "/_control/stats");
  for (const auto& op : stats["imds"].getMemberNames()) {
    std::printf("[faults] imds: %lld x %s\n", (long long)stats["imds"][op]["requests"].asInt64(), op.c_str());
  }
  credential_fetches = stats["imds"]["GET /latest/meta-data/iam/security-credentials/*"]["requests"].asInt64();
  std::printf("[faults] imds: %zu instances; tokens issued %lld, expired by the test %lld; requests refused with "
              "an expired token %lld, a revoked one %lld; role credential fetches %lld\n",
              tokens.size(), (long long)issued, (long long)revoked, (long long)refused_expired,
              (long long)refused_revoked, (long long)credential_fetches);
  const int64_t instances = size_.instances * size_.trials;
  EXPECT_EQ(static_cast<int64_t>(tokens.size()), instances);
  EXPECT_GT(revoked, 0) << "no token was expired under an agent";
  EXPECT_GT(refused_revoked + refused_expired, 0) << "no agent request ever met an expired token";
  EXPECT_GT(issued, 2 * instances) << "tokens were not renewed";
  EXPECT_GT(credential_fetches, instances) << "role credentials never fetched again";
}

// (5) The table unavailable for many heartbeat periods (agent_heartbeat_interval 500 ms): once
// with every instance idle in the pool, once while the second workflow's jobs run. The agents
// must neither terminate nor be retired; heartbeats resume; the jobs finish once, successfully.
TEST_F(Faults, TableUnavailableLongerThanAHeartbeat) {
  int outages = 0;
  int64_t outage_errors = 0, heartbeat_errors = 0;
  auto outage = [&](State expected) {
    std::vector<InstanceRecord> before;  // this lifecycle's instances (earlier trials' are retired)
    for (auto& r : records()) {
      if (r.state == expected) before.push_back(std::move(r));
    }
    EXPECT_EQ(static_cast<int>(before.size()), size_.instances);
    const FaultCounts c0 = counts("dynamodb");
    const int64_t beats0 = counts_of("dynamodb", "UpdateItem").errors;
    Json::Value down;
    down["errorRate"] = 1;
    set_faults("dynamodb", down);
    std::this_thread::sleep_for(size_.outage);
    set_faults("dynamodb", Json::Value(Json::objectValue));
    const int64_t back = now_ms();
    ++outages;
    outage_errors += counts("dynamodb").errors - c0.errors;
    heartbeat_errors += counts_of("dynamodb", "UpdateItem").errors - beats0;
    for (const auto& r : before) {
      EXPECT_TRUE(eventually([&] { return record(r.instance_id).heartbeat_ms > back; }, 30s))
          << r.instance_id << ": no heartbeat after the outage" << consoles();
      InstanceRecord now = record(r.instance_id);
      EXPECT_EQ(now.state, expected) << r.instance_id;
      EXPECT_EQ(now.generation, r.generation) << r.instance_id;
      EXPECT_EQ(ec2_state(r.instance_id), "running") << r.instance_id;
    }
  };
  Hooks hooks;
  hooks.idle = [&] { outage(State::kIdle); };
  hooks.running = [&] { outage(State::kRunning); };
  hooks.job_ms = static_cast<int>(size_.outage.count()) + 3000;  // each job outlasts the outage
  trials("table", hooks);
  print_counts("table");
  std::printf("[faults] table: %d outages of %lld ms (%lld heartbeat periods); %lld requests refused, %lld of them "
              "heartbeats and other UpdateItems\n",
              outages, (long long)size_.outage.count(), (long long)(size_.outage.count() / 500),
              (long long)outage_errors, (long long)heartbeat_errors);
  EXPECT_EQ(outages, 2 * size_.trials);
  EXPECT_GT(heartbeat_errors, 0) << "no heartbeat met the outage";
}

}  // namespace
}  // namespace runpool::controller::e2e
