// run_refresh against in-memory fakes of the table, the pool queues, EC2 and GitHub: that the plan
// is carried out as one pass, that no failure aborts the rest, that a dry run changes nothing.
#include "controller/refresh.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "common/aws/aws_error.h"
#include "common/github/github_error.h"
#include "common/json.h"
#include "common/pool/memory_state_table.h"
#include "common/pool/pool_message.h"
#include "common/pool/runner_name.h"
#include "common/pool/transitions.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::InstanceRecord;
using pool::State;

const WallTime kStart{std::chrono::milliseconds(1'800'000'000'000)};
const int64_t kRefreshNow = 1'800'000'000'000;

class FakeCompute final : public Compute {
 public:
  aws::CreateFleetResult create_fleet(const aws::CreateFleetRequest&) override { throw std::logic_error("unused"); }
  void tag_label(const std::vector<std::string>&, const std::string&) override {}
  void terminate(const std::vector<std::string>& ids) override {
    for (const auto& id : ids) {
      terminate_calls.push_back(id);
      if (fail_terminate.count(id)) throw aws::AwsError("ec2", "TerminateInstances", 500, "InternalError", "injected");
      auto it = instances.find(id);
      if (it != instances.end()) it->second.state = {32, "shutting-down"};
    }
  }
  std::vector<aws::Instance> describe(const std::vector<std::string>& ids) override {
    ++describe_calls;
    std::vector<aws::Instance> out;
    for (const auto& id : ids) {
      auto it = instances.find(id);
      if (it != instances.end()) out.push_back(it->second);
    }
    return out;
  }
  std::vector<aws::Instance> pool_instances() override {
    if (fail_pool_instances) throw aws::AwsError("ec2", "DescribeInstances", 500, "InternalError", "injected");
    std::vector<aws::Instance> out;
    for (const auto& [id, i] : instances) {
      if (i.state.name != "terminated" && i.tag(kTagPool) == "ci" && i.tag(kTagTable) == "runpool") out.push_back(i);
    }
    return out;
  }

  void launch(const std::string& id, int64_t launched_ms, bool tagged = true) {
    aws::Instance i;
    i.instance_id = id;
    i.state = {16, "running"};
    i.launch_time = from_epoch_ms(launched_ms);
    if (tagged) i.tags = {{kTagPool, "ci"}, {kTagTable, "runpool"}};
    instances[id] = i;
  }
  std::string state(const std::string& id) { return instances.at(id).state.name; }

  std::map<std::string, aws::Instance> instances;
  std::vector<std::string> terminate_calls;
  std::set<std::string> fail_terminate;
  bool fail_pool_instances = false;
  int describe_calls = 0;
};

class RefreshRunners final : public Runners {
 public:
  Secret registration_token() override { throw std::logic_error("unused"); }
  Secret remove_token() override {
    ++remove_tokens;
    if (on_remove_token) on_remove_token();
    return Secret("remove-token");
  }
  std::string registration_url() override { return "https://github.com/o/r"; }
  bool remove_labels(int64_t id) override {
    unlabelled.push_back(id);
    return true;
  }
  std::vector<github::WorkflowRun> workflow_runs(const std::string&, const std::string&) override { return {}; }
  std::vector<github::WorkflowJob> run_jobs(const std::string&, int64_t) override { return {}; }
  std::vector<int64_t> unlabelled;
  long requests_sent(const std::string& operation) override {
    if (operation == "ListRunners") return lists;
    if (operation == "CreateRemoveToken") return remove_tokens;
    if (operation == "DeleteRunner") return static_cast<long>(deleted.size());
    return operation.empty() ? lists + remove_tokens + static_cast<long>(deleted.size()) : 0;
  }
  std::vector<github::Runner> list() override {
    ++lists;
    if (on_list) on_list();
    if (fail_list) throw github::GithubError("list runners", 502, "Server Error");
    return runners;
  }
  github::DeleteOutcome remove(int64_t id) override {
    deleted.push_back(id);
    if (busy.count(id)) return github::DeleteOutcome::kBusy;
    std::erase_if(runners, [&](const github::Runner& r) { return r.id == id; });
    return github::DeleteOutcome::kDeleted;
  }
  void add(int64_t id, const std::string& name) {
    github::Runner r;
    r.id = id;
    r.name = name;
    runners.push_back(r);
  }

  std::vector<github::Runner> runners;
  std::set<int64_t> busy;
  std::vector<int64_t> deleted;
  std::function<void()> on_list, on_remove_token;
  int remove_tokens = 0, lists = 0;
  bool fail_list = false;
};

std::string id_of(int n) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "i-%08x", n);
  return buf;
}

class RefreshTest : public ::testing::Test {
 protected:
  RefreshTest() : queue(clock) {
    settings.pool = "ci";
    settings.table = "runpool";
    settings.resource_classes = {{"small", {"c7i.large"}}};
  }

  // A record in `s` (built through the real transitions), and its running instance.
  InstanceRecord put(int n, State s, int64_t generation_claims = 0, int64_t born = kRefreshNow - 3'600'000) {
    const std::string id = id_of(n);
    const pool::Timeouts& t = settings.timeouts;
    InstanceRecord launched = pool::launched_record(id, "ci", "run-1", "small", pool::UsageClass::kSpot, "c7i.large",
                                                    Secret("reg"), "https://github.com/o/r", born, t);
    pool::give_seal_keys(launched, testing::test_seal_keys());
    EXPECT_TRUE(table.create(launched));
    compute.launch(id, born);
    auto step = [&](const pool::Step& st) { EXPECT_TRUE(table.transition(id, st.expect, st.change)); };
    auto agent = [&](pool::AgentSignal sig) {
      EXPECT_TRUE(table.report(id, {.heartbeat_ms = kRefreshNow - 1000, .signal = sig, .generation = get(id).generation}));
    };
    auto to_idle = [&] {
      agent(pool::AgentSignal::kRegistered);
      step(pool::mark_running(get(id), born, t));
      step(pool::start_drain(get(id), Secret("rm"), born, t));
      agent(pool::AgentSignal::kDrained);
      step(pool::return_to_pool(get(id), kRefreshNow - 60'000, t));
      step(pool::advertised(get(id)));
    };
    switch (s) {
      case State::kCreated: break;
      case State::kTerminating: step(pool::begin_terminate(get(id), kRefreshNow, t)); break;
      default:
        to_idle();
        for (int64_t i = 0; i < generation_claims; ++i) {
          step(pool::claim(get(id), "run-x", Secret("reg"), "u", kRefreshNow, t));
          agent(pool::AgentSignal::kRegistered);
          step(pool::mark_running(get(id), kRefreshNow, t));
          step(pool::start_drain(get(id), Secret("rm"), kRefreshNow, t));
          agent(pool::AgentSignal::kDrained);
          step(pool::return_to_pool(get(id), kRefreshNow - 60'000, t));
          step(pool::advertised(get(id)));
        }
        if (s == State::kIdle) {
          queue.send("small", pool::pool_message_body({id, get(id).generation}));
          break;
        }
        step(pool::claim(get(id), "run-2", Secret("reg"), "u", kRefreshNow, t));
        if (s == State::kClaimed) break;
        agent(pool::AgentSignal::kRegistered);
        step(pool::mark_running(get(id), kRefreshNow, t));
        if (s == State::kRunning) break;
        step(pool::start_drain(get(id), Secret("rm"), kRefreshNow, t));
        break;
    }
    return get(id);
  }
  InstanceRecord get(const std::string& id) { return *table.get(id); }
  // Moves the clock (and so the AWS time refresh reads) forward.
  void later(int64_t ms) { clock.advance(Duration(ms)); }

  int refresh(bool dry_run = false, bool json = true) {
    out.str("");
    Context ctx{settings, clock, table, queue, compute, runners, out, cancelled};
    return run_refresh(ctx, {dry_run, json});
  }
  Json::Value report() { return parse_json(out.str(), "refresh output"); }
  // The outcome of the first reported action of `kind` for `id`.
  std::string outcome(const std::string& kind, const std::string& id) {
    const Json::Value rep = report();
    for (const auto& a : rep["actions"]) {
      if (a["action"].asString() == kind && a["instance_id"].asString() == id) return a["outcome"].asString();
    }
    return "<none>";
  }

  FakeClock clock{kStart};
  Settings settings;
  pool::MemoryStateTable table;
  testing::MemoryQueue queue;
  FakeCompute compute;
  RefreshRunners runners;
  std::ostringstream out;
  std::atomic<bool> cancelled{false};
};

TEST_F(RefreshTest, AHealthyPoolNeedsNothing) {
  put(1, State::kIdle);
  put(2, State::kRunning);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(report()["actions"].size(), 0u) << out.str();
  EXPECT_EQ(queue.receives, 0) << "depth matches the idle records: no sweep";
  EXPECT_EQ(runners.remove_tokens, 0);
}

TEST_F(RefreshTest, ASharedRunnerThatRegisteredUnwatchedIsMarkedRunning) {
  pool::InstanceRecord r = pool::launched_record(id_of(1), "ci", "self-hosted,linux,small", "small",
                                                 pool::UsageClass::kSpot, "c7i.large", Secret("reg"),
                                                 "https://github.com/o/r", kRefreshNow - 60'000, settings.timeouts);
  r.shared = true;
  ASSERT_TRUE(table.create(r));
  compute.launch(r.instance_id, kRefreshNow - 60'000);
  ASSERT_TRUE(table.report(r.instance_id, {.heartbeat_ms = kRefreshNow, .signal = pool::AgentSignal::kRegistered,
                                           .generation = 1}));
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(outcome("mark-running", r.instance_id), "done");
  EXPECT_EQ(get(r.instance_id).state, State::kRunning);
}

// Wake-up queues: kept while their instance has a live record or runs in EC2; deleted once it has
// neither (a dry run only says so); other pools' queues and junk names are never touched.
TEST_F(RefreshTest, WakeQueuesOfGoneInstancesAreDeleted) {
  InstanceRecord live = put(1, State::kIdle);
  compute.launch(id_of(2), kRefreshNow - 60'000);  // running, no record (yet): kept
  const std::string base = "http://sqs.local/000000000000/";
  const std::string kept1 = base + "ci-wake-" + live.instance_id, kept2 = base + "ci-wake-" + id_of(2);
  const std::string gone = base + "ci-wake-" + id_of(3), other = base + "ci-wake-x", foreign = base + "cd-wake-" + id_of(4);
  queue.wake_urls = {kept1, kept2, gone, other, foreign};
  EXPECT_EQ(refresh(true), kExitOk) << out.str();
  EXPECT_TRUE(queue.deleted_queues.empty());
  EXPECT_NE(out.str().find("would delete 1 wake-up queue"), std::string::npos) << out.str();
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(queue.deleted_queues, std::vector<std::string>{gone});
  EXPECT_NE(out.str().find("deleted 1 wake-up queue"), std::string::npos) << out.str();
  // Its instance terminated and its record closed: the next passes delete its queue too.
  later(settings.timeouts.idle_ttl_ms);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_NE(std::find(queue.deleted_queues.begin(), queue.deleted_queues.end(), kept1), queue.deleted_queues.end());
  EXPECT_EQ(std::count(queue.deleted_queues.begin(), queue.deleted_queues.end(), foreign), 0);
}

TEST_F(RefreshTest, ExpiredIdleIsTerminatedAndClosedInOnePass) {
  InstanceRecord r = put(1, State::kIdle);
  later(settings.timeouts.idle_ttl_ms);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(compute.state(r.instance_id), "shutting-down");
  EXPECT_EQ(get(r.instance_id).state, State::kTerminated) << "closed once EC2 reported it shutting down";
  EXPECT_EQ(outcome("terminate", r.instance_id), "done");
  EXPECT_EQ(outcome("close", r.instance_id), "done");
  // The next pass finds its pool message stale (depth 1, idle 0) and deletes it.
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_TRUE(queue.bodies("small").empty());
}

// keep_failed: a failed instance is kept for inspection by one pass, left alone while kept, and
// terminated by the first pass after its keep.
TEST_F(RefreshTest, KeepFailedKeepsAFailedInstanceThenTerminatesIt) {
  settings.keep_failed = std::chrono::hours(1);
  InstanceRecord r = put(1, State::kRunning);
  ASSERT_TRUE(table.report(r.instance_id, {.heartbeat_ms = kRefreshNow, .signal = pool::AgentSignal::kFailed,
                                           .signal_detail = "the runner exited 1", .generation = r.generation}));
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(outcome("keep", r.instance_id), "done") << out.str();
  EXPECT_EQ(compute.state(r.instance_id), "running");
  EXPECT_EQ(get(r.instance_id).kept_until_ms, kRefreshNow + 3'600'000);

  later(3'600'000 - 1);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(report()["actions"].size(), 0u) << out.str();
  EXPECT_EQ(compute.state(r.instance_id), "running");

  later(1);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(outcome("terminate", r.instance_id), "done") << out.str();
  EXPECT_EQ(get(r.instance_id).state, State::kTerminated);
}

// A thief holding the instance role's credentials writes `failed` for the running assignment while
// its job runs: GitHub's status of the runner, as the list reports it, decides. Online: nothing
// ends the instance (a note says why); offline, as after a real agent's failure: terminated.
TEST_F(RefreshTest, AForgedFailedWhileGithubListsTheRunnerOnlineEndsNothing) {
  InstanceRecord forged = put(1, State::kRunning), real = put(2, State::kRunning);
  for (const auto& [r, status] : {std::pair{forged, "online"}, std::pair{real, "offline"}}) {
    github::Runner listed;
    listed.id = 40 + (r.instance_id == forged.instance_id ? 1 : 2);
    listed.name = pool::runner_name("ci", r.instance_id, r.generation);
    listed.status = status;
    listed.busy = true;
    runners.runners.push_back(listed);
    ASSERT_TRUE(table.report(r.instance_id, {.heartbeat_ms = kRefreshNow, .signal = pool::AgentSignal::kFailed,
                                             .signal_detail = "the runner exited 1", .generation = r.generation}));
  }
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(compute.state(forged.instance_id), "running") << out.str();
  EXPECT_EQ(get(forged.instance_id).state, State::kRunning);
  EXPECT_NE(out.str().find("not acted on"), std::string::npos) << out.str();
  EXPECT_EQ(outcome("terminate", real.instance_id), "done") << out.str();
}

TEST_F(RefreshTest, DryRunChangesNothing) {
  InstanceRecord idle = put(1, State::kIdle);
  InstanceRecord running = put(2, State::kRunning);
  compute.launch(id_of(3), kRefreshNow - 3'600'000);  // untracked
  queue.send("small", "not json");
  runners.add(7, pool::runner_name("ci", id_of(9), 1));
  later(settings.timeouts.max_runtime_ms);  // idle expired, running past max runtime
  pool::MemoryStateTable before;
  table.scan([&](const InstanceRecord& r) { before.create(r); });
  size_t writes = table.writes();

  EXPECT_EQ(refresh(/*dry_run=*/true), kExitOk) << out.str();
  Json::Value rep = report();
  EXPECT_TRUE(rep["dry_run"].asBool());
  EXPECT_GE(rep["actions"].size(), 5u) << out.str();
  for (const auto& a : rep["actions"]) EXPECT_EQ(a["outcome"].asString(), "planned");
  EXPECT_EQ(table.writes(), writes);
  EXPECT_TRUE(compute.terminate_calls.empty());
  EXPECT_TRUE(runners.deleted.empty());
  EXPECT_EQ(runners.remove_tokens, 0);
  EXPECT_EQ(queue.bodies("small").size(), 2u);
  EXPECT_TRUE(queue.all_visible()) << "swept messages are handed back";
  EXPECT_EQ(get(idle.instance_id).state, State::kIdle);
  EXPECT_EQ(get(running.instance_id).state, State::kRunning);

  // Text form: every decision with its rule.
  refresh(/*dry_run=*/true, /*json=*/false);
  EXPECT_NE(out.str().find("would terminate " + idle.instance_id + " [deadline.idle]"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("would drain " + running.instance_id + " [deadline.running]"), std::string::npos);
  EXPECT_NE(out.str().find("[ec2.untracked]"), std::string::npos);
  EXPECT_NE(out.str().find("[pool.malformed]"), std::string::npos);
  EXPECT_NE(out.str().find("[ghost.runner]"), std::string::npos);
  EXPECT_NE(out.str().find("(dry run)"), std::string::npos);
}

TEST_F(RefreshTest, OneFailureDoesNotAbortTheRestAndExitsOne) {
  InstanceRecord a = put(1, State::kIdle);
  InstanceRecord b = put(2, State::kIdle);
  runners.add(7, pool::runner_name("ci", id_of(9), 1));
  later(settings.timeouts.idle_ttl_ms);
  compute.fail_terminate = {a.instance_id};
  EXPECT_EQ(refresh(), kExitFailed) << out.str();
  EXPECT_EQ(outcome("terminate", a.instance_id), "failed");
  EXPECT_EQ(get(a.instance_id).state, State::kTerminating) << "the retry is the next pass's";
  EXPECT_EQ(get(b.instance_id).state, State::kTerminated);
  EXPECT_EQ(runners.deleted, (std::vector<int64_t>{7}));
  EXPECT_EQ(report()["failed"].asInt(), 1);

  compute.fail_terminate.clear();
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(outcome("retry-terminate", a.instance_id), "done");
  EXPECT_EQ(get(a.instance_id).state, State::kTerminated);
}

TEST_F(RefreshTest, UnreadableGithubOrEc2SkipsOnlyTheirRules) {
  InstanceRecord idle = put(1, State::kIdle);
  runners.add(7, pool::runner_name("ci", id_of(9), 1));
  compute.launch(id_of(3), kRefreshNow - 3'600'000);  // untracked
  later(settings.timeouts.idle_ttl_ms);
  runners.fail_list = true;
  compute.fail_pool_instances = true;
  EXPECT_EQ(refresh(), kExitFailed) << out.str();
  EXPECT_EQ(report()["errors"].size(), 2u);
  EXPECT_TRUE(runners.deleted.empty());
  EXPECT_EQ(compute.state(id_of(3)), "running") << "no EC2 view, no untracked sweep";
  EXPECT_EQ(get(idle.instance_id).state, State::kTerminated) << "the table's own rules still ran";
}

TEST_F(RefreshTest, OneRemoveTokenForAllDrains) {
  put(1, State::kRunning);
  put(2, State::kRunning);
  later(settings.timeouts.max_runtime_ms);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(runners.remove_tokens, 1);
  EXPECT_EQ(get(id_of(1)).state, State::kDraining);
  EXPECT_EQ(get(id_of(2)).state, State::kDraining);
  for (int n : {1, 2}) {  // sealed to each instance, for its generation
    const InstanceRecord r = get(id_of(n));
    pool::OpenedField token = pool::open_field(testing::test_seal_keys(), r.generation, "remove_token", r.remove_token);
    EXPECT_EQ(token.value.value_or(Secret()).reveal(), "remove-token") << token.error;
  }
}

TEST_F(RefreshTest, SweptMessagesAreDealtWithBeforeTheRemoveTokenIsFetched) {
  // The swept messages are hidden from provisions until their actions run: GitHub's answer for
  // the remove token (a drain needs it) must not come first.
  put(1, State::kRunning);
  later(settings.timeouts.max_runtime_ms);
  queue.send("small", "not json");  // depth 1, idle 0: a sweep, which deletes it
  size_t left_when_asked = 99;
  runners.on_remove_token = [&] { left_when_asked = queue.bodies("small").size(); };
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(runners.remove_tokens, 1);
  EXPECT_EQ(left_when_asked, 0u) << "the malformed message was deleted before the token was asked for";
  EXPECT_EQ(get(id_of(1)).state, State::kDraining);
}

TEST_F(RefreshTest, DrainedButNotReturnedGoesBackToThePoolWithAMessage) {
  InstanceRecord r = put(1, State::kDraining);
  ASSERT_TRUE(table.report(r.instance_id, {.signal = pool::AgentSignal::kDrained, .generation = r.generation}));
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  InstanceRecord now = get(r.instance_id);
  EXPECT_EQ(now.state, State::kIdle);
  EXPECT_FALSE(now.advertise_pending);
  auto bodies = queue.bodies("small");
  ASSERT_EQ(bodies.size(), 1u);
  EXPECT_EQ(pool::parse_pool_message(bodies[0])->generation, r.generation);
}

// Returned as a provision returns one (settle_drained): a runner GitHub still lists under the
// assignment's name (offline, so the plan believed `drained`) is deleted first; one it will not delete stays.
TEST_F(RefreshTest, DrainedButNotReturnedHasItsRunnerConfirmedGoneFirst) {
  InstanceRecord r = put(1, State::kDraining), held = put(2, State::kDraining);
  for (const auto& d : {r, held}) {
    runners.add(d.instance_id == r.instance_id ? 51 : 52, pool::runner_name("ci", d.instance_id, d.generation));
    ASSERT_TRUE(table.report(d.instance_id, {.signal = pool::AgentSignal::kDrained, .generation = d.generation}));
  }
  runners.busy = {52};
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(runners.deleted, (std::vector<int64_t>{51, 52})) << out.str();
  EXPECT_EQ(get(r.instance_id).state, State::kIdle);
  EXPECT_EQ(get(held.instance_id).state, State::kDraining);
  EXPECT_EQ(outcome("return-to-pool", held.instance_id), "kept") << out.str();
}

// A release that crashed after the drain: refresh applies the class's reuse policy as release would.
TEST_F(RefreshTest, DrainedButNotReturnedFollowsTheClassesReusePolicy) {
  settings.resource_class_reuse_policy["small"].reuse = pool::Reuse::kNever;
  InstanceRecord r = put(1, State::kDraining);
  ASSERT_TRUE(table.report(r.instance_id, {.signal = pool::AgentSignal::kDrained, .generation = r.generation}));
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(compute.state(r.instance_id), "shutting-down") << out.str();
  EXPECT_NE(get(r.instance_id).state, State::kIdle);
  EXPECT_NE(out.str().find("reuse-never"), std::string::npos) << out.str();
  EXPECT_TRUE(queue.bodies("small").empty());

  settings.resource_class_reuse_policy["small"].reuse = pool::Reuse::kSameScope;
  InstanceRecord s = put(2, State::kDraining);
  pool::LifecycleChange url;
  url.reg_url = "https://github.com/acme/app";
  ASSERT_TRUE(table.transition(s.instance_id, {}, url));
  ASSERT_TRUE(table.report(s.instance_id, {.signal = pool::AgentSignal::kDrained, .generation = s.generation}));
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(get(s.instance_id).state, State::kIdle);
  EXPECT_EQ(get(s.instance_id).reuse_scope_key, "repository:acme/app");
}

// The rule each action came from, for the first reported action of `kind` for `id`.
std::string rule_of(const Json::Value& report, const std::string& kind, const std::string& id) {
  for (const auto& a : report["actions"]) {
    if (a["action"].asString() == kind && a["instance_id"].asString() == id) return a["rule"].asString();
  }
  return "<none>";
}

TEST_F(RefreshTest, AgentSilenceIsItsOwnSetting) {
  settings.agent_silence = std::chrono::minutes(3);
  InstanceRecord r = put(1, State::kIdle);  // its agent last beat at kRefreshNow - 1s
  later(3 * 60'000 - 1'000 - 1);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(report()["actions"].size(), 0u) << "silent for just under agent_silence: " << out.str();
  later(1);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(outcome("terminate", r.instance_id), "done") << out.str();
  EXPECT_EQ(rule_of(report(), "terminate", r.instance_id), "agent.silent");
}

TEST_F(RefreshTest, AdvertiseGraceIsItsOwnSetting) {
  settings.advertise_grace = std::chrono::seconds(10);
  InstanceRecord r = put(1, State::kDraining);
  ASSERT_TRUE(table.report(r.instance_id, {.signal = pool::AgentSignal::kDrained, .generation = r.generation}));
  // A release returned it and sent its message, then died before clearing advertise_pending.
  pool::Step back = pool::return_to_pool(get(r.instance_id), kRefreshNow, settings.timeouts);
  ASSERT_TRUE(table.transition(r.instance_id, back.expect, back.change));
  queue.send("small", pool::pool_message_body({r.instance_id, r.generation}));
  ASSERT_TRUE(get(r.instance_id).advertise_pending);
  later(10'000 - 1);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(outcome("advertise", r.instance_id), "<none>") << "within advertise_grace: " << out.str();
  later(1);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(outcome("advertise", r.instance_id), "done") << out.str();
  EXPECT_EQ(rule_of(report(), "advertise", r.instance_id), "handshake.advertise");
  EXPECT_FALSE(get(r.instance_id).advertise_pending);
}

TEST_F(RefreshTest, SweepDeletesStaleAndMalformedAndReadvertisesTheLost) {
  InstanceRecord lost = put(1, State::kIdle);
  queue.queues["small"].clear();  // its message was lost
  InstanceRecord kept = put(2, State::kIdle, /*generation_claims=*/1);
  queue.send("small", pool::pool_message_body({kept.instance_id, kept.generation}));  // a duplicate
  queue.send("small", pool::pool_message_body({kept.instance_id, kept.generation - 1}));  // stale generation
  queue.send("small", pool::pool_message_body({id_of(9), 1}));  // no record
  queue.send("small", R"({"instance_id":"i-0000000a"})");       // malformed
  const size_t gets = table.gets(), batch_gets = table.batch_gets();
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(table.batch_gets() - batch_gets, 1u) << "the swept messages' records in one batch read";
  EXPECT_EQ(table.gets() - gets, 1u) << "only the lost one's re-read, right before it is advertised again";
  std::multiset<std::string> bodies;
  for (const auto& b : queue.bodies("small")) bodies.insert(b);
  EXPECT_EQ(bodies, (std::multiset<std::string>{pool::pool_message_body({kept.instance_id, kept.generation}),
                                                pool::pool_message_body({lost.instance_id, lost.generation})}))
      << out.str();
  EXPECT_TRUE(queue.all_visible());
  // Settled: the next pass has nothing to sweep.
  int receives = queue.receives;
  EXPECT_EQ(refresh(), kExitOk);
  EXPECT_EQ(queue.receives, receives);
}

TEST_F(RefreshTest, MessagesInFlightElsewhereAreNotTakenForLost) {
  InstanceRecord a = put(1, State::kIdle);
  put(2, State::kIdle);
  queue.send("small", "not json");  // depth 3, idle 2: a sweep
  // A provision holds a's message (received, judging it) while refresh sweeps.
  auto held = queue.receive("small", 1, Duration(0), Duration(30'000));
  ASSERT_EQ(held.size(), 1u);
  ASSERT_EQ(pool::parse_pool_message(held[0].body)->instance_id, a.instance_id);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(outcome("advertise", a.instance_id), "<none>") << out.str();
  EXPECT_EQ(queue.bodies("small").size(), 2u) << "the malformed one deleted, nothing duplicated";
}

TEST_F(RefreshTest, BusyGhostIsKeptAndReported) {
  runners.add(7, pool::runner_name("ci", id_of(9), 1));
  runners.busy = {7};
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(report()["actions"][0]["outcome"].asString(), "kept");
  EXPECT_EQ(runners.runners.size(), 1u);
}

TEST_F(RefreshTest, RunnersAreListedBeforeTheTableIsScanned) {
  // An instance launched and registered while refresh gathers its snapshot: its record exists
  // before its runner does. Listing runners first means every listed runner's record is in the
  // scan; scanning first would make this runner look a ghost and delete it.
  runners.on_list = [&] {
    if (runners.runners.empty()) {
      InstanceRecord r = put(1, State::kCreated, 0, kRefreshNow);
      runners.add(7, pool::runner_name("ci", r.instance_id, r.generation));
    }
  };
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(runners.lists, 1);
  EXPECT_TRUE(runners.deleted.empty()) << out.str();
  EXPECT_EQ(report()["actions"].size(), 0u) << out.str();
}

TEST_F(RefreshTest, GoneInstanceClosesItsRecordAndRetentionDeletesItLater) {
  InstanceRecord r = put(1, State::kRunning);
  compute.instances.erase(r.instance_id);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(get(r.instance_id).state, State::kTerminated);
  later(settings.timeouts.retention_ms);
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_FALSE(table.get(r.instance_id));
}

TEST_F(RefreshTest, UntaggedButLiveInstanceIsNotMistakenForGone) {
  InstanceRecord r = put(1, State::kRunning);
  compute.instances[r.instance_id].tags.clear();  // found by id, not by tag
  EXPECT_EQ(refresh(), kExitOk) << out.str();
  EXPECT_EQ(get(r.instance_id).state, State::kRunning);
}

TEST_F(RefreshTest, TextSummaryCountsPerAction) {
  put(1, State::kIdle);
  put(2, State::kIdle);
  later(settings.timeouts.idle_ttl_ms);
  EXPECT_EQ(refresh(false, /*json=*/false), kExitOk);
  EXPECT_NE(out.str().find("refresh ci: 2 close, 2 terminate"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace runpool::controller
