#include "common/pool/transitions.h"

#include <gtest/gtest.h>

#include "common/pool/memory_state_table.h"

namespace runpool::pool {
namespace {

constexpr int64_t kTransitionNow = 1'800'000'000'000;
const Timeouts kT;
const std::vector<State> kAllStates = {State::kCreated, State::kClaimed,     State::kRunning,   State::kDraining,
                                       State::kIdle,    State::kTerminating, State::kTerminated};

bool run(MemoryStateTable& t, const std::string& id, const Step& s) { return t.transition(id, s.expect, s.change); }

InstanceRecord read(MemoryStateTable& t, const std::string& id) { return *t.get(id); }

class Lifecycle : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(table.create(launched_record("i-1", "pool", "run-1", "small", UsageClass::kSpot, "c7i.large",
                                             Secret("reg-1"), "https://github.com/o/r", kTransitionNow, kT)));
  }
  void agent(AgentSignal s) {
    ASSERT_TRUE(table.report("i-1", {.signal = s, .generation = read(table, "i-1").generation}));
  }
  MemoryStateTable table;
};

TEST_F(Lifecycle, LaunchRegisterReleaseReuse) {
  InstanceRecord r = read(table, "i-1");
  EXPECT_EQ(r.state, State::kCreated);
  EXPECT_EQ(r.generation, 1);
  EXPECT_EQ(r.deadline_ms, kTransitionNow + kT.boot_ms);

  EXPECT_FALSE(run(table, "i-1", mark_running(r, kTransitionNow, kT))) << "not before the agent registered";
  agent(AgentSignal::kRegistered);
  ASSERT_TRUE(run(table, "i-1", mark_running(read(table, "i-1"), kTransitionNow + 1, kT)));
  r = read(table, "i-1");
  EXPECT_EQ(r.state, State::kRunning);
  EXPECT_EQ(r.hard_deadline_ms, kTransitionNow + 1 + kT.max_runtime_ms + kT.hard_grace_ms);

  ASSERT_TRUE(run(table, "i-1", start_drain(r, Secret("rm"), kTransitionNow + 2, kT)));
  r = read(table, "i-1");
  EXPECT_EQ(r.state, State::kDraining);
  EXPECT_EQ(r.remove_token.reveal(), "rm");
  EXPECT_FALSE(run(table, "i-1", return_to_pool(r, kTransitionNow + 3, kT))) << "not before the agent drained";
  agent(AgentSignal::kDrained);
  ASSERT_TRUE(run(table, "i-1", return_to_pool(read(table, "i-1"), kTransitionNow + 3, kT)));
  r = read(table, "i-1");
  EXPECT_EQ(r.state, State::kIdle);
  EXPECT_TRUE(r.label.empty());
  EXPECT_TRUE(r.reg_token.empty());
  EXPECT_TRUE(r.remove_token.empty());
  EXPECT_TRUE(r.advertise_pending);
  EXPECT_EQ(r.deadline_ms, kTransitionNow + 3 + kT.idle_ttl_ms);
  ASSERT_TRUE(run(table, "i-1", advertised(r)));
  EXPECT_FALSE(read(table, "i-1").advertise_pending);

  // The next workflow claims it: generation 2, a fresh label, and the old signals no longer count.
  ASSERT_TRUE(run(table, "i-1", claim(read(table, "i-1"), "run-2", Secret("reg-2"), "u", kTransitionNow + 4, kT)));
  r = read(table, "i-1");
  EXPECT_EQ(r.state, State::kClaimed);
  EXPECT_EQ(r.generation, 2);
  EXPECT_EQ(r.label, "run-2");
  EXPECT_FALSE(agent_reported(r, AgentSignal::kDrained)) << "a signal of generation 1 says nothing about 2";
  EXPECT_FALSE(run(table, "i-1", mark_running(r, kTransitionNow + 5, kT)));
  agent(AgentSignal::kRegistered);
  EXPECT_TRUE(run(table, "i-1", mark_running(read(table, "i-1"), kTransitionNow + 5, kT)));
}

TEST_F(Lifecycle, TwoClaimsOfOneIdleRecordNeverBothWin) {
  agent(AgentSignal::kRegistered);
  ASSERT_TRUE(run(table, "i-1", mark_running(read(table, "i-1"), kTransitionNow, kT)));
  ASSERT_TRUE(run(table, "i-1", start_drain(read(table, "i-1"), Secret("rm"), kTransitionNow, kT)));
  agent(AgentSignal::kDrained);
  ASSERT_TRUE(run(table, "i-1", return_to_pool(read(table, "i-1"), kTransitionNow, kT)));
  InstanceRecord idle = read(table, "i-1");  // both controllers read the same idle record
  EXPECT_TRUE(run(table, "i-1", claim(idle, "run-a", Secret("a"), "u", kTransitionNow, kT)));
  EXPECT_FALSE(run(table, "i-1", claim(idle, "run-b", Secret("b"), "u", kTransitionNow, kT)));
  EXPECT_EQ(read(table, "i-1").label, "run-a");
  // Retiring the idle record it read also loses now: the claim came first.
  EXPECT_FALSE(run(table, "i-1", begin_terminate(idle, kTransitionNow, kT)));
}

TEST_F(Lifecycle, RetiringAnIdleRecordBeatsALaterClaim) {
  agent(AgentSignal::kRegistered);
  ASSERT_TRUE(run(table, "i-1", mark_running(read(table, "i-1"), kTransitionNow, kT)));
  ASSERT_TRUE(run(table, "i-1", start_drain(read(table, "i-1"), Secret("rm"), kTransitionNow, kT)));
  agent(AgentSignal::kDrained);
  ASSERT_TRUE(run(table, "i-1", return_to_pool(read(table, "i-1"), kTransitionNow, kT)));
  InstanceRecord idle = read(table, "i-1");
  EXPECT_TRUE(run(table, "i-1", begin_terminate(idle, kTransitionNow, kT)));
  EXPECT_FALSE(run(table, "i-1", claim(idle, "run-a", Secret("a"), "u", kTransitionNow, kT)));
  EXPECT_EQ(read(table, "i-1").state, State::kTerminating);
}

TEST_F(Lifecycle, ARetireMarkNeedsTheStateAndGenerationReadAndOutlivesTheDrain) {
  agent(AgentSignal::kRegistered);
  InstanceRecord created = read(table, "i-1");
  ASSERT_TRUE(run(table, "i-1", mark_running(created, kTransitionNow, kT)));
  EXPECT_FALSE(run(table, "i-1", mark_retire(created))) << "read while created: the record moved on";
  EXPECT_FALSE(read(table, "i-1").retire_pending);
  ASSERT_TRUE(run(table, "i-1", mark_retire(read(table, "i-1"))));
  ASSERT_TRUE(run(table, "i-1", start_drain(read(table, "i-1"), Secret("rm"), kTransitionNow, kT)));
  EXPECT_TRUE(read(table, "i-1").retire_pending) << "release reads it once drained";
}

// An operator's mark written between a caller's read and its write (runpoolctl retire, or a
// keep) fails the return and the claim made on that read: the mark is never undone.
TEST_F(Lifecycle, AMarkWrittenAfterTheReadFailsTheReturnAndTheClaim) {
  agent(AgentSignal::kRegistered);
  ASSERT_TRUE(run(table, "i-1", mark_running(read(table, "i-1"), kTransitionNow, kT)));
  ASSERT_TRUE(run(table, "i-1", start_drain(read(table, "i-1"), Secret("rm"), kTransitionNow, kT)));
  agent(AgentSignal::kDrained);
  const InstanceRecord drained = read(table, "i-1");
  LifecycleChange unmark{.kept_until_ms = 0, .retire_pending = false};
  ASSERT_TRUE(run(table, "i-1", mark_retire(read(table, "i-1"))));
  EXPECT_FALSE(run(table, "i-1", return_to_pool(drained, kTransitionNow, kT))) << "retire mark since the read";
  ASSERT_TRUE(table.transition("i-1", {}, unmark));
  ASSERT_TRUE(table.transition("i-1", {}, {.kept_until_ms = kTransitionNow + 60'000}));
  EXPECT_FALSE(run(table, "i-1", return_to_pool(drained, kTransitionNow, kT))) << "keep mark since the read";
  EXPECT_EQ(read(table, "i-1").state, State::kDraining);
  ASSERT_TRUE(table.transition("i-1", {}, unmark));
  ASSERT_TRUE(run(table, "i-1", return_to_pool(drained, kTransitionNow, kT))) << "unmarked: the same read returns it";

  const InstanceRecord idle = read(table, "i-1");
  ASSERT_TRUE(run(table, "i-1", mark_retire(idle)));
  EXPECT_FALSE(run(table, "i-1", claim(idle, "run-2", Secret("reg-2"), "u", kTransitionNow, kT)));
  EXPECT_EQ(read(table, "i-1").state, State::kIdle);
  ASSERT_TRUE(table.transition("i-1", {}, unmark));
  EXPECT_TRUE(run(table, "i-1", claim(idle, "run-2", Secret("reg-2"), "u", kTransitionNow, kT)));
}

TEST_F(Lifecycle, AnAgentOnAnOldGenerationCannotSignal) {
  EXPECT_FALSE(table.report("i-1", {.signal = AgentSignal::kRegistered, .generation = 0}));
  EXPECT_FALSE(table.report("i-1", {.take_reg_token = true, .generation = 2}));
  EXPECT_EQ(read(table, "i-1").reg_token.reveal(), "reg-1");
  EXPECT_TRUE(table.report("i-1", {.heartbeat_ms = kTransitionNow}));  // heartbeats need no generation
}

// Each step, tried from every state: it applies only from the states it names.
TEST(Transitions, EachStepAppliesOnlyFromItsStates) {
  struct Case {
    const char* name;
    std::function<Step(const InstanceRecord&)> step;
    std::vector<State> from;
  };
  std::vector<Case> cases = {
      {"claim", [](const InstanceRecord& r) { return claim(r, "L", Secret("t"), "u", kTransitionNow, kT); }, {State::kIdle}},
      {"mark_running", [](const InstanceRecord& r) { return mark_running(r, kTransitionNow, kT); },
       {State::kCreated, State::kClaimed}},
      {"start_drain", [](const InstanceRecord& r) { return start_drain(r, Secret("t"), kTransitionNow, kT); },
       {State::kCreated, State::kClaimed, State::kRunning}},
      {"return_to_pool", [](const InstanceRecord& r) { return return_to_pool(r, kTransitionNow, kT); }, {State::kDraining}},
      {"advertised", [](const InstanceRecord& r) { return advertised(r); }, {State::kIdle}},
      {"drain_idle_shared", [](const InstanceRecord& r) { return drain_idle_shared(r, Secret("t"), kTransitionNow, kT); },
       {State::kRunning}},
      // The orphan and bypass marks apply in every state: they only ever guard against a stale read.
      {"mark_orphan", [](const InstanceRecord& r) { return mark_orphan(r, kTransitionNow); }, kAllStates},
      {"unmark_orphan", [](const InstanceRecord& r) { return unmark_orphan(r); }, kAllStates},
      {"set_bypass_removal", [](const InstanceRecord& r) { return set_bypass_removal(r, true); }, kAllStates},
  };
  for (const auto& c : cases) {
    for (State s : kAllStates) {
      MemoryStateTable table;
      InstanceRecord r;
      r.instance_id = "i-x";
      r.state = s;
      r.generation = 3;
      r.label = "L";
      // Satisfy the agent-side requirements so only the state decides.
      r.signal = c.name == std::string("return_to_pool") ? AgentSignal::kDrained : AgentSignal::kRegistered;
      r.signal_generation = 3;
      ASSERT_TRUE(table.create(r));
      bool allowed = std::find(c.from.begin(), c.from.end(), s) != c.from.end();
      EXPECT_EQ(run(table, "i-x", c.step(r)), allowed) << c.name << " from " << state_name(s);
    }
  }
}

TEST(Transitions, TerminateAndCloseWorkFromTheStateTheyRead) {
  for (State s : kAllStates) {
    MemoryStateTable table;
    InstanceRecord r;
    r.instance_id = "i-x";
    r.state = s;
    r.generation = 2;
    ASSERT_TRUE(table.create(r));
    InstanceRecord moved = r;
    moved.state = s == State::kIdle ? State::kClaimed : State::kIdle;
    EXPECT_FALSE(run(table, "i-x", begin_terminate(moved, kTransitionNow, kT))) << "stale read of " << state_name(s);
    EXPECT_TRUE(run(table, "i-x", begin_terminate(r, kTransitionNow, kT))) << state_name(s);
    InstanceRecord terminating = *table.get("i-x");
    EXPECT_EQ(terminating.state, State::kTerminating);
    EXPECT_TRUE(run(table, "i-x", close_record(terminating, kTransitionNow, kT)));
    EXPECT_EQ(table.get("i-x")->state, State::kTerminated);
    EXPECT_EQ(table.get("i-x")->deadline_ms, kTransitionNow + kT.retention_ms);
  }
}

// A shared runner as scale-down reads it: running, registered, idle by the agent's report.
InstanceRecord shared_running(MemoryStateTable& table) {
  InstanceRecord r;
  r.instance_id = "i-s";
  r.state = State::kRunning;
  r.generation = 1;
  r.label = "linux,x64";
  r.shared = true;
  r.hard_deadline_ms = kTransitionNow + 3'600'000;
  r.signal = AgentSignal::kRegistered;
  r.signal_generation = 1;
  EXPECT_TRUE(table.create(r));
  return r;
}

TEST(Transitions, DrainIdleSharedIsStartDrainThatTheAgentsBusyReportStops) {
  MemoryStateTable table;
  InstanceRecord r = shared_running(table);
  Step s = drain_idle_shared(r, Secret("rm"), kTransitionNow, kT);
  Step plain = start_drain(r, Secret("rm"), kTransitionNow, kT);
  EXPECT_TRUE(s.expect.agent_not_busy);
  EXPECT_EQ(s.expect.generation, r.generation);
  EXPECT_EQ(s.expect.label, r.label);
  EXPECT_EQ(s.change.deadline_ms, plain.change.deadline_ms);
  EXPECT_EQ(s.change.hard_deadline_ms, plain.change.hard_deadline_ms);

  // The agent picked up a job after scale-down read the record: the drain loses.
  ASSERT_TRUE(table.report("i-s", {.busy = true}));
  EXPECT_FALSE(run(table, "i-s", s));
  EXPECT_EQ(read(table, "i-s").state, State::kRunning);
  ASSERT_TRUE(table.report("i-s", {.busy = false}));
  ASSERT_TRUE(run(table, "i-s", s));
  InstanceRecord d = read(table, "i-s");
  EXPECT_EQ(d.state, State::kDraining);
  EXPECT_EQ(d.remove_token.reveal(), "rm");
  EXPECT_EQ(d.deadline_ms, kTransitionNow + kT.drain_ms);
}

TEST(Transitions, DrainIdleSharedNeedsTheGenerationAndLabelRead) {
  MemoryStateTable table;
  InstanceRecord r = shared_running(table);
  InstanceRecord stale = r;
  stale.generation = 2;
  EXPECT_FALSE(run(table, "i-s", drain_idle_shared(stale, Secret("rm"), kTransitionNow, kT)));
  stale = r;
  stale.label = "other";
  EXPECT_FALSE(run(table, "i-s", drain_idle_shared(stale, Secret("rm"), kTransitionNow, kT)));
  EXPECT_TRUE(run(table, "i-s", drain_idle_shared(r, Secret("rm"), kTransitionNow, kT)));
}

TEST(Transitions, OrphanMarkFollowsTheStateAndGenerationRead) {
  MemoryStateTable table;
  InstanceRecord r = shared_running(table);
  InstanceRecord moved = r;
  moved.state = State::kClaimed;
  EXPECT_FALSE(run(table, "i-s", mark_orphan(moved, kTransitionNow))) << "the state moved on";
  moved = r;
  moved.generation = 2;
  EXPECT_FALSE(run(table, "i-s", mark_orphan(moved, kTransitionNow))) << "the generation moved on";
  EXPECT_EQ(read(table, "i-s").orphan_since_ms, 0);
  ASSERT_TRUE(run(table, "i-s", mark_orphan(r, kTransitionNow)));
  EXPECT_EQ(read(table, "i-s").orphan_since_ms, kTransitionNow);

  // Unmarking needs only the generation: a false positive may have moved on in state meanwhile.
  EXPECT_FALSE(run(table, "i-s", unmark_orphan(moved)));
  EXPECT_EQ(read(table, "i-s").orphan_since_ms, kTransitionNow);
  InstanceRecord draining = read(table, "i-s");
  ASSERT_TRUE(run(table, "i-s", start_drain(draining, Secret("rm"), kTransitionNow, kT)));
  ASSERT_TRUE(run(table, "i-s", unmark_orphan(r)));
  EXPECT_EQ(read(table, "i-s").orphan_since_ms, 0);
  EXPECT_EQ(read(table, "i-s").state, State::kDraining) << "nothing else changes";
}

TEST_F(Lifecycle, ANewAssignmentOrADrainEndsTheOrphanMark) {
  agent(AgentSignal::kRegistered);
  InstanceRecord r = read(table, "i-1");
  ASSERT_TRUE(run(table, "i-1", mark_running(r, kTransitionNow, kT)));
  ASSERT_TRUE(run(table, "i-1", mark_orphan(read(table, "i-1"), kTransitionNow)));
  ASSERT_TRUE(run(table, "i-1", start_drain(read(table, "i-1"), Secret("rm"), kTransitionNow, kT)));
  agent(AgentSignal::kDrained);
  ASSERT_TRUE(run(table, "i-1", return_to_pool(read(table, "i-1"), kTransitionNow, kT)));
  EXPECT_EQ(read(table, "i-1").orphan_since_ms, 0) << "drained and back in the pool: no longer suspect";
  // A mark set on an idle record (by hand, or an older controller) is gone once it is claimed.
  ASSERT_TRUE(table.transition("i-1", {}, {.orphan_since_ms = kTransitionNow}));
  ASSERT_TRUE(run(table, "i-1", claim(read(table, "i-1"), "run-2", Secret("reg-2"), "https://github.com/o/r", kTransitionNow, kT)));
  EXPECT_EQ(read(table, "i-1").orphan_since_ms, 0);
}

TEST(Transitions, BypassRemovalIsSetAndClearedOnAnyExistingItem) {
  MemoryStateTable table;
  InstanceRecord r = shared_running(table);
  ASSERT_TRUE(run(table, "i-s", set_bypass_removal(r, true)));
  EXPECT_TRUE(read(table, "i-s").bypass_removal);
  InstanceRecord stale = r;
  stale.generation = 9;
  stale.state = State::kIdle;
  ASSERT_TRUE(run(table, "i-s", set_bypass_removal(stale, false))) << "an operator's mark needs no read";
  EXPECT_FALSE(read(table, "i-s").bypass_removal);
  InstanceRecord missing = r;
  missing.instance_id = "i-gone";
  EXPECT_FALSE(run(table, "i-gone", set_bypass_removal(missing, true)));
  EXPECT_FALSE(table.get("i-gone"));
}

TEST(Transitions, DrainKeepsAnEarlierHardDeadline) {
  InstanceRecord r;
  r.state = State::kRunning;
  r.hard_deadline_ms = kTransitionNow + 1000;
  EXPECT_EQ(*start_drain(r, Secret("t"), kTransitionNow, kT).change.hard_deadline_ms, kTransitionNow + 1000);
  r.hard_deadline_ms = 0;
  EXPECT_EQ(*start_drain(r, Secret("t"), kTransitionNow, kT).change.hard_deadline_ms, kTransitionNow + kT.drain_ms);
}

TEST(Transitions, DeadlineAndSignalHelpers) {
  InstanceRecord r;
  r.deadline_ms = kTransitionNow;
  EXPECT_TRUE(deadline_passed(r, kTransitionNow));
  EXPECT_FALSE(deadline_passed(r, kTransitionNow - 1));
  r.deadline_ms = 0;
  EXPECT_FALSE(deadline_passed(r, kTransitionNow));
  r.generation = 4;
  r.signal = AgentSignal::kDrained;
  r.signal_generation = 3;
  EXPECT_FALSE(agent_reported(r, AgentSignal::kDrained));
  r.signal_generation = 4;
  EXPECT_TRUE(agent_reported(r, AgentSignal::kDrained));
}

TEST(Transitions, RefreshRemoveTokenOnlyForADrainThatHandedItsTokenBack) {
  InstanceRecord r;
  r.state = State::kDraining;
  r.generation = 5;
  EXPECT_TRUE(wants_remove_token(r));
  Step s = refresh_remove_token(r, Secret("fresh"));
  EXPECT_EQ(s.expect.states, std::vector<State>{State::kDraining});
  EXPECT_EQ(s.expect.generation, 5);
  ASSERT_TRUE(s.change.remove_token);
  EXPECT_EQ(s.change.remove_token->reveal(), "fresh");
  EXPECT_FALSE(s.change.state);
  EXPECT_FALSE(s.change.deadline_ms) << "a fresh token buys no time";
  r.remove_token = Secret("still there");
  EXPECT_FALSE(wants_remove_token(r));
  r.remove_token = Secret();
  for (AgentSignal sig : {AgentSignal::kDrained, AgentSignal::kFailed}) {
    r.signal = sig;
    r.signal_generation = 5;
    EXPECT_FALSE(wants_remove_token(r)) << agent_signal_name(sig);
    r.signal_generation = 4;  // an earlier assignment's word says nothing about this drain
    EXPECT_TRUE(wants_remove_token(r)) << agent_signal_name(sig);
  }
  r.signal = AgentSignal::kNone;
  for (State st : {State::kCreated, State::kClaimed, State::kRunning, State::kIdle, State::kTerminating, State::kTerminated}) {
    r.state = st;
    EXPECT_FALSE(wants_remove_token(r)) << state_name(st);
  }
}

TEST(Transitions, EveryTokenWrittenToASealedRecordIsSealedForItsFieldAndGeneration) {
  const SealKeys keys = make_seal_keys();
  InstanceRecord r = launched_record("i-1", "ci", "run-1", "small", UsageClass::kSpot, "c7i.large", Secret("reg-1"),
                                     "https://github.com/acme/app", 0, Timeouts{});
  r.jit_config = Secret("jit-1");
  give_seal_keys(r, keys);
  EXPECT_EQ(r.seal_key, keys.public_key);
  EXPECT_EQ(r.open_key, keys.private_key);
  auto opens = [&](const Secret& stored, int64_t generation, const char* field, const char* value) {
    OpenedField o = open_field(keys, generation, field, stored);
    return o.value && o.value->reveal() == value;
  };
  EXPECT_TRUE(opens(r.reg_token, 1, "reg_token", "reg-1"));
  EXPECT_TRUE(opens(r.jit_config, 1, "jit_config", "jit-1"));

  r.state = State::kIdle;
  r.generation = 4;
  Step c = claim(r, "run-2", Secret("reg-5"), "https://github.com/acme/app", 0, Timeouts{});
  EXPECT_TRUE(opens(*c.change.reg_token, 5, "reg_token", "reg-5")) << "sealed for the generation it starts";
  EXPECT_FALSE(opens(*c.change.reg_token, 4, "reg_token", "reg-5"));
  Step j = claim_jit(r, "run-2", Secret("jit-5"), "https://github.com/acme/app", 0, Timeouts{});
  EXPECT_TRUE(opens(*j.change.jit_config, 5, "jit_config", "jit-5"));
  EXPECT_TRUE(j.change.reg_token->empty());

  r.state = State::kRunning;
  Step d = start_drain(r, Secret("rm-4"), 0, Timeouts{});
  EXPECT_TRUE(opens(*d.change.remove_token, 4, "remove_token", "rm-4"));
  EXPECT_TRUE(start_drain(r, Secret(), 0, Timeouts{}).change.remove_token->empty()) << "nothing to seal";
  r.state = State::kDraining;
  EXPECT_TRUE(opens(*refresh_remove_token(r, Secret("rm-4b")).change.remove_token, 4, "remove_token", "rm-4b"));

  InstanceRecord legacy = r;  // launched before sealed tokens: written as they are
  legacy.seal_key.clear();
  EXPECT_EQ(start_drain(legacy, Secret("rm"), 0, Timeouts{}).change.remove_token->reveal(), "rm");
}

}  // namespace
}  // namespace runpool::pool
