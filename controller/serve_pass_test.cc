#include "controller/serve_pass.h"

#include <gtest/gtest.h>

#include "common/pool/runner_name.h"

namespace runpool::controller {
namespace {

using pool::State;
using pool::UpkeepKind;

constexpr int64_t kPassNow = 1'000'000;

pool::InstanceRecord set_record(const std::string& id, State state, int64_t gen = 3, int64_t since_ms = kPassNow - 600'000) {
  pool::InstanceRecord r;
  r.instance_id = id;
  r.pool = "p";
  r.label = "set";
  r.state = state;
  r.generation = gen;
  r.state_since_ms = since_ms;
  return r;
}
pool::InstanceRecord listening(pool::InstanceRecord r) {
  r.signal = pool::AgentSignal::kRegistered;
  r.signal_generation = r.generation;
  return r;
}
std::string name_of(const std::string& id, int64_t gen = 3) { return pool::runner_name("p", id, gen); }

struct PassCase {
  const char* what = "";
  std::vector<pool::InstanceRecord> records = {};
  SessionDemand session = {};
  std::optional<int> claimable = std::nullopt;
  std::set<std::string> known = {};  // runner names known under this session
  int min_armed = 1;
  int64_t return_wait_ms = 0;
  // Expected:
  bool needs_claimable = false;
  pool::DemandRule rule = pool::DemandRule::kSteady;
  int claim = 0;
  int awaited = 0;
  int launch = 0;
  std::vector<std::string> upkeep = {};  // "instance:kind"
  std::vector<std::string> forget = {};
  std::vector<std::string> remove = {};
  bool quiet = false;  // nothing to do, nothing on its way: the next timed pass may wait longer
};

SessionDemand demand(std::optional<int64_t> assigned, std::set<std::string> finished = {}) {
  SessionDemand d;
  d.assigned_jobs = assigned;
  d.finished = std::move(finished);
  return d;
}

std::vector<PassCase> cases() {
  using pool::DemandRule;
  return {
      {.what = "an empty set before any statistics: min_armed wanted, the depth asked for",
       .session = demand(std::nullopt), .min_armed = 2,
       .needs_claimable = true, .rule = DemandRule::kNoStatistics, .launch = 2},
      {.what = "the same with the depth read: claimed from the pool first, the rest launched",
       .session = demand(std::nullopt), .claimable = 1, .min_armed = 2,
       .rule = DemandRule::kNoStatistics, .claim = 1, .launch = 1},
      {.what = "as many runners as desired: nothing asked, nothing done; quiet",
       .records = {set_record("i-0000000a", State::kRunning)}, .session = demand(0), .quiet = true},
      {.what = "a busy runner and an armed one, as desired: quiet (the job's completion comes as a message)",
       .records = {set_record("i-0000000a", State::kRunning), [] {
                     pool::InstanceRecord r = set_record("i-0000000b", State::kRunning);
                     r.busy = true;
                     return r;
                   }()},
       .session = demand(1), .known = {name_of("i-0000000b")}, .quiet = true},
      {.what = "the same with the busy runner unknown under this session: not quiet, its end may have gone unheard",
       .records = {set_record("i-0000000a", State::kRunning), [] {
                     pool::InstanceRecord r = set_record("i-0000000b", State::kRunning);
                     r.busy = true;
                     return r;
                   }()},
       .session = demand(1)},
      {.what = "an empty set wanting none: quiet", .session = demand(0), .min_armed = 0, .quiet = true},
      {.what = "a runner starting (claimed, its agent not yet registered): not quiet, only the table tells",
       .records = {set_record("i-0000000a", State::kClaimed)}, .session = demand(0)},
      {.what = "a surplus runner armed within the grace: not quiet, it is removable once the grace ends",
       .records = {set_record("i-0000000a", State::kRunning, 3, kPassNow - 2'000),
                   set_record("i-0000000b", State::kRunning, 3, kPassNow - 1'000)},
       .session = demand(0)},
      {.what = "a claimed runner listening is marked running, and counts",
       .records = {listening(set_record("i-0000000a", State::kClaimed))}, .session = demand(0),
       .upkeep = {"i-0000000a:mark-running"}},
      {.what = "a finished runner is drained, and no longer counts: one more is wanted",
       .records = {set_record("i-0000000a", State::kRunning)}, .session = demand(0, {name_of("i-0000000a")}), .claimable = 0,
       .rule = DemandRule::kGrow, .launch = 1, .upkeep = {"i-0000000a:drain-finished"}},
      {.what = "a finished runner whose instance left the assignment is forgotten",
       .records = {set_record("i-0000000a", State::kDraining), set_record("i-0000000b", State::kRunning, 5)},
       .session = demand(0, {name_of("i-0000000a"), name_of("i-0000000b", 4), "not-a-runner-name"}),
       .forget = {name_of("i-0000000a"), name_of("i-0000000b", 4), "not-a-runner-name"}},
      {.what = "an instance being cleaned is awaited rather than launched while its class reuses",
       .records = {set_record("i-0000000a", State::kDraining, 3, kPassNow - 5'000)}, .session = demand(1), .claimable = 0,
       .min_armed = 0, .return_wait_ms = 60'000, .rule = DemandRule::kGrow, .awaited = 1},
      {.what = "armed runners beyond the demand are removed, longest armed first",
       .records = {set_record("i-000000e1", State::kRunning, 3, kPassNow - 120'000), set_record("i-000000d1", State::kRunning),
                   set_record("i-000000c1", State::kRunning, 3, kPassNow - 1'000)},
       .session = demand(0), .min_armed = 0, .rule = DemandRule::kShrink, .remove = {"i-000000d1", "i-000000e1"}},
      {.what = "before any statistics nothing is removed",
       .records = {set_record("i-0000000a", State::kRunning), set_record("i-0000000b", State::kRunning)},
       .session = demand(std::nullopt), .min_armed = 0, .rule = DemandRule::kNoStatistics},
  };
}

std::string kind_name(UpkeepKind k) { return pool::upkeep_kind_name(k); }

TEST(ServePass, DecidesFromTheSnapshotAndTheSession) {
  for (const PassCase& tc : cases()) {
    SCOPED_TRACE(tc.what);
    ServeSnapshot s;
    s.pool = "p";
    s.scale_set = "set";
    s.now_ms = kPassNow;
    s.records = tc.records;
    s.min_armed = tc.min_armed;
    s.max_runners = 10;
    s.return_wait_ms = tc.return_wait_ms;
    s.arm_grace_ms = 30'000;
    s.claimable = tc.claimable;
    s.known = tc.known;
    const ServePass p = plan_serve_pass(s, tc.session);
    EXPECT_EQ(p.needs_claimable, tc.needs_claimable);
    EXPECT_EQ(pool::demand_rule_name(p.plan.rule), std::string(pool::demand_rule_name(tc.rule))) << p.plan.why;
    EXPECT_EQ(p.plan.claim, tc.claim) << p.plan.why;
    EXPECT_EQ(p.plan.awaited, tc.awaited) << p.plan.why;
    EXPECT_EQ(p.plan.launch, tc.launch) << p.plan.why;
    std::vector<std::string> upkeep;
    for (const pool::Upkeep& u : p.upkeep) upkeep.push_back(u.record.instance_id + ":" + kind_name(u.kind));
    EXPECT_EQ(upkeep, tc.upkeep);
    std::vector<std::string> forget = p.forget;
    std::sort(forget.begin(), forget.end());
    std::vector<std::string> want_forget = tc.forget;
    std::sort(want_forget.begin(), want_forget.end());
    EXPECT_EQ(forget, want_forget);
    std::vector<std::string> removed;
    for (const pool::InstanceRecord& r : p.remove) removed.push_back(r.instance_id);
    EXPECT_EQ(removed, tc.remove);
    EXPECT_EQ(p.plan.remove, tc.remove) << "the records are the plan's, in its order";
    EXPECT_EQ(p.quiet, tc.quiet) << p.plan.why;
  }
}

TEST(ServePass, TheDepthChangesOnlyHowTheShortfallIsMet) {
  ServeSnapshot s;
  s.pool = "p";
  s.scale_set = "set";
  s.now_ms = kPassNow;
  s.min_armed = 3;
  s.max_runners = 10;
  const ServePass first = plan_serve_pass(s, demand(2));
  EXPECT_TRUE(first.needs_claimable);
  s.claimable = 4;
  const ServePass second = plan_serve_pass(s, demand(2));
  EXPECT_FALSE(second.needs_claimable);
  EXPECT_EQ(second.plan.desired, first.plan.desired);
  EXPECT_EQ(second.plan.claim, 4);
  EXPECT_EQ(second.plan.launch, 1);
}

pool::InstanceRecord busy(pool::InstanceRecord r) {
  r.busy = true;
  return r;
}

TEST(ServePass, ArmedRunnersAreLookedUpOnceUnderASession) {
  struct Case {
    const char* what;
    std::vector<pool::InstanceRecord> records;
    std::set<std::string> known;
    std::set<std::string> finished;
    std::vector<std::string> look_up;
    std::set<std::string> still_known;
  };
  const std::vector<Case> cases = {
      {"an armed runner not looked up yet is", {set_record("i-0000000a", State::kRunning)}, {}, {},
       {name_of("i-0000000a")}, {}},
      {"one looked up (or made) under this session is not, and stays known",
       {set_record("i-0000000a", State::kRunning)}, {name_of("i-0000000a")}, {}, {}, {name_of("i-0000000a")}},
      {"a busy one is not yet: it is looked up once its agent reports it idle",
       {busy(set_record("i-0000000a", State::kRunning))}, {}, {}, {}, {}},
      {"a starting one is not, but stays known if it was made under this session",
       {set_record("i-0000000a", State::kClaimed), set_record("i-0000000b", State::kClaimed)}, {name_of("i-0000000b")},
       {}, {}, {name_of("i-0000000b")}},
      {"one whose completion was heard is not: it is drained anyway",
       {set_record("i-0000000a", State::kRunning)}, {}, {name_of("i-0000000a")}, {}, {}},
      {"a known name of an earlier assignment is dropped; the new assignment's is looked up",
       {set_record("i-0000000a", State::kRunning, 4)}, {name_of("i-0000000a", 3), "not-a-runner-name"}, {},
       {name_of("i-0000000a", 4)}, {}},
      {"draining, idle and other sets' records are none",
       {set_record("i-0000000a", State::kDraining), set_record("i-0000000b", State::kIdle),
        [] {
          pool::InstanceRecord r = set_record("i-0000000c", State::kRunning);
          r.label = "other-set";
          return r;
        }()},
       {}, {}, {}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ServeSnapshot s;
    s.pool = "p";
    s.scale_set = "set";
    s.now_ms = kPassNow;
    s.records = c.records;
    const RunnerLookups got = plan_runner_lookups(s, c.known, c.finished);
    EXPECT_EQ(got.look_up, c.look_up);
    EXPECT_EQ(got.known, c.still_known);
  }
}

TEST(ServePass, OnlyARunnerOfTheSetItselfServesIt) {
  const auto runner = [](int64_t set_id) { return github::ScaleSetRunner{12, "p-i-0000000a-g3", set_id}; };
  EXPECT_TRUE(serves_scale_set(runner(8), 8));
  EXPECT_FALSE(serves_scale_set(std::nullopt, 8)) << "gone: removed after its job, or with its deleted set";
  EXPECT_FALSE(serves_scale_set(runner(7), 8)) << "the deleted set's, or another's";
  EXPECT_FALSE(serves_scale_set(runner(0), 8)) << "a runner of no set";
}

}  // namespace
}  // namespace runpool::controller
