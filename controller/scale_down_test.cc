// run_scale_down, run_scale_up and run_bypass_removal against in-memory fakes: that the plan is
// carried out as one pass, that GitHub is asked only what the budget allows, that busy runners and
// concurrent claims win, that no failure aborts the rest, that a dry run changes nothing.
#include "controller/scale_down.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "common/github/github_error.h"
#include "common/json.h"
#include "common/pool/runner_name.h"
#include "controller/scale_up.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::InstanceRecord;
using pool::State;
using testing::World;

const std::string kSharedLabels = "self-hosted,linux,x64,small";

// GitHub for one owner, counting every call the pass makes.
class CountingRunners final : public Runners {
 public:
  Secret registration_token() override {
    ++registration_tokens;
    return Secret("reg");
  }
  Secret remove_token() override {
    ++remove_tokens;
    return Secret("rm");
  }
  std::string registration_url() override { return "https://github.com/acme/app"; }
  bool remove_labels(int64_t id) override {
    unlabelled.push_back(id);
    return true;
  }
  std::vector<int64_t> unlabelled;
  std::vector<github::Runner> list() override {
    ++lists;
    if (fail_list) throw std::runtime_error("GitHub is down");
    forget_deregistered();
    return runners;
  }
  void forget_deregistered() {
    if (deregistered) std::erase_if(runners, [&](const github::Runner& r) { return deregistered(r.name); });
  }
  std::optional<github::Runner> get(int64_t id) override {
    ++gets;
    get_requests += 1 + get_retries;
    if (fail_get.count(id)) throw github::GithubError("GetRunner", 500, "Server Error");
    for (auto r : runners) {
      if (r.id != id) continue;
      if (busy_on_get.count(id)) r.busy = true;
      return r;
    }
    return std::nullopt;
  }
  // A name-filtered list (one ListRunners request): a drain's check that its runner is gone. A
  // runner whose agent drained is deregistered (config.sh remove), as the real agent's is.
  std::optional<github::Runner> find(const std::string& name) override {
    ++lists;
    forget_deregistered();
    for (const auto& r : runners) {
      if (r.name == name) return r;
    }
    return std::nullopt;
  }
  std::function<bool(const std::string& name)> deregistered;
  github::DeleteOutcome remove(int64_t id) override {
    ++deletes;
    std::erase_if(runners, [&](const github::Runner& r) { return r.id == id; });
    return github::DeleteOutcome::kDeleted;
  }
  std::vector<github::WorkflowRun> workflow_runs(const std::string&, const std::string&) override { return {}; }
  std::vector<github::WorkflowJob> run_jobs(const std::string&, int64_t) override { return {}; }
  // Each call one HTTP request; a GET `get_retries` more (a fault the caller retried).
  long requests_sent(const std::string& operation) override {
    if (operation == "ListRunners") return lists;
    if (operation == "GetRunner") return get_requests;
    if (operation == "CreateRemoveToken") return remove_tokens;
    if (operation == "DeleteRunner") return deletes;
    if (operation == "CreateRegistrationToken") return registration_tokens;
    return operation.empty() ? lists + get_requests + remove_tokens + deletes + registration_tokens : 0;
  }

  std::vector<github::Runner> runners;
  std::set<int64_t> busy_on_get;  // GitHub says busy when asked for this one runner
  std::set<int64_t> fail_get;     // the GET of this runner fails (a 500 after retries)
  bool fail_list = false;
  int lists = 0, gets = 0, remove_tokens = 0, deletes = 0, registration_tokens = 0, get_retries = 0, get_requests = 0;
};

github::Runner online_runner(int64_t id, const std::string& name) {
  github::Runner r;
  r.id = id;
  r.name = name;
  r.status = "online";
  return r;
}

// Every log line written while it lives (the default logger swapped for one into a string).
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_));
    logger->set_level(spdlog::level::trace);
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::vector<std::string> lines() {
    spdlog::default_logger()->flush();
    std::vector<std::string> out;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  // Lines at warning level or above that contain `text`.
  int warnings_with(const std::string& text) {
    int n = 0;
    for (const auto& l : lines()) {
      const bool warning = l.rfind("warning ", 0) == 0 || l.rfind("error ", 0) == 0 || l.rfind("critical ", 0) == 0;
      n += warning && l.find(text) != std::string::npos;
    }
    return n;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

class ScaleDownTest : public ::testing::Test {
 protected:
  ScaleDownTest() {
    w.settings.shared = true;
    w.settings.scale_down_drain_wait = std::chrono::seconds(30);
    w.settings.resource_classes = {{"small", {"c7i.large"}}};
    w.settings.shared_labels = {"self-hosted", "linux", "x64"};
    // Agents drain when asked (the World's AgentSim also heartbeats and registers), and their
    // runner is then gone from GitHub.
    w.agents.drain_ok = true;
    gh.deregistered = [this](const std::string& name) {
      bool drained = false;
      w.table.inner.scan([&](const InstanceRecord& r) {
        drained |= pool::runner_name("ci", r.instance_id, r.generation) == name &&
                   pool::agent_reported(r, pool::AgentSignal::kDrained);
      });
      return drained;
    };
  }

  // A shared runner, registered and running, launched `age_min` minutes ago, listed on GitHub.
  InstanceRecord add_shared(int n, int age_min, bool listed = true) {
    InstanceRecord r;
    r.instance_id = "i-5ba7ed00000000" + std::to_string(n);  // apart from FakeCompute's launches
    r.pool = "ci";
    r.state = State::kRunning;
    r.generation = 1;
    r.shared = true;
    r.os = "linux";
    r.label = kSharedLabels;
    r.resource_class = "small";
    r.reg_url = "https://github.com/acme/app";
    r.created_ms = w.now() - age_min * 60'000;
    r.state_since_ms = r.created_ms + 30'000;
    r.deadline_ms = w.now() + 3'600'000;
    r.heartbeat_ms = w.now();
    r.signal = pool::AgentSignal::kRegistered;
    r.signal_generation = 1;
    r.runner_id = 100 + n;
    r.runner_name = pool::runner_name("ci", r.instance_id, 1);
    w.table.inner.create(r);
    if (listed) gh.runners.push_back(online_runner(r.runner_id, r.runner_name));
    return r;
  }

  int scale_down(ScaleDownOptions o = {}) {
    o.json = true;
    out.str("");
    int code = run_scale_down(ctx, o);
    doc = parse_json(out.str(), "scale-down --json");
    return code;
  }
  std::string rule_of(const std::string& id) {
    for (const auto& d : doc["decisions"]) {
      if (d["instance_id"].asString() == id) return d["rule"].asString() + "/" + d["outcome"].asString();
    }
    return "none";
  }
  State state(const InstanceRecord& r) { return w.record(r.instance_id).state; }

  World w;
  CountingRunners gh;
  std::ostringstream out;
  Context ctx{w.settings, w.clock, w.table, w.queue, w.compute, gh, out, w.cancelled};
  Json::Value doc;
};

TEST_F(ScaleDownTest, IdleSharedRunnersBeyondTheQuotaAreDrainedThenTerminatedWithinTheGithubBudget) {
  auto newest = add_shared(1, 20), b = add_shared(2, 30), c = add_shared(3, 40), oldest = add_shared(4, 50);
  ASSERT_EQ(scale_down({.idle = 1}), kExitOk) << out.str();
  EXPECT_EQ(state(newest), State::kRunning) << "oldest_first keeps the newest";
  for (const auto& r : {b, c, oldest}) {
    EXPECT_EQ(state(r), State::kTerminating) << r.instance_id;
    EXPECT_TRUE(w.compute.terminated.count(r.instance_id)) << r.instance_id;
    EXPECT_TRUE(pool::agent_reported(w.record(r.instance_id), pool::AgentSignal::kDrained))
        << "terminated only after its agent deregistered the runner";
    EXPECT_EQ(rule_of(r.instance_id), "idle.over-quota/done");
  }
  EXPECT_EQ(rule_of(newest.instance_id), "idle.quota/planned");
  // One list for the one owner, one GET per removal candidate, one name-filtered list per drained
  // runner (its deregistration confirmed before the termination), one remove token for the pass.
  EXPECT_EQ(gh.lists, 1 + 3);
  EXPECT_EQ(gh.gets, 3);
  EXPECT_EQ(gh.remove_tokens, 1);
  EXPECT_EQ(gh.deletes, 0);
  EXPECT_EQ(doc["github_calls"]["get_runner"].asInt(), 3);
  EXPECT_EQ(doc["github_calls"]["list_runners"].asInt(), 1 + 3);
}

// A shared instance has no wake-up queue: its drain sends no wake-up, so none can fail and be logged.
TEST_F(ScaleDownTest, DrainingASharedRunnerSendsNoWakeUp) {
  add_shared(1, 20);
  auto b = add_shared(2, 30);
  w.queue.fail_wake = true;  // what SQS answers for a queue that does not exist
  LogCapture logs;
  ASSERT_EQ(scale_down({.idle = 1}), kExitOk) << out.str();
  EXPECT_EQ(rule_of(b.instance_id), "idle.over-quota/done");
  EXPECT_EQ(w.queue.wake_calls, 0);
  EXPECT_TRUE(w.queue.wakes.empty());
  for (const auto& l : logs.lines()) {
    EXPECT_EQ(l.find("wake"), std::string::npos) << l;
    EXPECT_NE(l.rfind("warning ", 0), 0u) << l;
  }
}

// One instance with termination protection in the batch: EC2 refuses it alone, the others are
// terminated, and the pass reports which and why, and fails.
TEST_F(ScaleDownTest, AnInstanceEc2WillNotTerminateFailsAloneAndIsReported) {
  w.settings.shared = false;
  auto a = w.add_idle("i-00000000000000a1"), locked = w.add_idle("i-00000000000000b2"),
       c = w.add_idle("i-00000000000000c3");
  w.compute.protected_ids = {locked.instance_id};
  ASSERT_EQ(scale_down({.idle = 0}), kExitFailed) << out.str();
  EXPECT_EQ(w.compute.terminate_calls, 1) << "one batch";
  EXPECT_EQ(w.compute.terminated, (std::set<std::string>{a.instance_id, c.instance_id}));
  EXPECT_EQ(rule_of(a.instance_id), "idle.over-quota/done");
  EXPECT_EQ(rule_of(c.instance_id), "idle.over-quota/done");
  EXPECT_EQ(rule_of(locked.instance_id), "idle.over-quota/failed");
  EXPECT_EQ(doc["failed"].asInt(), 1);
  for (const auto& d : doc["decisions"]) {
    if (d["instance_id"].asString() != locked.instance_id) {
      EXPECT_FALSE(d.isMember("detail")) << write_json(d);
      continue;
    }
    EXPECT_NE(d["detail"].asString().find("OperationNotPermitted"), std::string::npos) << write_json(d);
    EXPECT_NE(d["detail"].asString().find("disableApiTermination"), std::string::npos) << write_json(d);
  }
  EXPECT_EQ(state(locked), State::kTerminating) << "refresh retries it";
  // The text form says so too.
  out.str("");
  w.compute.protected_ids.clear();
  auto d = w.add_idle("i-00000000000000d4");
  w.compute.protected_ids = {d.instance_id};
  ASSERT_EQ(run_scale_down(ctx, {.idle = 0}), kExitFailed);
  EXPECT_NE(out.str().find("failed: retire " + d.instance_id), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("may not be terminated"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("1 failed"), std::string::npos) << out.str();
}

// A marked orphan whose runner GET fails (GitHub 500) is left as it is, and the pass fails: one
// warning with the reason, `failed` counts it, exit 1 — in a dry run too.
TEST_F(ScaleDownTest, AFailedOrphanLookupLeavesTheInstanceAndFailsThePass) {
  auto orphan = add_shared(1, 60, /*listed=*/false);
  ASSERT_EQ(scale_down({.idle = 5}), kExitOk) << out.str();
  ASSERT_NE(w.record(orphan.instance_id).orphan_since_ms, 0);
  const InstanceRecord marked = w.record(orphan.instance_id);
  gh.fail_get.insert(orphan.runner_id);
  for (bool dry_run : {true, false}) {
    LogCapture logs;
    ASSERT_EQ(scale_down({.dry_run = dry_run, .idle = 5}), kExitFailed) << out.str();
    EXPECT_EQ(rule_of(orphan.instance_id), "orphan.lookup-failed/failed") << dry_run;
    EXPECT_EQ(doc["failed"].asInt(), 1) << out.str();
    for (const auto& d : doc["decisions"]) {
      EXPECT_NE(d["detail"].asString().find("Server Error"), std::string::npos) << write_json(d);
    }
    EXPECT_EQ(logs.warnings_with("orphan.lookup-failed"), 1) << "warned once";
    EXPECT_EQ(logs.warnings_with("Server Error"), 1) << "with the reason";
    const InstanceRecord now = w.record(orphan.instance_id);
    EXPECT_EQ(now.state, State::kRunning);
    EXPECT_EQ(now.orphan_since_ms, marked.orphan_since_ms) << "still marked: looked up again next pass";
    EXPECT_TRUE(w.compute.terminated.empty()) << "never terminated on a failed lookup";
  }
  // GitHub answers again: the next pass settles it.
  gh.fail_get.clear();
  ASSERT_EQ(scale_down({.idle = 5}), kExitOk) << out.str();
  EXPECT_EQ(rule_of(orphan.instance_id), "orphan.gone/done");
}

// github_calls counts HTTP requests as the GitHub caller does, each retry included.
TEST_F(ScaleDownTest, GithubCallsCountTheHttpRequestsRetriesIncluded) {
  add_shared(1, 20);
  add_shared(2, 30);
  gh.get_retries = 2;  // the GET was answered 502 twice and retried
  ASSERT_EQ(scale_down({.idle = 1}), kExitOk) << out.str();
  EXPECT_EQ(gh.gets, 1);
  EXPECT_EQ(doc["github_calls"]["get_runner"].asInt(), 3);
  EXPECT_EQ(doc["github_calls"]["list_runners"].asInt(), 2) << "the owner's, and the drained runner's by name";
  EXPECT_EQ(doc["github_calls"]["remove_token"].asInt(), 1);
  EXPECT_EQ(doc["github_calls"]["total"].asInt(), 6);
  // Only this pass's: a second pass reports its own.
  ASSERT_EQ(scale_down({.idle = 1}), kExitOk) << out.str();
  EXPECT_EQ(doc["github_calls"]["get_runner"].asInt(), 0) << out.str();
  EXPECT_EQ(doc["github_calls"]["total"].asInt(), 1);
}

TEST_F(ScaleDownTest, BusyByTheAgentOrByGithubAtTheRecheckOrInTheWriteIsKept) {
  auto agent_busy = add_shared(1, 20), github_busy = add_shared(2, 30), busy_at_write = add_shared(3, 40);
  w.table.report(agent_busy.instance_id, {.busy = true});
  gh.busy_on_get.insert(github_busy.runner_id);
  // The agent reports busy between the plan and the drain's write: the write's condition sees it.
  w.table.before_transition = [&](const std::string& id, const pool::Expect& e, const pool::LifecycleChange&) {
    if (id == busy_at_write.instance_id && e.agent_not_busy) w.table.inner.report(id, {.busy = true});
  };
  ASSERT_EQ(scale_down({.idle = 0}), kExitOk) << out.str();
  EXPECT_EQ(rule_of(agent_busy.instance_id), "busy.agent/planned");
  EXPECT_EQ(rule_of(github_busy.instance_id), "busy.github-recheck/kept");
  EXPECT_EQ(rule_of(busy_at_write.instance_id), "idle.over-quota/skipped");
  for (const auto& r : {agent_busy, github_busy, busy_at_write}) EXPECT_EQ(state(r), State::kRunning) << r.instance_id;
  EXPECT_TRUE(w.compute.terminated.empty());
}

TEST_F(ScaleDownTest, IdlePoolInstancesBeyondTheQuotaAreRetiredAndAConcurrentClaimWins) {
  w.settings.shared = false;
  auto a = w.add_idle("i-00000000000000a1"), b = w.add_idle("i-00000000000000b2"), c = w.add_idle("i-00000000000000c3");
  // A provision claims b between our read and our write.
  w.table.before_transition = [&](const std::string& id, const pool::Expect&, const pool::LifecycleChange& ch) {
    if (id == b.instance_id && ch.state == State::kTerminating) {
      auto r = w.table.inner.get(id);
      pool::Step claim = pool::claim(*r, "run-x", Secret("t"), "https://github.com/acme/app", w.now(), {});
      ASSERT_TRUE(w.table.inner.transition(id, claim.expect, claim.change));
    }
  };
  ASSERT_EQ(scale_down({.idle = 0}), kExitOk) << out.str();
  EXPECT_EQ(state(a), State::kTerminating);
  EXPECT_EQ(state(c), State::kTerminating);
  EXPECT_EQ(state(b), State::kClaimed) << "the claim that got there first keeps it";
  EXPECT_EQ(rule_of(b.instance_id), "idle.over-quota/skipped");
  EXPECT_EQ(w.compute.terminated, (std::set<std::string>{a.instance_id, c.instance_id}));
  EXPECT_EQ(gh.lists + gh.gets + gh.remove_tokens, 0) << "idle pool instances need nothing from GitHub";
}

TEST_F(ScaleDownTest, AFailingRunnerListKeepsThatOwnersRunnersAndTheRestIsStillDone) {
  auto shared = add_shared(1, 20);
  auto idle = w.add_idle("i-00000000000000d4");
  gh.fail_list = true;
  EXPECT_EQ(scale_down({.idle = 0}), kExitFailed) << "the failure is reported";
  EXPECT_EQ(rule_of(shared.instance_id), "github.unavailable/planned");
  EXPECT_EQ(state(shared), State::kRunning);
  EXPECT_EQ(state(idle), State::kTerminating) << "the rest of the pass went on";
  ASSERT_EQ(doc["errors"].size(), 1u);
}

TEST_F(ScaleDownTest, AMissingRunnerIsMarkedOrphanThenTerminatedOrUnmarkedOnTheNextPass) {
  auto gone = add_shared(1, 60, /*listed=*/false);
  auto back = add_shared(2, 60, /*listed=*/false);
  ASSERT_EQ(scale_down({.idle = 5}), kExitOk) << out.str();
  EXPECT_EQ(rule_of(gone.instance_id), "missing.boot-exceeded/done");
  EXPECT_NE(w.record(gone.instance_id).orphan_since_ms, 0);
  EXPECT_NE(w.record(back.instance_id).orphan_since_ms, 0);
  // GitHub lists `back` again (it was briefly missing); `gone` stays unknown.
  gh.runners.push_back(online_runner(back.runner_id, back.runner_name));
  ASSERT_EQ(scale_down({.idle = 5}), kExitOk) << out.str();
  EXPECT_EQ(rule_of(gone.instance_id), "orphan.gone/done");
  EXPECT_EQ(state(gone), State::kTerminating);
  EXPECT_TRUE(w.compute.terminated.count(gone.instance_id));
  EXPECT_EQ(rule_of(back.instance_id), "orphan.false-positive/done");
  EXPECT_EQ(w.record(back.instance_id).orphan_since_ms, 0);
  EXPECT_EQ(state(back), State::kRunning);
}

TEST_F(ScaleDownTest, ADryRunChangesNothing) {
  add_shared(1, 20);
  add_shared(2, 30, /*listed=*/false);
  w.add_idle("i-00000000000000e5");
  const size_t writes = w.table.inner.writes();
  ASSERT_EQ(scale_down({.dry_run = true, .idle = 0}), kExitOk) << out.str();
  EXPECT_EQ(w.table.inner.writes(), writes);
  EXPECT_TRUE(w.compute.terminated.empty());
  EXPECT_EQ(gh.remove_tokens, 0);
  EXPECT_TRUE(doc["dry_run"].asBool());
  EXPECT_EQ(doc["decisions"].size(), 3u) << "a decision for every instance";
  // The text form says what would be done and why.
  out.str("");
  ASSERT_EQ(run_scale_down(ctx, {.dry_run = true, .idle = 0}), kExitOk);
  EXPECT_NE(out.str().find("would drain"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("[idle.over-quota]"), std::string::npos) << out.str();
}

TEST_F(ScaleDownTest, ADrainNotFinishedInTimeIsLeftForTheNextPass) {
  w.agents.drain_ok = false;
  auto r = add_shared(1, 20);
  ASSERT_EQ(scale_down({.idle = 0}), kExitOk) << out.str();
  EXPECT_EQ(state(r), State::kDraining);
  EXPECT_EQ(rule_of(r.instance_id), "idle.over-quota/left");
  EXPECT_TRUE(w.compute.terminated.empty()) << "never terminated before its deregistration";
  // Drained later: the next pass terminates it.
  w.agents.drain_ok = true;
  w.agents.tick();
  ASSERT_EQ(scale_down({.idle = 0}), kExitOk) << out.str();
  EXPECT_EQ(rule_of(r.instance_id), "drained/done");
  EXPECT_EQ(state(r), State::kTerminating);
}

// The drain wait reads every draining record with one batch read per pass (before: one GetItem
// each), and a failed batch read only means reading again.
TEST_F(ScaleDownTest, TheDrainWaitReadsTheDrainingRecordsWithOneBatchReadPerPass) {
  auto keep = add_shared(1, 20), b = add_shared(2, 30), c = add_shared(3, 40), d = add_shared(4, 50);
  w.agents_on = false;  // the agents drain at the second poll
  w.on_tick = [&] {
    if (w.clock.sleeps == 1) w.agents_on = true;
  };
  w.table.fail_get_many = 1;
  w.table.reads.clear();
  ASSERT_EQ(scale_down({.idle = 1}), kExitOk) << out.str();
  const std::vector<std::string> reads = w.table.reads;  // before the checks below read too
  EXPECT_EQ(state(keep), State::kRunning);
  for (const auto& r : {b, c, d}) {
    EXPECT_EQ(state(r), State::kTerminating) << r.instance_id;
    EXPECT_EQ(rule_of(r.instance_id), "idle.over-quota/done");
  }
  EXPECT_EQ(w.clock.sleeps, 2);  // pass 1: the read fails; pass 2: not drained yet; pass 3: all drained
  EXPECT_EQ(reads, std::vector<std::string>(3, "get_many 3"));
}

TEST_F(ScaleDownTest, BypassRemovalExemptsAnInstanceUntilCleared) {
  auto r = add_shared(1, 20);
  ASSERT_EQ(run_bypass_removal(ctx, {r.instance_id, "i-00000000000000ff"}, true, false), kExitFailed)
      << "an instance without a record is reported";
  EXPECT_TRUE(w.record(r.instance_id).bypass_removal);
  ASSERT_EQ(scale_down({.idle = 0}), kExitOk);
  EXPECT_EQ(rule_of(r.instance_id), "bypass/planned");
  ASSERT_EQ(run_bypass_removal(ctx, {r.instance_id}, false, false), kExitOk);
  ASSERT_EQ(scale_down({.idle = 0}), kExitOk);
  EXPECT_EQ(state(r), State::kTerminating);
}

// Ids that are not "i-" and letters or digits (shell or path syntax, control characters, huge)
// are a usage error before any lookup, quoted printable and short.
TEST_F(ScaleDownTest, BypassRemovalRefusesWhatIsNotAnInstanceId) {
  auto r = add_shared(1, 20);
  for (const std::string& bad : {std::string("$(touch x)"), std::string("i-0\x1b[2J"), std::string("../../etc/passwd"),
                                 std::string("i-"), "i-" + std::string(100000, 'f'), std::string("i-0 1")}) {
    try {
      run_bypass_removal(ctx, {r.instance_id, bad}, true, false);
      ADD_FAILURE() << "accepted " << bad.substr(0, 40);
    } catch (const UsageError& e) {
      EXPECT_LT(std::string(e.what()).size(), 120u);
      EXPECT_EQ(std::string(e.what()).find('\x1b'), std::string::npos);
    }
  }
  EXPECT_FALSE(w.record(r.instance_id).bypass_removal) << "nothing was marked";
}

TEST_F(ScaleDownTest, ScaleUpLaunchesTheShortfallAsSharedRunnersWithOneRegistrationToken) {
  add_shared(1, 20);
  auto busy = add_shared(2, 30);
  w.table.report(busy.instance_id, {.busy = true});
  out.str("");
  ASSERT_EQ(run_scale_up(ctx, {.to = 3, .json = true}), kExitOk) << out.str();
  Json::Value up = parse_json(out.str(), "scale-up --json");
  EXPECT_EQ(up["classes"][0]["shortfall"].asInt(), 2) << "1 idle of 3: the busy one does not count";
  ASSERT_EQ(w.compute.launched.size(), 2u);
  EXPECT_EQ(gh.registration_tokens, 1);
  for (const auto& id : w.compute.launched) {
    InstanceRecord r = w.record(id);
    EXPECT_TRUE(r.shared);
    EXPECT_EQ(r.label, kSharedLabels);
    EXPECT_EQ(r.os, "linux");
    EXPECT_EQ(r.state, State::kRunning) << "waited for registration";
  }
  // A second run finds the quota met and launches nothing; a run-scoped pool's warm-up always waits.
  out.str("");
  ASSERT_EQ(run_scale_up(ctx, {.to = 3}), kExitOk);
  EXPECT_EQ(w.compute.launched.size(), 2u);
  w.settings.shared = false;
  EXPECT_THROW(run_scale_up(ctx, {.to = 3, .wait = false}), UsageError);
}

// The wait for the new runners ends as soon as each can no longer register — its agent failed, or
// EC2 says its instance is gone — instead of waiting out the whole timeout; each is named with why.
TEST_F(ScaleDownTest, ScaleUpStopsWaitingForAFailedAgentOrADeadInstanceAndSaysWhy) {
  // The fleet's ids are i-00000000000000001 and …2 (FakeCompute): one agent fails, one instance dies.
  w.agents.failing.insert("i-00000000000000001");
  w.agents.register_ok = false;
  w.on_tick = [&] {
    if (w.compute.launched.size() == 2) w.compute.terminated.insert(w.compute.launched[1]);
  };
  out.str("");
  const int64_t start = w.now();
  ASSERT_EQ(run_scale_up(ctx, {.to = 2, .timeout = std::chrono::minutes(10), .json = true}), kExitFailed) << out.str();
  EXPECT_LT(w.now() - start, 10'000) << "settled at the first EC2 look, not at the timeout";
  Json::Value up = parse_json(out.str(), "scale-up --json");
  ASSERT_EQ(w.compute.launched.size(), 2u);
  ASSERT_EQ(up["unregistered"].size(), 2u) << out.str();
  EXPECT_EQ(up["unregistered_reasons"][w.compute.launched[0]].asString(), "its agent failed to register: config.sh failed");
  EXPECT_EQ(up["unregistered_reasons"][w.compute.launched[1]].asString(), "is terminated in EC2");
  EXPECT_FALSE(up["ok"].asBool());
}

}  // namespace
}  // namespace runpool::controller
