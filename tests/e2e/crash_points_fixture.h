// Crash points, end to end: the local cloud holds the k-th step of a process (one request it makes
// to AWS or GitHub, lib/hold.js) before it is served or after it was served but not answered; the
// test kills the process (kill -9) right there and drops the request. Then the invariants are
// checked after the next refresh and within the agent's self-termination bound:
//   - every live EC2 instance of the pool has a live record, in a settled state (idle, or running
//     for the assignment that holds it);
//   - every live record has a live instance;
//   - every runner registered on GitHub belongs to a live record of its generation, assigned;
//   - every idle record has a valid pool message (none lost; duplicates are counted: claims drop
//     them and refresh's sweep removes them);
// and re-running the interrupted command succeeds.
#pragma once

#include <dirent.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "tests/e2e/e2e_fixture.h"

namespace runpool::controller::e2e {

// A crash point: the k-th step (1-based) of a run, held `when` ("before" or "after").
struct CrashPoint {
  int k = 0;
  std::string when;
};

// What became of one crash trial.
struct CrashOutcome {
  bool crashed = false;  // the step was reached and the process killed there
  std::string step;      // "dynamodb UpdateItem" (the held request)
  std::string what;      // for the report
  CtlResult result;      // the run's (killed: exit -1)
};

// Which requests count as steps: who makes them and which operations change something (reads are
// left out: crashing before a read is crashing after the step before it, and polls vary in number).
struct StepFilter {
  std::vector<std::string> callers;
  std::vector<std::string> operations;
  std::string body_match;  // regex over the body; empty: any
};

inline std::string state_str(State s) { return std::string(pool::state_name(s)); }

inline bool full_mode() {
  const char* v = std::getenv("RUNPOOL_RELIABILITY_FULL");
  return v && std::string(v) == "1";
}

class CrashPointTest : public E2eTest {
 protected:
  // Short graces so "the next refresh" and the agent's bound are seconds, not minutes.
  static constexpr auto kClaimVisibility = 2s;
  static constexpr auto kSettle = 4s;  // > claim_visibility, orphan_grace, advertise_grace + the AWS clock's 1 s
  static constexpr auto kAgentBound = 35s;  // boot_grace 15 s + 2 x terminate_wait 3 s, and margin

  std::string more_config() const override {
    // runner_listing_interval 0: every refresh lists GitHub's runners, so each cycle's ghost of an
    // instance that never existed goes in that cycle's pass.
    return "orphan_grace = 1s\nadvertise_grace = 1s\nrunner_listing_interval = 0s\n"
           "claim_visibility = 2s\nclaim_wait = 1s\n"
           "min_running_time_linux = 0s\nrelease_timeout = 60s\ncancel_drain_wait = 20s\n"
           "scale_down_drain_wait = 10s\n"
           "agent_extra = notice_poll_interval=500ms; boot_grace=15s; drain_signal_timeout=60s; config_sh_timeout=30s; "
           "cleanup_timeout=2s; terminate_wait=3s; listener_restart_backoff=200ms; " + clean_sweep_roots() + "\n";
  }

  // runpoolctl's steps: its AWS requests (principal `controller`) and GitHub REST calls that change
  // something, SQS receives included (they hide messages).
  static StepFilter controller_steps() {
    const std::string gh = "/repos/{owner}/{repo}/actions/runners";
    return {{"controller", "github"},
            {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "SendMessage",
             "SendMessageBatch", "ReceiveMessage", "DeleteMessage", "DeleteMessageBatch", "ChangeMessageVisibility",
             "ChangeMessageVisibilityBatch", "RunInstances", "CreateFleet", "TerminateInstances", "CreateTags",
             "POST " + gh + "/registration-token", "POST " + gh + "/remove-token", "DELETE " + gh + "/{runner_id}"},
            ""};
  }
  // The agent's steps: its own record writes other than heartbeats (registered, the tokens taken,
  // drained, failed), its EC2 calls, and the runner registrations and removals its config.sh makes.
  static StepFilter agent_steps(const std::string& instance_id) {
    return {{"instance:" + instance_id, "runner"},
            {"UpdateItem", "TerminateInstances", "POST /api/v3/actions/runner-registration",
             "POST /_services/pipelines/agents", "PUT /_services/pipelines/agents/{agent_id}", "DELETE /_services/pipelines/agents/{agent_id}"},
            "^(?![\\s\\S]*heartbeat)"};
  }

  // ---- holds (the local cloud's /_control/hold)

  void arm(const StepFilter& f, int nth, const std::string& when) {
    Json::Value spec;
    for (const auto& c : f.callers) spec["caller"].append(c);
    for (const auto& o : f.operations) spec["operations"].append(o);
    if (!f.body_match.empty()) spec["bodyMatch"] = f.body_match;
    spec["nth"] = nth;
    spec["when"] = when.empty() ? "before" : when;
    cloud_.control("POST", "/_control/hold", spec);
  }
  Json::Value hold_status() { return cloud_.control("GET", "/_control/hold"); }
  void disarm() { cloud_.control("DELETE", "/_control/hold"); }
  // "service operation" of each step counted since arming.
  std::vector<std::string> counted_steps() {
    std::vector<std::string> out;
    const Json::Value st = hold_status();
    for (const auto& s : st["steps"]) out.push_back(s["service"].asString() + " " + s["operation"].asString());
    return out;
  }
  static std::string held_step(const Json::Value& st) {
    return st["held"]["service"].asString() + " " + st["held"]["operation"].asString();
  }

  // ---- runpoolctl as a child: found in /proc (the harness keeps its pid to itself)

  static std::string proc_file(pid_t pid, const char* what) { return testing::slurp("/proc/" + std::to_string(pid) + "/" + what); }
  // This process's children and their states ('Z': exited, not yet reaped).
  static std::map<pid_t, char> children() {
    std::map<pid_t, char> out;
    DIR* d = opendir("/proc");
    if (!d) return out;
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (!end || *end || pid <= 0) continue;
      std::string stat = proc_file(static_cast<pid_t>(pid), "stat");
      auto close = stat.rfind(')');
      if (close == std::string::npos || close + 4 > stat.size()) continue;
      std::istringstream rest(stat.substr(close + 2));
      char state = 0;
      long ppid = 0;
      rest >> state >> ppid;
      if (ppid == getpid()) out[static_cast<pid_t>(pid)] = state;
    }
    closedir(d);
    return out;
  }
  // Starts runpoolctl; its pid, found as the one new child (the harness keeps the pid to itself).
  std::pair<std::unique_ptr<CtlProcess>, pid_t> start_tracked(const std::vector<std::string>& args) {
    const std::map<pid_t, char> before = children();
    auto proc = start_ctl(args);
    pid_t pid = -1;
    eventually(
        [&] {
          for (const auto& [p, st] : children()) {
            if (!before.count(p)) pid = p;
          }
          return pid > 0;
        },
        10s);
    return {std::move(proc), pid};
  }
  static bool running(pid_t pid) {
    auto all = children();
    auto it = all.find(pid);
    return it != all.end() && it->second != 'Z' && it->second != 'X';
  }

  // Runs runpoolctl `args` with the hold armed at `at`: kills it (kill -9) once the step is held,
  // then drops the request. Not crashed when the run ends first (the step is beyond this run).
  CrashOutcome crash_ctl(const std::vector<std::string>& args, const CrashPoint& at) {
    arm(controller_steps(), at.k, at.when);
    auto [proc, pid] = start_tracked(args);
    CrashOutcome out;
    Json::Value st;
    const bool held = eventually(
        [&] {
          st = hold_status();
          return st["held"]["ready"].asBool() || !running(pid);
        },
        180s);
    st = hold_status();
    if (held && st["held"]["ready"].asBool() && running(pid)) {
      kill(pid, SIGKILL);
      out.crashed = true;
      out.step = held_step(st);
    }
    out.result = proc->wait(180s);
    disarm();  // drops the held request: the dead caller's connection is closed, nothing more happens
    out.what = out.crashed ? "killed at step " + std::to_string(at.k) + " (" + at.when + " " + out.step + ")"
                           : "step " + std::to_string(at.k) + " not reached (exit " +
                                 std::to_string(out.result.exit_code) + ")";
    return out;
  }

  // ---- the invariants

  // The pool's EC2 instances that are not (being) terminated.
  std::set<std::string> live_instances() {
    std::set<std::string> out;
    const Json::Value all = cloud_.control("GET", "/_control/ec2/instances");
    for (const auto& i : all["instances"]) {
      const std::string s = i["state"].asString();
      if (i["tags"]["runpool:pool"].asString() != pool_name_ || s == "shutting-down" || s == "terminated") continue;
      out.insert(i["id"].asString());
    }
    return out;
  }
  static bool live_state(State s) { return s != State::kTerminated && s != State::kTerminating; }

  // Every violation of the invariants now, one line each; `assigned` names the labels a command
  // holds (their records may be running); duplicates of pool messages are counted in `duplicates`.
  std::vector<std::string> violations(const std::set<std::string>& assigned, int* duplicates = nullptr) {
    std::vector<std::string> v;
    std::map<std::string, InstanceRecord> recs;
    for (auto& r : records()) recs[r.instance_id] = r;
    const std::set<std::string> live = live_instances();
    for (const auto& id : live) {
      auto it = recs.find(id);
      if (it == recs.end()) {
        v.push_back("instance " + id + " runs without a record");
      } else if (!live_state(it->second.state)) {
        v.push_back("instance " + id + " runs with a " + state_str(it->second.state) + " record");
      }
    }
    for (const auto& [id, r] : recs) {
      if (!live_state(r.state)) continue;
      if (!live.count(id)) v.push_back("record " + id + " (" + state_str(r.state) + ") outlives its instance");
      const bool held = r.state == State::kRunning && assigned.count(r.label);
      if (r.state != State::kIdle && !held) {
        v.push_back("instance " + id + " is " + state_str(r.state) + " for '" + r.label +
                    "', which no command holds");
      }
    }
    for (const auto& name : registered_runners()) {
      const std::string id = instance_of_runner(name);
      auto it = recs.find(id);
      const std::string gen = name.substr(name.rfind("-g") + 2);
      if (it == recs.end() || !live_state(it->second.state) || it->second.state == State::kIdle ||
          std::to_string(it->second.generation) != gen) {
        v.push_back("runner " + name + " is registered without a live assignment");
      }
    }
    std::map<std::string, int> messages;
    for (const auto& body : queue_bodies()) messages[body]++;
    for (const auto& [id, r] : recs) {
      if (r.state != State::kIdle) continue;
      const int n = messages[message_for(id, r.generation)];
      if (n == 0) v.push_back("idle instance " + id + " has no pool message (lost)");
      if (duplicates && n > 1) *duplicates += n - 1;
    }
    return v;
  }

  // After a crash: the next refresh (past the graces that let it act), then the invariants within
  // the agent's self-termination bound. The violations left at the bound.
  std::vector<std::string> settle_and_check(const std::set<std::string>& assigned,
                                            std::chrono::steady_clock::time_point crashed_at, int* duplicates) {
    std::this_thread::sleep_until(crashed_at + kSettle);
    Json::Value r = refresh();
    std::vector<std::string> v;
    eventually([&] { return (v = violations(assigned)).empty(); }, kAgentBound);
    v = violations(assigned, duplicates);
    if (r["exit_code"].asInt() != 0) v.push_back("refresh failed: " + write_json(r).substr(0, 600));
    return v;
  }

  // Failed expectations of this test so far.
  static int failures() {
    return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
  }

  // The one idle record of the pool (for a trial that starts from a pool of one).
  std::vector<std::string> idle_ids() {
    std::vector<std::string> out;
    for (const auto& r : records()) {
      if (r.state == State::kIdle) out.push_back(r.instance_id);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::map<std::string, int> state_counts() {
    std::map<std::string, int> out;
    for (const auto& r : records()) out[state_str(r.state)]++;
    return out;
  }
  // The crash points to try: every step in both modes (full), or `ci` of them (CI): evenly spaced
  // over the run's 2 x steps points (each step before and after), from an offset that rotates
  // with the seed, so successive CI runs crash different steps and, over days, every one.
  static std::vector<CrashPoint> plan(int steps, int ci) {
    std::vector<CrashPoint> out;
    const int points = 2 * steps;
    auto point = [](int p) { return CrashPoint{1 + p / 2, p % 2 ? "after" : "before"}; };
    if (full_mode()) {
      for (int p = 0; p < points; ++p) out.push_back(point(p));
      return out;
    }
    const int n = std::min(ci, points);
    const int offset = static_cast<int>(crash_seed() % static_cast<unsigned long>(points));
    for (int i = 0; i < n; ++i) out.push_back(point((offset + i * points / n) % points));
    return out;
  }
  // RUNPOOL_CRASH_SEED if set (to repeat a run's choice), else the UTC day: printed by each test.
  static unsigned long crash_seed() {
    if (const char* s = std::getenv("RUNPOOL_CRASH_SEED"); s && *s) return std::strtoul(s, nullptr, 10);
    return static_cast<unsigned long>(std::time(nullptr) / 86400);
  }
};

}  // namespace runpool::controller::e2e
