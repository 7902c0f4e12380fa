// refresh's rules for a shared pool's records: never returned to the pool, never advertised.
#include <gtest/gtest.h>

#include "common/pool/refresh_plan.h"
#include "common/pool/refresh_plan_testing.h"
#include "common/pool/runner_name.h"

// In the fixtures' namespace, so their helpers are found first and by this file alone.
namespace runpool::pool::refresh_testing {
namespace {

InstanceRecord shared(int n, State s) {
  InstanceRecord r = record(n, s, 1);
  r.shared = true;
  r.label = s == State::kIdle ? "" : "linux,x64";
  return r;
}

TEST(PlanRefreshShared, DrainedSharedRunnerIsTerminatedNotReturnedEvenPastItsDeadline) {
  for (int64_t deadline : {kNow + 600'000, kNow - 1}) {
    Fixture f;
    InstanceRecord r = shared(1, State::kDraining);
    signal(r, AgentSignal::kDrained, r.generation);
    r.deadline_ms = deadline;
    f.add(r);
    Action a = only(f.plan(), r.instance_id);
    EXPECT_EQ(a.kind, ActionKind::kTerminate);
    EXPECT_EQ(a.rule, "handshake.drained");
    EXPECT_NE(a.reason.find("shared"), std::string::npos) << a.reason;
  }
}

TEST(PlanRefreshShared, ARegisteredSharedRunnerNobodyMarkedIsMarkedRunning) {
  for (int64_t deadline : {kNow + 600'000, kNow - 1}) {  // before and after its boot deadline
    Fixture f;
    InstanceRecord r = shared(1, State::kCreated);
    signal(r, AgentSignal::kRegistered, r.generation);
    r.deadline_ms = deadline;
    f.add(r);
    Action a = only(f.plan(), r.instance_id);
    EXPECT_EQ(a.kind, ActionKind::kMarkRunning);
    EXPECT_EQ(a.rule, "handshake.registered");
  }
  // Not registered yet: nothing before the deadline; a run-scoped one waits for its provision.
  Fixture booting;
  booting.add(shared(2, State::kCreated));
  EXPECT_TRUE(booting.plan().actions.empty());
  Fixture run_scoped;
  InstanceRecord r = record(3, State::kCreated, 1);
  signal(r, AgentSignal::kRegistered, r.generation);
  run_scoped.add(r);
  EXPECT_TRUE(run_scoped.plan().actions.empty());
}

TEST(PlanRefreshShared, ADrainedSignalOfAnEarlierGenerationSaysNothing) {
  Fixture f;
  InstanceRecord r = shared(1, State::kDraining);
  r.generation = 2;
  signal(r, AgentSignal::kDrained, 1);
  f.add(r);
  EXPECT_TRUE(f.plan().actions.empty());
}

TEST(PlanRefreshShared, DeadlinesApplyAsToAnyRecord) {
  struct Case {
    State state;
    int deadline;  // 1: passed, 2: hard deadline passed too
    AgentSignal signal;
    ActionKind kind;
    const char* rule;
  };
  const std::vector<Case> cases = {
      {State::kRunning, 1, AgentSignal::kRegistered, ActionKind::kDrain, "deadline.running"},
      {State::kRunning, 2, AgentSignal::kRegistered, ActionKind::kTerminate, "deadline.running.hard"},
      // (created and registered: marked running, handshake.registered — a shared runner serves)
      {State::kCreated, 1, AgentSignal::kNone, ActionKind::kTerminate, "deadline.created"},
      {State::kDraining, 1, AgentSignal::kRegistered, ActionKind::kTerminate, "deadline.draining"},
  };
  for (const auto& c : cases) {
    Fixture f;
    InstanceRecord r = shared(1, c.state);
    signal(r, c.signal, r.generation);
    r.deadline_ms = kNow - 1;
    if (c.deadline == 2) r.hard_deadline_ms = kNow - 1;
    f.add(r);
    Action a = only(f.plan(), r.instance_id);
    EXPECT_EQ(a.kind, c.kind) << c.rule;
    EXPECT_EQ(a.rule, c.rule);
  }
}

TEST(PlanRefreshShared, AnIdleSharedRecordIsNeverAdvertisedNorCountedInTheQueue) {
  // Shared records never go idle; one that did (an older controller's return) is left to its
  // deadline, never handed to a provision.
  Fixture f;
  InstanceRecord r = shared(1, State::kIdle);
  r.advertise_pending = true;
  r.state_since_ms = kNow - 3'600'000;
  f.add(r);
  EXPECT_TRUE(f.plan().actions.empty()) << describe(f.plan().actions.front());
  EXPECT_TRUE(idle_records(f.s.records, "ci", "small").empty());

  f.s.pools.push_back(swept({}, {r}));  // a complete sweep that saw no message for it
  EXPECT_TRUE(f.plan().actions.empty()) << describe(f.plan().actions.front());

  f.s.records[0].deadline_ms = kNow - 1;
  EXPECT_EQ(only(f.plan(), r.instance_id).rule, "deadline.idle");
}

TEST(PlanRefreshShared, ARunScopedIdleRecordBesideItIsStillAdvertised) {
  Fixture f;
  InstanceRecord s = shared(1, State::kIdle);
  InstanceRecord pooled = record(2, State::kIdle);
  for (auto* r : {&s, &pooled}) {
    r->advertise_pending = true;
    r->state_since_ms = kNow - 3'600'000;
    f.add(*r);
  }
  auto plan = f.plan();
  EXPECT_TRUE(for_instance(plan, s.instance_id).empty());
  EXPECT_EQ(only(plan, pooled.instance_id).rule, "handshake.advertise");
  auto idle = idle_records(f.s.records, "ci", "small");
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0].instance_id, pooled.instance_id);
}

TEST(PlanRefreshShared, ASharedRunnerServingItsGenerationIsNoGhost) {
  Fixture f;
  InstanceRecord running = shared(1, State::kRunning);
  InstanceRecord draining = shared(2, State::kDraining);
  f.add(running);
  f.add(draining);
  f.s.runners = std::vector<RunnerView>{{5, runner_name("ci", running.instance_id, 1), true},
                                        {6, runner_name("ci", draining.instance_id, 1), false, false}};
  EXPECT_TRUE(f.plan().actions.empty()) << describe(f.plan().actions.front());
}

}  // namespace
}  // namespace runpool::pool::refresh_testing
