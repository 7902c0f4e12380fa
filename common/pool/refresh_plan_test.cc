#include "common/pool/refresh_plan.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/pool/refresh_plan_testing.h"
#include "common/pool/runner_name.h"

// In the fixtures' namespace, so their helpers are found first and by this file alone.
namespace runpool::pool::refresh_testing {
namespace {

// ---- deadlines, in every state

TEST(PlanRefresh, NothingToDoForHealthyRecordsInEveryState) {
  Fixture f;
  int n = 1;
  for (State s : kLive) {
    if (s == State::kTerminating) continue;  // terminating always retries
    f.add(record(n++, s));
  }
  InstanceRecord closed = record(n++, State::kTerminated);
  f.s.records.push_back(closed);  // retention not over, instance gone from EC2
  auto plan = f.plan();
  EXPECT_TRUE(plan.actions.empty()) << describe(plan.actions.front());
}

struct DeadlineCase {
  State state;
  AgentSignal signal;
  ActionKind kind;
  const char* rule;
};

TEST(PlanRefresh, DeadlinePassedInEveryState) {
  const std::vector<DeadlineCase> cases = {
      {State::kCreated, AgentSignal::kNone, ActionKind::kTerminate, "deadline.created"},
      {State::kCreated, AgentSignal::kBooted, ActionKind::kTerminate, "deadline.created"},
      {State::kCreated, AgentSignal::kRegistered, ActionKind::kDrain, "deadline.created.registered"},
      {State::kClaimed, AgentSignal::kNone, ActionKind::kTerminate, "deadline.claimed"},
      {State::kClaimed, AgentSignal::kRegistered, ActionKind::kDrain, "deadline.claimed.registered"},
      {State::kRunning, AgentSignal::kRegistered, ActionKind::kDrain, "deadline.running"},
      {State::kDraining, AgentSignal::kRegistered, ActionKind::kTerminate, "deadline.draining"},
      {State::kIdle, AgentSignal::kDrained, ActionKind::kTerminate, "deadline.idle"},
      {State::kTerminating, AgentSignal::kNone, ActionKind::kRetryTerminate, "terminating.overdue"},
  };
  for (const auto& c : cases) {
    for (int64_t past : {int64_t{0}, int64_t{1}, int64_t{3'600'000}}) {  // exactly at the deadline counts
      Fixture f;
      InstanceRecord r = record(1, c.state);
      signal(r, c.signal, r.generation);
      r.deadline_ms = kNow - past;
      f.add(r);
      Action a = only(f.plan(), r.instance_id);
      EXPECT_EQ(a.kind, c.kind) << state_name(c.state) << " " << agent_signal_name(c.signal) << " " << describe(a);
      EXPECT_EQ(a.rule, c.rule) << state_name(c.state);
      ASSERT_TRUE(a.record);
      EXPECT_EQ(a.record->generation, r.generation) << "the write is built from the record as read";
    }
  }
}

TEST(PlanRefresh, OneMillisecondBeforeTheDeadlineNothingHappens) {
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining, State::kIdle}) {
    Fixture f;
    InstanceRecord r = record(1, s);
    r.deadline_ms = kNow + 1;
    f.add(r);
    EXPECT_TRUE(f.plan().actions.empty()) << state_name(s);
  }
}

TEST(PlanRefresh, TerminatingIsRetriedUntilConfirmedAndOverdueIsReported) {
  Fixture f;
  f.add(record(1, State::kTerminating));
  Action a = only(f.plan(), id_of(1));
  EXPECT_EQ(a.kind, ActionKind::kRetryTerminate);
  EXPECT_EQ(a.rule, "terminating.retry");
  EXPECT_FALSE(a.warn);
  f.s.records[0].deadline_ms = kNow - 1;
  a = only(f.plan(), id_of(1));
  EXPECT_EQ(a.rule, "terminating.overdue");
  EXPECT_TRUE(a.warn);
}

TEST(PlanRefresh, RunningPastItsHardDeadlineIsTerminatedWithoutADrain) {
  Fixture f;
  InstanceRecord r = record(1, State::kRunning);
  r.deadline_ms = kNow - 3'600'000;
  r.hard_deadline_ms = kNow;
  f.add(r);
  Action a = only(f.plan(), r.instance_id);
  EXPECT_EQ(a.kind, ActionKind::kTerminate);
  EXPECT_EQ(a.rule, "deadline.running.hard");
}

TEST(PlanRefresh, DrainingPastItsHardDeadlineIsTerminatedEvenBeforeItsDeadline) {
  Fixture f;
  InstanceRecord r = record(1, State::kDraining);
  r.deadline_ms = kNow + 60'000;
  r.hard_deadline_ms = kNow - 1;
  f.add(r);
  EXPECT_EQ(only(f.plan(), r.instance_id).rule, "deadline.draining");
}

TEST(PlanRefresh, RetentionDeletesTerminatedRecordsOnlyOnceOver) {
  Fixture f;
  InstanceRecord over = record(1, State::kTerminated);
  over.deadline_ms = kNow;
  InstanceRecord kept = record(2, State::kTerminated);
  kept.deadline_ms = kNow + 1;
  f.s.records = {over, kept};
  auto plan = f.plan();
  Action a = only(plan, over.instance_id);
  EXPECT_EQ(a.kind, ActionKind::kDeleteRecord);
  EXPECT_EQ(a.rule, "retention");
  EXPECT_TRUE(for_instance(plan, kept.instance_id).empty());
}

// ---- the agent's signals

TEST(PlanRefresh, AgentFailedForTheCurrentGenerationTerminatesInEveryLiveState) {
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining, State::kIdle}) {
    Fixture f;
    InstanceRecord r = record(1, s);
    signal(r, AgentSignal::kFailed, r.generation);
    r.signal_detail = "runner would not configure";
    f.add(r);
    Action a = only(f.plan(), r.instance_id);
    EXPECT_EQ(a.kind, ActionKind::kTerminate) << state_name(s);
    EXPECT_EQ(a.rule, "agent.failed");
    EXPECT_NE(a.reason.find("would not configure"), std::string::npos);
  }
}

// keep_failed: a failed instance is kept instead of terminated, waits out its keep, then goes.
TEST(PlanRefresh, KeepFailedKeepsAFailedInstanceForItsKeepThenTerminatesIt) {
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining}) {
    Fixture f;
    f.p.keep_failed_ms = 2 * 3'600'000;
    InstanceRecord r = record(1, s);
    signal(r, AgentSignal::kFailed, r.generation);
    r.signal_detail = "runner would not configure";
    f.add(r);
    Action a = only(f.plan(), r.instance_id);
    EXPECT_EQ(a.kind, ActionKind::kKeep) << state_name(s);
    EXPECT_EQ(a.rule, "agent.failed.kept");
    EXPECT_NE(a.reason.find("would not configure"), std::string::npos);

    // Kept: left alone, whatever its deadlines say, until the keep is over.
    f.s.records.back().kept_until_ms = kNow + 1;
    f.s.records.back().deadline_ms = kNow - 600'000;
    f.s.records.back().hard_deadline_ms = kNow - 600'000;
    RefreshPlan kept = f.plan();
    EXPECT_TRUE(for_instance(kept, r.instance_id).empty()) << state_name(s);
    ASSERT_EQ(kept.notes.size(), 1u);
    EXPECT_NE(kept.notes[0].find("kept for inspection until"), std::string::npos) << kept.notes[0];
    f.s.records.back().kept_until_ms = kNow;
    f.p.keep_failed_ms = 0;  // turned off meanwhile: the keep still ends as it would have
    a = only(f.plan(), r.instance_id);
    EXPECT_EQ(a.kind, ActionKind::kTerminate);
    EXPECT_EQ(a.rule, "keep_failed.over");

    // Gone from EC2 while kept: the record is closed.
    f.s.ec2->clear();
    f.s.records.back().kept_until_ms = kNow + 1;
    EXPECT_EQ(only(f.plan(), r.instance_id).kind, ActionKind::kClose);
  }
}

TEST(PlanRefresh, KeepFailedKeepsAnInstanceThatNeverRegisteredByItsDeadline) {
  for (State s : {State::kCreated, State::kClaimed}) {
    for (AgentSignal sig : {AgentSignal::kNone, AgentSignal::kBooted}) {
      Fixture f;
      f.p.keep_failed_ms = 3'600'000;
      InstanceRecord r = record(1, s);
      r.deadline_ms = kNow - 1;
      signal(r, sig, r.generation);
      f.add(r);
      Action a = only(f.plan(), r.instance_id);
      EXPECT_EQ(a.kind, ActionKind::kKeep) << state_name(s);
      EXPECT_EQ(a.rule, "deadline." + std::string(state_name(s)) + ".kept");
      f.p.keep_failed_ms = 0;
      EXPECT_EQ(only(f.plan(), r.instance_id).rule, "deadline." + std::string(state_name(s))) << "off: terminated";
    }
  }
  // Registered past its deadline is no failure: drained as before.
  Fixture f;
  f.p.keep_failed_ms = 3'600'000;
  InstanceRecord r = record(1, State::kClaimed);
  r.deadline_ms = kNow - 1;
  signal(r, AgentSignal::kRegistered, r.generation);
  f.add(r);
  EXPECT_EQ(only(f.plan(), r.instance_id).kind, ActionKind::kDrain);
}

TEST(PlanRefresh, SignalsOfAnEarlierGenerationSayNothing) {
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining, State::kIdle}) {
    for (AgentSignal sig : {AgentSignal::kFailed, AgentSignal::kDrained, AgentSignal::kInterrupted}) {
      Fixture f;
      InstanceRecord r = record(1, s, 3);
      signal(r, sig, 2);
      f.add(r);
      EXPECT_TRUE(f.plan().actions.empty()) << state_name(s) << " " << agent_signal_name(sig);
    }
  }
}

TEST(PlanRefresh, DrainedButNeverReturnedIsReturnedEvenPastItsDeadline) {
  for (int64_t deadline : {kNow + 600'000, kNow - 1}) {
    Fixture f;
    InstanceRecord r = record(1, State::kDraining);
    signal(r, AgentSignal::kDrained, r.generation);
    r.deadline_ms = deadline;
    f.add(r);
    Action a = only(f.plan(), r.instance_id);
    EXPECT_EQ(a.kind, ActionKind::kReturnToPool);
    EXPECT_EQ(a.rule, "handshake.drained");
  }
}

TEST(PlanRefresh, InterruptedIdleInstanceIsRetiredAndARunningOneIsLeftToItsDrain) {
  Fixture f;
  InstanceRecord idle = record(1, State::kIdle);
  signal(idle, AgentSignal::kInterrupted, idle.generation);
  InstanceRecord running = record(2, State::kRunning);
  signal(running, AgentSignal::kInterrupted, running.generation);
  f.add(idle);
  f.add(running);
  auto plan = f.plan();
  EXPECT_EQ(only(plan, idle.instance_id).rule, "agent.interrupted");
  EXPECT_TRUE(for_instance(plan, running.instance_id).empty());
}

TEST(PlanRefresh, SilentIdleAgentIsRetiredAtTheBound) {
  Fixture f;
  InstanceRecord r = record(1, State::kIdle);
  r.state_since_ms = kNow - 3'600'000;
  r.heartbeat_ms = kNow - f.p.agent_silence_ms + 1;
  f.add(r);
  EXPECT_TRUE(f.plan().actions.empty());
  f.s.records[0].heartbeat_ms = kNow - f.p.agent_silence_ms;
  EXPECT_EQ(only(f.plan(), r.instance_id).rule, "agent.silent");
  // Never beaten, but returned to the pool just now: the silence counts from then.
  f.s.records[0].heartbeat_ms = 0;
  f.s.records[0].state_since_ms = kNow - 1000;
  EXPECT_TRUE(f.plan().actions.empty());
}

TEST(PlanRefresh, AnIdleInstanceMarkedForRetirementOrPastItsMaximumAgeIsRetired) {
  Fixture f;
  InstanceRecord marked = record(1, State::kIdle);
  marked.retire_pending = true;
  InstanceRecord young = record(2, State::kIdle);  // created an hour ago
  InstanceRecord old = record(3, State::kIdle);
  old.created_ms = kNow - 3 * 86'400'000LL;
  InstanceRecord other_class = record(4, State::kIdle);
  other_class.created_ms = old.created_ms;
  other_class.resource_class = "large";
  InstanceRecord running_old = record(5, State::kRunning);
  running_old.created_ms = old.created_ms;
  for (const auto& r : {marked, young, old, other_class, running_old}) f.add(r);
  f.p.max_instance_age_ms = {{"small", 3 * 86'400'000LL}};
  auto plan = f.plan();
  Action a = only(plan, marked.instance_id);
  EXPECT_EQ(a.kind, ActionKind::kTerminate);
  EXPECT_EQ(a.rule, "retire.pending");
  EXPECT_EQ(only(plan, old.instance_id).rule, "retire.max-age");
  EXPECT_TRUE(for_instance(plan, young.instance_id).empty());
  EXPECT_TRUE(for_instance(plan, other_class.instance_id).empty()) << "large has no maximum age";
  EXPECT_TRUE(for_instance(plan, running_old.instance_id).empty()) << "a job is never cut short: release decides";
  f.s.records[2].created_ms = kNow - 3 * 86'400'000LL + 1;
  EXPECT_TRUE(for_instance(f.plan(), old.instance_id).empty()) << "one millisecond younger than the limit";
}

TEST(PlanRefresh, ADrainedInstanceMarkedForRetirementIsTerminatedNotReturned) {
  Fixture f;
  InstanceRecord r = record(1, State::kDraining);
  signal(r, AgentSignal::kDrained, r.generation);
  r.retire_pending = true;
  f.add(r);
  Action a = only(f.plan(), r.instance_id);
  EXPECT_EQ(a.kind, ActionKind::kTerminate);
  EXPECT_EQ(a.rule, "retire.pending");
}

// ---- EC2 reconciliation

TEST(PlanRefresh, RecordsWhoseInstanceIsGoneAreClosedInEveryState) {
  for (const std::string ec2_state : {"terminated", "shutting-down", "<missing>"}) {
    for (State s : kLive) {
      Fixture f;
      InstanceRecord r = record(1, s);
      r.deadline_ms = kNow - 1;  // closing wins over every other rule
      signal(r, AgentSignal::kFailed, r.generation);
      f.s.records.push_back(r);
      if (ec2_state != "<missing>") f.s.ec2->push_back(instance(r.instance_id, ec2_state));
      Action a = only(f.plan(), r.instance_id);
      EXPECT_EQ(a.kind, ActionKind::kClose) << ec2_state << " " << state_name(s);
      EXPECT_EQ(a.rule, "ec2.gone");
    }
  }
}

TEST(PlanRefresh, AMissingInstanceWithinTheLaunchGraceIsNotClosed) {
  Fixture f;
  InstanceRecord r = record(1, State::kCreated);
  r.created_ms = kNow - f.p.launch_grace_ms + 1;
  f.s.records.push_back(r);  // not in EC2's answer yet
  auto plan = f.plan();
  EXPECT_TRUE(plan.actions.empty());
  EXPECT_EQ(plan.notes.size(), 1u);
  f.s.records[0].created_ms = kNow - f.p.launch_grace_ms;
  EXPECT_EQ(only(f.plan(), r.instance_id).kind, ActionKind::kClose);
}

TEST(PlanRefresh, StoppedInstancesAreTerminated) {
  for (const std::string st : {"stopping", "stopped"}) {
    Fixture f;
    InstanceRecord r = record(1, State::kRunning);
    f.s.records.push_back(r);
    f.s.ec2->push_back(instance(r.instance_id, st));
    Action a = only(f.plan(), r.instance_id);
    EXPECT_EQ(a.kind, ActionKind::kTerminate);
    EXPECT_EQ(a.rule, "ec2.stopped");
  }
}

TEST(PlanRefresh, WithoutEc2sViewOnlyTheTableDecides) {
  Fixture f;
  f.s.ec2.reset();
  InstanceRecord gone = record(1, State::kRunning);  // would be closed if EC2 had answered
  InstanceRecord expired = record(2, State::kIdle);
  expired.deadline_ms = kNow - 1;
  f.s.records = {gone, expired};
  auto plan = f.plan();
  EXPECT_TRUE(for_instance(plan, gone.instance_id).empty());
  EXPECT_EQ(only(plan, expired.instance_id).rule, "deadline.idle");
}

TEST(PlanRefresh, UntrackedInstancesAreTerminatedAfterTheLaunchGrace) {
  Fixture f;
  f.s.ec2->push_back(instance(id_of(1), "running", kNow - f.p.launch_grace_ms));      // old enough
  f.s.ec2->push_back(instance(id_of(2), "pending", kNow - f.p.launch_grace_ms + 1));  // inside the grace
  f.s.ec2->push_back(instance(id_of(3), "stopped", kNow - 7'200'000));
  InstanceRecord closed = record(4, State::kTerminated);  // closed too early, instance still up
  f.s.records.push_back(closed);
  f.s.ec2->push_back(instance(closed.instance_id));
  f.s.ec2->push_back(instance(id_of(5), "terminated"));
  f.s.ec2->push_back(instance(id_of(6), "shutting-down"));
  auto plan = f.plan();
  EXPECT_EQ(only(plan, id_of(1)).kind, ActionKind::kTerminateUntracked);
  EXPECT_EQ(only(plan, id_of(1)).rule, "ec2.untracked");
  EXPECT_FALSE(only(plan, id_of(1)).record);
  EXPECT_TRUE(for_instance(plan, id_of(2)).empty());
  EXPECT_EQ(only(plan, id_of(3)).kind, ActionKind::kTerminateUntracked);
  Action a = only(plan, closed.instance_id);
  EXPECT_EQ(a.kind, ActionKind::kTerminateUntracked);
  EXPECT_NE(a.reason.find("terminated"), std::string::npos);
  EXPECT_TRUE(for_instance(plan, id_of(5)).empty());
  EXPECT_TRUE(for_instance(plan, id_of(6)).empty());
}

TEST(PlanRefresh, InstancesOfOtherPoolsOrTablesAreNeverTerminated) {
  Fixture f;
  Ec2Instance other_table = instance(id_of(1));
  other_table.table_tag = "another-table";
  Ec2Instance other_pool = instance(id_of(2));
  other_pool.pool_tag = "other";
  Ec2Instance untagged_table = instance(id_of(3));
  untagged_table.table_tag = "";
  Ec2Instance no_launch_time = instance(id_of(4), "running", 0);
  f.s.ec2 = {other_table, other_pool, untagged_table, no_launch_time};
  InstanceRecord foreign = record(5, State::kIdle);  // a live record of another pool in the same table
  foreign.pool = "other";
  f.s.records.push_back(foreign);
  f.s.ec2->push_back(instance(foreign.instance_id));
  auto plan = f.plan();
  EXPECT_TRUE(plan.actions.empty()) << describe(plan.actions.front());
}

TEST(PlanRefresh, OtherPoolsRecordsAreIgnored) {
  Fixture f;
  InstanceRecord r = record(1, State::kIdle);
  r.pool = "other";
  r.deadline_ms = kNow - 1;
  f.s.records.push_back(r);
  f.s.ec2->clear();
  EXPECT_TRUE(f.plan().actions.empty());
}

// ---- re-advertising

TEST(PlanRefresh, AdvertisePendingIsResentAfterTheGraceWhenTheQueueWasNotSwept) {
  Fixture f;
  InstanceRecord r = record(1, State::kIdle);
  r.advertise_pending = true;
  r.state_since_ms = kNow - f.p.advertise_grace_ms + 1;
  f.add(r);
  EXPECT_TRUE(f.plan().actions.empty());
  f.s.records[0].state_since_ms = kNow - f.p.advertise_grace_ms;
  Action a = only(f.plan(), r.instance_id);
  EXPECT_EQ(a.kind, ActionKind::kAdvertise);
  EXPECT_EQ(a.rule, "handshake.advertise");
  EXPECT_EQ(a.resource_class, "small");
}

TEST(PlanRefresh, SweptClassIsDecidedByTheSweep) {
  Fixture f;
  InstanceRecord pending = record(1, State::kIdle);  // its message is in the queue: only clear the flag
  pending.advertise_pending = true;
  pending.state_since_ms = kNow - 3'600'000;
  InstanceRecord lost = record(2, State::kIdle);
  f.add(pending);
  f.add(lost);
  f.s.pools.push_back(swept({msg("m1", pending.instance_id, 2), msg("m2", id_of(9), 1), {"m3", "rh3", "{oops"}},
                            {pending, lost}));
  f.s.pools.back().fresh[id_of(9)] = std::nullopt;
  auto plan = f.plan();
  ASSERT_GE(plan.actions.size(), 5u);
  // Messages come first: they are invisible to provisions until released.
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(plan.actions[i].kind == ActionKind::kDeleteMessage || plan.actions[i].kind == ActionKind::kReleaseMessage)
        << describe(plan.actions[i]);
  }
  EXPECT_EQ(plan.actions[0].rule, "pool.valid");
  EXPECT_EQ(plan.actions[1].rule, "pool.stale");
  EXPECT_EQ(plan.actions[2].rule, "pool.malformed");
  EXPECT_TRUE(plan.actions[2].warn);
  auto p = for_instance(plan, pending.instance_id);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].kind, ActionKind::kMarkAdvertised);
  Action a = only(plan, lost.instance_id);
  EXPECT_EQ(a.kind, ActionKind::kAdvertise);
  EXPECT_EQ(a.rule, "pool.lost");
}

TEST(PlanRefresh, AnIdleInstanceIsNeverBothReadvertisedAndTerminated) {
  // Every reason to retire an idle instance, with every reason to advertise it, swept or not.
  for (bool sweep : {false, true}) {
    for (int reason = 0; reason < 5; ++reason) {
      Fixture f;
      InstanceRecord r = record(1, State::kIdle);
      r.advertise_pending = true;
      r.state_since_ms = kNow - 600'000;
      switch (reason) {
        case 0: r.deadline_ms = kNow - 1; break;
        case 1: signal(r, AgentSignal::kFailed, r.generation); break;
        case 2: signal(r, AgentSignal::kInterrupted, r.generation); break;
        case 3: r.heartbeat_ms = kNow - 3'600'000; break;
        case 4: break;  // stopped in EC2, below
      }
      f.add(r);
      if (reason == 4) f.s.ec2->back().state = "stopped";
      if (sweep) f.s.pools.push_back(swept({msg("m1", r.instance_id, r.generation)}, {r}));
      auto plan = f.plan();
      std::multiset<ActionKind> kinds;
      for (const auto& a : for_instance(plan, r.instance_id)) kinds.insert(a.kind);
      EXPECT_EQ(kinds.count(ActionKind::kTerminate), 1u) << reason;
      EXPECT_EQ(kinds.count(ActionKind::kAdvertise), 0u) << reason;
      EXPECT_EQ(kinds.count(ActionKind::kMarkAdvertised), 0u) << reason;
      EXPECT_EQ(kinds.count(ActionKind::kReleaseMessage), 0u) << "its message is not handed out again";
      if (sweep) {
        EXPECT_EQ(kinds.count(ActionKind::kDeleteMessage), 1u) << reason;
      }
    }
  }
}

// ---- ghost runners

RunnerView runner(int64_t id, const std::string& name) { return {id, name, false}; }

TEST(PlanRefresh, GhostRunnersAreDeleted) {
  Fixture f;
  InstanceRecord idle = record(1, State::kIdle, 3);
  InstanceRecord closed = record(2, State::kTerminated);
  InstanceRecord terminating = record(3, State::kTerminating);
  InstanceRecord running = record(4, State::kRunning, 5);
  f.add(idle);
  f.s.records.push_back(closed);
  f.add(terminating);
  f.add(running);
  f.s.runners = std::vector<RunnerView>{
      runner(11, runner_name("ci", id_of(9), 1)),           // no record
      runner(12, runner_name("ci", closed.instance_id, 2)),  // record terminated
      runner(13, runner_name("ci", terminating.instance_id, 2)),
      runner(14, runner_name("ci", idle.instance_id, 3)),    // drained and idle, still registered
      runner(15, runner_name("ci", idle.instance_id, 2)),    // an earlier generation
      runner(16, runner_name("ci", running.instance_id, 4)),  // an earlier generation of a running one
  };
  auto plan = f.plan();
  std::set<int64_t> deleted;
  for (const auto& a : plan.actions) {
    if (a.kind == ActionKind::kDeleteRunner) {
      EXPECT_EQ(a.rule, "ghost.runner");
      deleted.insert(a.runner_id);
    }
  }
  EXPECT_EQ(deleted, (std::set<int64_t>{11, 12, 13, 14, 15, 16}));
}

TEST(PlanRefresh, RunnersServingTheirGenerationAndForeignRunnersAreKept) {
  Fixture f;
  std::vector<RunnerView> runners;
  int n = 1;
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining}) {
    InstanceRecord r = record(n, s, 4);
    f.add(r);
    runners.push_back(runner(n, runner_name("ci", r.instance_id, 4)));
    ++n;
  }
  InstanceRecord r = record(n, State::kRunning, 4);
  f.add(r);
  runners.push_back(runner(50, runner_name("ci", r.instance_id, 5)));  // a generation the record never had
  runners.push_back(runner(51, "build-box"));
  runners.push_back(runner(52, runner_name("other", id_of(99), 1)));
  runners.push_back(runner(53, "CI-" + id_of(99) + "-g1"));
  runners.push_back(runner(54, runner_name("ci", id_of(99), 1) + " "));
  f.s.runners = runners;
  auto plan = f.plan();
  EXPECT_TRUE(plan.actions.empty()) << describe(plan.actions.front());
  EXPECT_EQ(plan.notes.size(), 1u);
}

TEST(PlanRefresh, WithoutGithubsViewNoRunnerIsTouched) {
  Fixture f;
  f.s.runners.reset();
  EXPECT_TRUE(f.plan().actions.empty());
}

// ---- every combination at once: one record action at most, and only sensible ones

TEST(PlanRefresh, EveryStateSignalDeadlineAndEc2ViewGivesAtMostOneRecordAction) {
  const std::vector<std::string> ec2_states = {"pending", "running", "stopping", "stopped", "shutting-down",
                                               "terminated", "<missing>"};
  for (State s : kLive) {
    for (AgentSignal sig : kSignals) {
      for (bool current : {true, false}) {
        for (int deadline : {0, 1, 2}) {  // not passed, passed, hard passed
          for (const auto& es : ec2_states) {
            for (bool pending : {false, true}) {
              Fixture f;
              InstanceRecord r = record(1, s, 3);
              signal(r, sig, current ? 3 : 2);
              r.advertise_pending = pending && s == State::kIdle;
              if (deadline >= 1) r.deadline_ms = kNow - 1;
              if (deadline == 2) r.hard_deadline_ms = kNow - 1;
              f.s.records.push_back(r);
              if (es != "<missing>") f.s.ec2->push_back(instance(r.instance_id, es));
              auto actions = for_instance(f.plan(), r.instance_id);
              std::string what = std::string(state_name(s)) + "/" + std::string(agent_signal_name(sig)) +
                                 (current ? "" : "(old)") + "/d" + std::to_string(deadline) + "/" + es;
              ASSERT_LE(actions.size(), 1u) << what;
              bool gone = es == "shutting-down" || es == "terminated" || es == "<missing>";
              if (gone) {
                ASSERT_EQ(actions.size(), 1u) << what;
                EXPECT_EQ(actions[0].kind, ActionKind::kClose) << what;
                continue;
              }
              if (s == State::kTerminating) {
                ASSERT_EQ(actions.size(), 1u) << what;
                EXPECT_EQ(actions[0].kind, ActionKind::kRetryTerminate) << what;
                continue;
              }
              if (actions.empty()) {
                // Nothing to do only when nothing is wrong.
                EXPECT_EQ(deadline, 0) << what;
                EXPECT_FALSE(current && sig == AgentSignal::kFailed) << what;
                EXPECT_FALSE(es == "stopping" || es == "stopped") << what;
                continue;
              }
              const Action& a = actions[0];
              // A drain is only ever started from a state that allows one, for a registered agent.
              if (a.kind == ActionKind::kDrain) {
                EXPECT_TRUE(s == State::kCreated || s == State::kClaimed || s == State::kRunning) << what;
                // (only running and draining records carry a hard deadline)
                EXPECT_FALSE(s == State::kRunning && deadline == 2) << what << ": past the hard deadline, terminated";
              }
              if (a.kind == ActionKind::kReturnToPool) {
                EXPECT_EQ(s, State::kDraining) << what;
                EXPECT_TRUE(current && sig == AgentSignal::kDrained) << what;
              }
              if (a.kind == ActionKind::kAdvertise) {
                EXPECT_EQ(s, State::kIdle) << what;
              }
              if (current && sig == AgentSignal::kFailed) {
                EXPECT_EQ(a.kind, ActionKind::kTerminate) << what;
              }
            }
          }
        }
      }
    }
  }
}

TEST(Describe, NamesTheActionSubjectAndRule) {
  Action a;
  a.kind = ActionKind::kTerminate;
  a.instance_id = "i-0000000a";
  a.rule = "deadline.idle";
  a.reason = "idle past its deadline by 4m";
  EXPECT_EQ(describe(a), "terminate i-0000000a [deadline.idle]: idle past its deadline by 4m");
}

}  // namespace
}  // namespace runpool::pool::refresh_testing
