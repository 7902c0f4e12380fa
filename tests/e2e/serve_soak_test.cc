// A compressed week of serve: jobs of one scale set run through two `runpoolctl serve` processes
// (one serving, one standing by) and real agents on the local cloud, while what a production
// week brings is thrown at them in turn: GitHub's 429 and 5xx bursts, expired tokens, sessions
// GitHub forgets (in both 404 shapes it answers), the scale set deleted behind serve's back,
// serve killed at any point, instances lost and spot interruption notices. In both assignment
// flows (github.com's and GitHub Enterprise Server's).
//
// Counted at the end: jobs lost, jobs run twice, instances leaked (running in EC2 with a retired
// record, or with none), runners left registered, and the longest time with no serve holding a
// working session. The counts must all be 0.
//
// RUNPOOL_SOAK_JOBS jobs per flow (default 24, what CI runs; the full soak is 1000, about
// 40 minutes a flow on a 2-core machine). RUNPOOL_SOAK_SEED picks the order of the events
// (printed, to run one again).
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "tests/e2e/serve_fixture.h"

namespace runpool::controller::e2e {
namespace {

enum class Event {
  kRateLimited,     // a burst of 429s with Retry-After on one operation
  kServerErrors,    // a burst of 500/502/503 on one operation
  kAdminTokens,     // every registration (admin) token expires
  kQueueToken,      // the session's queue token expires
  kLostSessionA,    // GitHub forgets the session; its refresh answers 404 RunnerAdminException
  kLostSessionB,    // ... or 404 RunnerScaleSetSessionNotFoundException
  kSetDeleted,      // the scale set is deleted behind serve's back
  kServeKilled,     // one of the two serve processes is killed (SIGKILL) and started again
  kInstanceLost,    // an idle instance is terminated from outside the pool
  kSpotNotice,      // a spot interruption notice to an instance of the pool
};
constexpr Event kEvents[] = {Event::kRateLimited,  Event::kServerErrors, Event::kAdminTokens, Event::kQueueToken,
                             Event::kLostSessionA, Event::kLostSessionB, Event::kSetDeleted,  Event::kServeKilled,
                             Event::kInstanceLost, Event::kSpotNotice};
const char* event_name(Event e) {
  switch (e) {
    case Event::kRateLimited: return "429 burst";
    case Event::kServerErrors: return "5xx burst";
    case Event::kAdminTokens: return "admin tokens expired";
    case Event::kQueueToken: return "queue token expired";
    case Event::kLostSessionA: return "session lost (404 RunnerAdminException)";
    case Event::kLostSessionB: return "session lost (404 RunnerScaleSetSessionNotFoundException)";
    case Event::kSetDeleted: return "scale set deleted";
    case Event::kServeKilled: return "serve killed";
    case Event::kInstanceLost: return "idle instance lost";
    case Event::kSpotNotice: return "spot notice";
  }
  return "?";
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

class ServeSoak : public ServeTestOf<E2eTest>, public ::testing::WithParamInterface<std::string> {
 protected:
  std::string assignment() const override { return GetParam(); }

  struct Job {
    int64_t id = 0;
    bool done = false;
  };

  // A serve holds a working session of the set (any set of this name: a deleted one is replaced):
  // a session GitHub still has, polled now or a moment ago — not one whose holder died and which
  // GitHub keeps until it lapses.
  bool session_working() {
    const Json::Value all = cloud_.control("GET", "/_control/github/scalesets");
    for (const auto& set : all["scaleSets"]) {
      const Json::Value& s = set["session"];
      if (set["name"].asString() != set_name() || !s.isObject() || !s["live"].asBool() || s["phantom"].asBool()) {
        continue;
      }
      if (s["openPolls"].asInt() > 0 || now_ms() - s["lastSeen"].asInt64() < 1500) return true;
    }
    return false;
  }

  // The pool's instances as EC2 has them (id → state).
  std::map<std::string, std::string> ec2_instances() {
    std::map<std::string, std::string> out;
    const Json::Value all = cloud_.control("GET", "/_control/ec2/instances");
    for (const auto& i : all["instances"]) {
      if (i["tags"]["runpool:pool"].asString() == pool_name_) out[i["id"].asString()] = i["state"].asString();
    }
    return out;
  }

  void fault(const std::string& operation, int status, int retry_after) {
    Json::Value f;
    f["operation"] = operation;
    f["status"] = status;
    f["count"] = 3;
    f["retryAfterSeconds"] = retry_after;
    cloud_.control("POST", "/_control/github/scalesets/faults", f);
  }

  void lose_session(const std::string& shape) {
    const int64_t id = scale_set_id();
    if (id == 0) return;
    Json::Value settings;
    settings["scaleSetLostSession"] = shape;
    cloud_.control("POST", "/_control/github/settings", settings);
    try {
      cloud_.control("POST", control_path_of_set(id) + "/drop-session");
    } catch (const std::exception&) {
      // No session to drop right now (serve is between sessions): the event is a no-op.
    }
  }

  // An instance of the pool idle in it; "" when none is.
  std::string idle_instance() {
    for (const auto& r : records()) {
      if (back_in_pool(r.instance_id)) return r.instance_id;
    }
    return "";
  }

  // Does `e`; says what it did ("" when there was nothing to do it to).
  std::string apply(Event e, std::mt19937& rng, std::vector<std::unique_ptr<CtlProcess>>& serves) {
    static const char* kOperations[] = {"getMessage", "deleteMessage", "generateJitConfig", "refreshSession",
                                        "removeRunner"};
    switch (e) {
      case Event::kRateLimited: {
        const std::string op = kOperations[rng() % 5];
        fault(op, 429, 1);
        return op;
      }
      case Event::kServerErrors: {
        const std::string op = kOperations[rng() % 5];
        const int statuses[] = {500, 502, 503};
        fault(op, statuses[rng() % 3], 0);
        return op;
      }
      case Event::kAdminTokens: cloud_.control("POST", "/_control/github/scalesets/expire-admin-tokens"); return "all";
      case Event::kQueueToken: {
        const int64_t id = scale_set_id();
        if (id == 0) return "";
        try {
          cloud_.control("POST", control_path_of_set(id) + "/expire-queue-token");
        } catch (const std::exception&) {
          return "";
        }
        return std::to_string(id);
      }
      case Event::kLostSessionA: lose_session("RunnerAdminException"); return "set";
      case Event::kLostSessionB: lose_session("RunnerScaleSetSessionNotFoundException"); return "set";
      case Event::kSetDeleted: {
        const int64_t id = scale_set_id();
        if (id == 0) return "";
        cloud_.control("DELETE", control_path_of_set(id));
        return std::to_string(id);
      }
      case Event::kServeKilled: {
        // The one serving, most times; now and then the one standing by.
        const auto held = lease();
        size_t at = rng() % serves.size();
        for (size_t i = 0; i < serves.size() && rng() % 4 != 0; ++i) {
          const std::string pid = ":" + std::to_string(serves[i]->pid());
          if (held && held->holder.ends_with(pid)) at = i;
        }
        const bool holder = held && held->holder.ends_with(":" + std::to_string(serves[at]->pid()));
        serves[at]->signal(SIGKILL);
        serves[at]->wait(10s);
        serves[at] = start_ctl({"serve"});
        return holder ? "the holder" : "the standby";
      }
      case Event::kInstanceLost: {
        const std::string id = idle_instance();
        if (!id.empty()) kill_instance(id);
        return id;
      }
      case Event::kSpotNotice: {
        for (const auto& r : records()) {
          if (r.state == State::kTerminated || r.state == State::kTerminating) continue;
          Json::Value notice;
          notice["inSeconds"] = 30;
          try {
            cloud_.control("POST", "/_control/ec2/instances/" + r.instance_id + "/spot-interruption", notice);
            return r.instance_id;
          } catch (const std::exception&) {
            // Not a spot instance, or not running: the next one.
          }
        }
        return "";
      }
    }
    return "";
  }
};

INSTANTIATE_TEST_SUITE_P(Assignment, ServeSoak, ::testing::Values("service", "acquire"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST_P(ServeSoak, AWeekOfFaultsLosesNoJobRunsNoneTwiceAndLeaksNothing) {
  const int total = env_int("RUNPOOL_SOAK_JOBS", 24);
  const unsigned seed = static_cast<unsigned>(env_int("RUNPOOL_SOAK_SEED", static_cast<int>(std::random_device{}() >> 1)));
  std::printf("soak (%s): %d jobs, seed %u\n", GetParam().c_str(), total, seed);
  std::mt19937 rng(seed);
  std::vector<Event> order(std::begin(kEvents), std::end(kEvents));
  std::shuffle(order.begin(), order.end(), rng);

  std::vector<std::unique_ptr<CtlProcess>> serves;
  serves.push_back(start_ctl({"serve"}));
  serves.push_back(start_ctl({"serve"}));

  // Four jobs in flight at most (the set's maximum is three runners): a queue that is seldom empty.
  constexpr int kInFlight = 4;
  // One event every `every` jobs queued, the first once the set has served a few.
  const int every = std::max(2, total / 40);
  std::vector<Job> jobs;
  std::map<std::string, int> events_done;
  int submitted = 0, finished = 0, next_event = 0, reported = 0;
  int64_t longest_gap_ms = 0, gap_start = -1, last_refresh = now_ms();
  const int64_t deadline = now_ms() + 300'000 + static_cast<int64_t>(total) * 8'000;
  while (finished < total && now_ms() < deadline) {
    int in_flight = submitted - finished;
    while (in_flight < kInFlight && submitted < total) {
      // Most jobs are quick; every fifth runs for two seconds, so kills and notices find jobs in hand.
      const std::string run = submitted % 5 == 4 ? "sleep 2" : "true";
      jobs.push_back({queue_job(set_name(), "soak-" + std::to_string(submitted), run), false});
      ++submitted, ++in_flight;
      if (submitted >= 3 && submitted % every == 0) {
        const Event e = order[next_event++ % order.size()];
        const std::string what = apply(e, rng, serves);
        std::printf("  job %d: %s%s%s\n", submitted, event_name(e), what.empty() ? " (nothing to do it to)" : ": ",
                    what.c_str());
        if (!what.empty()) ++events_done[event_name(e)];
      }
    }
    for (auto& j : jobs) {
      if (j.done) continue;
      const std::string state = job(j.id)["state"].asString();
      if (state == "completed" || state == "lost" || state == "cancelled") j.done = true, ++finished;
    }
    // The live-session gap, sampled as often as the loop goes round.
    const int64_t t = now_ms();
    if (session_working()) {
      if (gap_start >= 0) longest_gap_ms = std::max(longest_gap_ms, t - gap_start);
      gap_start = -1;
    } else if (gap_start < 0) {
      gap_start = t;
    }
    // The scheduled refresh (serve's timer): retires what was lost and deletes its runners.
    if (t - last_refresh > 20'000) {
      refresh();
      last_refresh = now_ms();
    }
    if (finished >= reported + 50) {  // a progress line every 50 jobs, once each
      reported = finished - finished % 50;
      std::printf("  %d of %d jobs finished\n", finished, total);
    }
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(finished, total) << "jobs still unfinished at the deadline: " << states() << consoles();

  // The pool settles: what was lost is retired by refresh, the rest is back in the pool.
  const bool settled = eventually(
      [&] {
        refresh();
        return all_back_in_pool();
      },
      180s);
  EXPECT_TRUE(settled) << states();
  for (auto& s : serves) stop(*s);
  refresh();

  int lost = 0, twice = 0;
  for (const auto& j : jobs) {
    const Json::Value v = job(j.id);
    if (v["result"].asString() != "Succeeded") {
      ++lost;
      ADD_FAILURE() << "lost: " << write_json(v);
    }
    if (v["dispatches"].size() > 1) {
      ++twice;
      ADD_FAILURE() << "run twice: " << write_json(v);
    }
  }
  int leaked = 0;
  std::map<std::string, InstanceRecord> by_id;
  for (const auto& r : records()) by_id[r.instance_id] = r;
  for (const auto& [id, state] : ec2_instances()) {
    if (state != "running" && state != "pending") continue;
    auto r = by_id.find(id);
    if (r == by_id.end() || r->second.state == State::kTerminated) {
      ++leaked;
      ADD_FAILURE() << "leaked: " << id << " is " << state << " in EC2, " << (r == by_id.end() ? "no record" : "retired");
    }
  }
  const auto runners = registered_runners();
  std::printf("soak (%s): %d jobs; lost %d, run twice %d, instances leaked %d, runners left registered %zu; "
              "longest with no serve holding a working session %.1f s; %zu records\n",
              GetParam().c_str(), total, lost, twice, leaked, runners.size(), longest_gap_ms / 1000.0, by_id.size());
  for (const auto& [name, n] : events_done) std::printf("  %s: %d\n", name.c_str(), n);
  EXPECT_TRUE(runners.empty()) << ::testing::PrintToString(runners);
}

}  // namespace
}  // namespace runpool::controller::e2e
