// scale-down's decision table, row by row (scale_down_plan.h), in both phases.
#include "common/pool/scale_down_plan.h"

#include <gtest/gtest.h>

#include "common/pool/scale_down_plan_testing.h"

// In the fixtures' namespace, so their helpers are found first and by this file alone.
namespace runpool::pool::scale_down_testing {
namespace {

const std::vector<State> kLive = {State::kCreated, State::kClaimed, State::kRunning,
                                  State::kDraining, State::kIdle,    State::kTerminating};

void expect(const ScaleDownDecision& d, ScaleDownKind kind, const std::string& rule, int phase = 2) {
  EXPECT_EQ(scale_down_kind_name(d.kind), scale_down_kind_name(kind)) << describe(d);
  EXPECT_EQ(d.rule, rule) << describe(d);
  EXPECT_EQ(d.phase, phase) << describe(d);
}

// ---- phase 2

TEST(ScaleDownPhase2, BypassKeepsEveryStateWhateverElseApplies) {
  for (State s : kLive) {
    Fixture f;
    f.quota("small", 0);
    f.s.runners[kOwner].reset();  // the owner's list failed too
    InstanceRecord r = record(1, s);
    r.bypass_removal = true;
    r.signal = AgentSignal::kDrained;
    r.signal_generation = 1;
    f.add(r);
    expect(only(f.plan(), r.instance_id), ScaleDownKind::kKeep, "bypass");
  }
}

TEST(ScaleDownPhase2, AFailedInstanceKeptForInspectionIsRefreshs) {
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining}) {
    Fixture f;
    f.quota("small", 0);
    InstanceRecord r = record(1, s);
    r.signal = AgentSignal::kFailed;
    r.signal_generation = 1;
    r.kept_until_ms = 1;  // over or not: refresh's to end
    f.add(r);
    expect(only(f.plan(), r.instance_id), ScaleDownKind::kKeep, "kept");
  }
}

TEST(ScaleDownPhase2, TerminatingIsRefreshs) {
  Fixture f;
  f.add(record(1, State::kTerminating));
  ScaleDownDecision d = only(f.plan(), id_of(1));
  expect(d, ScaleDownKind::kKeep, "terminating");
  EXPECT_EQ(d.owner, "") << "needs no GitHub";
}

TEST(ScaleDownPhase2, OnlyASharedRunnerDrainedForItsGenerationIsTerminated) {
  struct Case {
    bool shared;
    AgentSignal signal;
    int64_t signal_generation;
    ScaleDownKind kind;
    const char* rule;
  };
  const std::vector<Case> cases = {
      {true, AgentSignal::kDrained, 2, ScaleDownKind::kTerminate, "drained"},
      {true, AgentSignal::kDrained, 1, ScaleDownKind::kKeep, "draining"},  // an earlier generation's
      {true, AgentSignal::kRegistered, 2, ScaleDownKind::kKeep, "draining"},
      {false, AgentSignal::kDrained, 2, ScaleDownKind::kKeep, "draining"},  // refresh returns it to the pool
      {false, AgentSignal::kNone, 0, ScaleDownKind::kKeep, "draining"},
  };
  for (const auto& c : cases) {
    Fixture f;
    InstanceRecord r = record(1, State::kDraining, c.shared);
    r.generation = 2;
    r.signal = c.signal;
    r.signal_generation = c.signal_generation;
    f.add(r);
    ScaleDownDecision d = only(f.plan(), r.instance_id);
    expect(d, c.kind, c.rule);
    EXPECT_EQ(d.record.generation, 2) << "the write is built from the record as read";
  }
}

// `drained` is the agent's word, forgeable by a thief holding the instance role's credentials while
// the agent's drain still waits out a job: a shared instance is terminated on it only while GitHub
// does not list its runner online, and never while the list could not be read.
TEST(ScaleDownPhase2, ADrainedSharedRunnerGithubListsOnlineIsNotTerminated) {
  enum class Github { kNotListed, kOffline, kOnline, kOnlineBusy, kListFailed, kOtherRunnerOnline };
  struct Case {
    Github github;
    ScaleDownKind kind;
    const char* rule;
  };
  const Case cases[] = {
      {Github::kNotListed, ScaleDownKind::kTerminate, "drained"},
      {Github::kOffline, ScaleDownKind::kTerminate, "drained"},
      {Github::kOnline, ScaleDownKind::kKeep, "drained.runner-online"},
      {Github::kOnlineBusy, ScaleDownKind::kKeep, "drained.runner-online"},
      {Github::kListFailed, ScaleDownKind::kKeep, "drained.unconfirmed"},
      {Github::kOtherRunnerOnline, ScaleDownKind::kTerminate, "drained"},  // a forged runner_id names it
  };
  for (const auto& c : cases) {
    Fixture f;
    InstanceRecord r = record(1, State::kDraining, true);
    r.signal = AgentSignal::kDrained;
    r.signal_generation = r.generation;
    r.runner_id = 555;
    f.add(r);
    const std::string own = runner_name("ci", r.instance_id, r.generation);
    switch (c.github) {
      case Github::kNotListed: break;
      case Github::kOffline: f.s.runners[kOwner]->push_back({101, own, false, false}); break;
      case Github::kOnline: f.s.runners[kOwner]->push_back({101, own, false, true}); break;
      case Github::kOnlineBusy: f.s.runners[kOwner]->push_back({101, own, true, true}); break;
      case Github::kListFailed: f.s.runners[kOwner] = std::nullopt; break;
      case Github::kOtherRunnerOnline: f.s.runners[kOwner]->push_back({555, "other-tenant-box", true, true}); break;
    }
    ScaleDownDecision d = only(f.plan(), r.instance_id);
    expect(d, c.kind, c.rule);
  }
  InstanceRecord shared = record(1, State::kDraining, true);
  EXPECT_TRUE(owners_to_list({shared}, "ci").empty()) << "still draining: nothing to check yet";
  shared.signal = AgentSignal::kDrained;
  shared.signal_generation = shared.generation;
  EXPECT_EQ(owners_to_list({shared}, "ci"), std::vector<std::string>{kOwner}) << "its drained is checked on the list";
}

TEST(ScaleDownPhase2, IdlePoolInstanceYoungerThanTheMinimumIsKeptAtTheMinimumItIsNot) {
  for (const std::string os : {"linux", "", "macos", "windows"}) {
    const bool windows = os == "windows";
    Fixture f;
    f.quota("small", 0);
    const int64_t min = windows ? f.p.min_running_windows_ms : f.p.min_running_linux_ms;
    InstanceRecord r = record(1, State::kIdle, false);
    r.os = os;
    r.created_ms = kNow - min + 1;
    f.add(r);
    expect(only(f.plan(), r.instance_id), ScaleDownKind::kKeep, "min-running-time");
    f.s.records[0].created_ms = kNow - min;
    ScaleDownDecision d = only(f.plan(), r.instance_id);
    expect(d, ScaleDownKind::kRetire, "idle.over-quota");
    EXPECT_EQ(d.owner, "");
  }
}

TEST(ScaleDownPhase2, WindowsKeepsItsLongerMinimumPastLinuxs) {
  Fixture f;
  f.quota("small", 0);
  InstanceRecord linux_box = record(1, State::kRunning);
  InstanceRecord windows_box = record(2, State::kRunning);
  windows_box.os = "windows";
  for (auto* r : {&linux_box, &windows_box}) {
    r->created_ms = kNow - f.p.min_running_linux_ms;  // exactly linux's minimum, under windows'
    f.listed(*r);
  }
  auto plan = f.plan();
  expect(only(plan, linux_box.instance_id), ScaleDownKind::kDrain, "idle.over-quota");
  expect(only(plan, windows_box.instance_id), ScaleDownKind::kKeep, "min-running-time");
}

TEST(ScaleDownPhase2, AFailedRunnerListKeepsTheOwnersBootingAndRunningInstances) {
  for (State s : {State::kCreated, State::kClaimed, State::kRunning}) {
    for (int how : {0, 1, 2}) {  // list failed, owner never listed, reg_url names no owner
      Fixture f;
      f.quota("small", 0);
      InstanceRecord r = record(1, s);
      if (how == 0) f.s.runners[kOwner].reset();
      if (how == 1) f.s.runners.clear();
      if (how == 2) r.reg_url = "https://github.com/";
      f.add(r);
      auto plan = f.plan();
      expect(only(plan, r.instance_id), ScaleDownKind::kKeep, "github.unavailable");
      if (how < 2) {
        ASSERT_EQ(plan.notes.size(), 1u);
        EXPECT_NE(plan.notes[0].find(kOwner), std::string::npos);
      }
    }
  }
}

TEST(ScaleDownPhase2, MissingFromGithubIsMarkedOnceTheBootTimeSinceTheStateBeganIsOver) {
  for (bool shared : {true, false}) {
    for (State s : {State::kCreated, State::kClaimed, State::kRunning}) {
      Fixture f;
      InstanceRecord r = record(1, s, shared);
      r.created_ms = kNow - 10 * kHour;  // launched long ago: a claimed pool instance registers anew
      r.state_since_ms = kNow - f.p.boot_time_ms + 1;
      f.add(r);
      ScaleDownDecision d = only(f.plan(), r.instance_id);
      expect(d, ScaleDownKind::kKeep, "missing.booting");
      EXPECT_EQ(d.owner, kOwner);
      f.s.records[0].state_since_ms = kNow - f.p.boot_time_ms;
      expect(only(f.plan(), r.instance_id), ScaleDownKind::kMarkOrphan, "missing.boot-exceeded");
    }
  }
}

TEST(ScaleDownPhase2, ARecordStampedSlightlyAfterNowIsNotTooYoungForAZeroMinimum) {
  Fixture f;
  f.p.min_running_linux_ms = 0;
  InstanceRecord r = record(1, State::kIdle);
  r.created_ms = kNow + 600;  // another process's AWS-clock estimate, a little ahead of ours
  f.add(r);
  expect(only(f.plan(), r.instance_id), ScaleDownKind::kRetire, "idle.over-quota");
}

TEST(ScaleDownPhase2, ARunnerIdFromAnEarlierGenerationIsNeitherMatchedNorLookedUp) {
  Fixture f;
  f.quota("small", 5);
  InstanceRecord claimed = record(1, State::kClaimed, false);
  claimed.generation = 3;
  claimed.runner_id = 55;  // generation 2's runner, deregistered at its release
  claimed.signal = AgentSignal::kDrained;
  claimed.signal_generation = 2;
  claimed.state_since_ms = kNow - 30'000;
  f.add(claimed);
  f.s.runners[kOwner]->push_back({55, runner_name("ci", claimed.instance_id, 2), false, false});
  ScaleDownDecision d = only(f.plan(), claimed.instance_id);
  expect(d, ScaleDownKind::kKeep, "missing.booting");
  EXPECT_EQ(d.runner_id, 0);
  claimed.orphan_since_ms = kNow;
  EXPECT_TRUE(orphan_lookups({claimed}, "ci").empty());
}

// runner_id is the agent's word: anyone with the instance role's credentials can forge it. A record
// is matched only by its assignment's runner name, so a forged id never makes another's runner count
// as its own — nor be drained, unlabelled or deleted in its name.
TEST(ScaleDownPhase2, ARecordIsMatchedByItsAssignmentsNameNeverByItsRunnerIdAlone) {
  for (int idle : {5, 0}) {
    Fixture f;
    f.quota("small", idle);
    InstanceRecord forged = record(1, State::kRunning);  // its id names another tenant's idle runner
    forged.runner_id = 77;
    registered(forged);
    f.add(forged);
    f.s.runners[kOwner]->push_back({77, "other-tenant-box", false, true});
    InstanceRecord id_elsewhere = record(2, State::kRunning);  // its name is listed, under another id
    id_elsewhere.runner_id = 78;
    registered(id_elsewhere);
    f.add(id_elsewhere);
    f.s.runners[kOwner]->push_back({79, runner_name("ci", id_elsewhere.instance_id, 1), false, true});
    InstanceRecord by_name = record(3, State::kRunning);
    f.listed(by_name);
    InstanceRecord old_gen = record(4, State::kRunning);  // only an earlier generation's runner is listed
    old_gen.generation = 2;
    f.add(old_gen);
    f.s.runners[kOwner]->push_back({80, runner_name("ci", old_gen.instance_id, 1), false, true});
    auto plan = f.plan();
    for (const auto& d : plan.decisions) {
      EXPECT_NE(d.runner_id, 77) << "another's runner taken for " << d.record.instance_id;
      EXPECT_NE(d.runner_id, 80) << "an earlier generation's runner taken for " << d.record.instance_id;
    }
    expect(only(plan, forged.instance_id), ScaleDownKind::kMarkOrphan, "missing.boot-exceeded");
    const ScaleDownKind spare = idle > 0 ? ScaleDownKind::kKeep : ScaleDownKind::kDrain;
    const char* rule = idle > 0 ? "idle.quota" : "idle.over-quota";
    ScaleDownDecision d = only(plan, id_elsewhere.instance_id);
    expect(d, spare, rule);
    EXPECT_EQ(d.runner_id, 79);
    d = only(plan, by_name.instance_id);
    expect(d, spare, rule);
    EXPECT_EQ(d.runner_id, 103);
    expect(only(plan, old_gen.instance_id), ScaleDownKind::kMarkOrphan, "missing.boot-exceeded");
  }
}

TEST(ScaleDownPhase2, FoundWhileBootingIsRegistering) {
  for (bool shared : {true, false}) {
    for (State s : {State::kCreated, State::kClaimed}) {
      Fixture f;
      f.quota("small", 0);
      InstanceRecord r = record(1, s, shared);
      f.listed(r);
      ScaleDownDecision d = only(f.plan(), r.instance_id);
      expect(d, ScaleDownKind::kKeep, "registering");
      EXPECT_EQ(d.runner_id, 101);
    }
  }
}

TEST(ScaleDownPhase2, ARunScopedRunningInstanceIsAWorkflowsWhateverTheQuota) {
  for (bool busy : {false, true}) {
    for (bool online : {false, true}) {
      Fixture f;
      f.quota("small", 0);
      InstanceRecord r = record(1, State::kRunning, false);
      f.listed(r, busy, online);
      expect(only(f.plan(), r.instance_id), ScaleDownKind::kKeep, "assigned");
    }
  }
}

TEST(ScaleDownPhase2, ASharedRunnerBusyByTheAgentOrByGithubIsKept) {
  struct Case {
    bool agent_busy, github_busy;
    const char* rule;
  };
  for (const auto& c : std::vector<Case>{{true, false, "busy.agent"},
                                         {true, true, "busy.agent"},
                                         {false, true, "busy.github"},
                                         {false, false, "idle.over-quota"}}) {
    Fixture f;
    f.quota("small", 0);
    InstanceRecord r = record(1, State::kRunning);
    r.busy = c.agent_busy;
    r.heartbeat_ms = kNow - 3 * kHour;  // in phase 2 any busy report counts, however old
    f.listed(r, c.github_busy);
    expect(only(f.plan(), r.instance_id), c.agent_busy || c.github_busy ? ScaleDownKind::kKeep : ScaleDownKind::kDrain,
           c.rule);
  }
}

TEST(ScaleDownPhase2, AnIdleSharedRunnerUsesASlotOrIsDrainedBeyondTheQuota) {
  Fixture f;
  f.quota("small", 1);
  InstanceRecord r = record(1, State::kRunning);
  f.listed(r, false, false);  // an offline runner is as idle as any
  ScaleDownDecision d = only(f.plan(), r.instance_id);
  expect(d, ScaleDownKind::kKeep, "idle.quota");
  EXPECT_EQ(d.owner, kOwner);
  f.quota("small", 0);
  d = only(f.plan(), r.instance_id);
  expect(d, ScaleDownKind::kDrain, "idle.over-quota");
  EXPECT_EQ(d.runner_id, 101);
  EXPECT_EQ(d.record.label, r.label);
  EXPECT_NE(d.reason.find("quota of 0"), std::string::npos) << d.reason;
}

TEST(ScaleDownPhase2, OtherPoolsAndTerminatedRecordsGetNoDecision) {
  Fixture f;
  InstanceRecord other = record(1, State::kIdle);
  other.pool = "other";
  InstanceRecord closed = record(2, State::kTerminated);
  InstanceRecord marked_other = record(3, State::kRunning);
  marked_other.pool = "ci-2";
  marked_other.orphan_since_ms = kNow - kHour;
  f.add(other);
  f.add(closed);
  f.add(marked_other);
  auto plan = f.plan();
  EXPECT_TRUE(plan.decisions.empty()) << describe(plan.decisions.front());
  EXPECT_TRUE(plan.notes.empty());
}

// ---- phase 1

InstanceRecord orphan(int n, State s = State::kRunning, int64_t runner_id = 0) {
  InstanceRecord r = record(n, s);
  r.orphan_since_ms = kNow - 5 * 60'000;
  r.runner_id = runner_id;
  if (runner_id) registered(r);
  return r;
}

// GitHub's answer for runner `id`: by default named as orphan(1)'s assignment's runner.
RunnerLookup found(int64_t id, bool busy, bool online, const std::string& name = runner_name("ci", id_of(1), 1)) {
  RunnerLookup l;
  l.result = RunnerLookup::Result::kFound;
  l.runner = {id, name, busy, online};
  return l;
}

TEST(ScaleDownPhase1, LastChanceLookups) {
  struct Case {
    std::optional<RunnerLookup> lookup;  // nullopt: never looked up
    ScaleDownKind kind;
    const char* rule;
  };
  RunnerLookup gone;
  gone.result = RunnerLookup::Result::kNotFound;
  RunnerLookup failed;
  failed.error = "HTTP 502";
  const std::vector<Case> cases = {
      {gone, ScaleDownKind::kTerminate, "orphan.gone"},
      {found(9, true, false), ScaleDownKind::kTerminate, "orphan.offline-busy"},
      {found(9, false, false), ScaleDownKind::kUnmarkOrphan, "orphan.false-positive"},
      {found(9, true, true), ScaleDownKind::kUnmarkOrphan, "orphan.false-positive"},
      {found(9, false, true), ScaleDownKind::kUnmarkOrphan, "orphan.false-positive"},
      // A runner_id naming another's runner (forged, or an earlier generation's): never deleted.
      {found(9, true, false, "other-tenant-box"), ScaleDownKind::kTerminate, "orphan.not-its-runner"},
      {found(9, false, true, "other-tenant-box"), ScaleDownKind::kTerminate, "orphan.not-its-runner"},
      {found(9, true, false, runner_name("ci", id_of(2), 1)), ScaleDownKind::kTerminate, "orphan.not-its-runner"},
      {failed, ScaleDownKind::kKeep, "orphan.lookup-failed"},
      {std::nullopt, ScaleDownKind::kKeep, "orphan.lookup-failed"},
  };
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining, State::kIdle}) {
    for (const auto& c : cases) {
      Fixture f;
      f.s.runners.clear();  // phase 1 needs no list
      InstanceRecord r = orphan(1, s, 9);
      f.add(r);
      if (c.lookup) f.s.lookups[9] = *c.lookup;
      ScaleDownDecision d = only(f.plan(), r.instance_id);
      expect(d, c.kind, c.rule, 1);
      EXPECT_EQ(d.runner_id, std::string(c.rule) == "orphan.not-its-runner" ? 0 : 9);
      EXPECT_EQ(d.owner, kOwner);
      if (c.lookup && c.lookup->result == RunnerLookup::Result::kFailed) {
        EXPECT_NE(d.reason.find("HTTP 502"), std::string::npos) << d.reason;
      }
    }
  }
}

TEST(ScaleDownPhase1, WithoutARunnerIdAnOrphanIsTerminated) {
  Fixture f;
  f.add(orphan(1));
  expect(only(f.plan(), id_of(1)), ScaleDownKind::kTerminate, "orphan.no-runner-id", 1);
}

TEST(ScaleDownPhase1, TheAgentsBusyReportSavesAnOrphanOnlyWhileItBeats) {
  for (int64_t runner_id : {int64_t{0}, int64_t{9}}) {
    Fixture f;
    InstanceRecord r = orphan(1, State::kRunning, runner_id);
    r.busy = true;
    r.heartbeat_ms = kNow - f.p.agent_silence_ms + 1;
    f.add(r);
    RunnerLookup gone;
    gone.result = RunnerLookup::Result::kNotFound;
    f.s.lookups[9] = gone;
    expect(only(f.plan(), r.instance_id), ScaleDownKind::kKeep, "orphan.agent-busy", 1);
    f.s.records[0].heartbeat_ms = kNow - f.p.agent_silence_ms;  // silent: its report says nothing
    expect(only(f.plan(), r.instance_id), ScaleDownKind::kTerminate,
           runner_id ? "orphan.gone" : "orphan.no-runner-id", 1);
    f.s.records[0].busy = false;
    f.s.records[0].heartbeat_ms = kNow;
    expect(only(f.plan(), r.instance_id), ScaleDownKind::kTerminate,
           runner_id ? "orphan.gone" : "orphan.no-runner-id", 1);
  }
}

TEST(ScaleDownPhase1, BypassKeepsAnOrphan) {
  Fixture f;
  InstanceRecord r = orphan(1);
  r.bypass_removal = true;
  f.add(r);
  expect(only(f.plan(), r.instance_id), ScaleDownKind::kKeep, "bypass", 1);
}

TEST(ScaleDownPhase1, ATerminatingOrphanIsLeftToRefreshInPhase2) {
  Fixture f;
  f.add(orphan(1, State::kTerminating, 9));
  expect(only(f.plan(), id_of(1)), ScaleDownKind::kKeep, "terminating", 2);
}

TEST(ScaleDownPhase1, OrphansComeFirstInIdOrder) {
  Fixture f;
  f.quota("small", 0);
  f.listed(record(1, State::kRunning));
  f.add(orphan(5));
  f.add(orphan(3));
  f.add(record(2, State::kIdle, false));
  auto plan = f.plan();
  ASSERT_EQ(plan.decisions.size(), 4u);
  EXPECT_EQ(plan.decisions[0].record.instance_id, id_of(3));
  EXPECT_EQ(plan.decisions[1].record.instance_id, id_of(5));
  EXPECT_EQ(plan.decisions[0].phase, 1);
  EXPECT_EQ(plan.decisions[1].phase, 1);
  EXPECT_EQ(plan.decisions[2].phase, 2);
  EXPECT_EQ(plan.decisions[3].phase, 2);
}

// ---- every combination: one decision per record, and each kind only where the table allows it

TEST(ScaleDown, EveryCombinationGivesOneSensibleDecision) {
  int cases = 0;
  for (State s : kLive) {
    for (bool shared : {false, true}) {
      for (bool marked : {false, true}) {
        for (bool bypass : {false, true}) {
          for (int listed : {0, 1, 2, 3}) {  // missing, listed idle, listed busy, list failed
            for (bool agent_busy : {false, true}) {
              for (int quota : {0, 1}) {
                Fixture f;
                f.quota("small", quota);
                InstanceRecord r = marked ? orphan(1, s, 9) : record(1, s, shared);
                r.shared = shared;
                r.bypass_removal = bypass;
                r.busy = agent_busy;
                if (listed == 1 || listed == 2) f.s.runners[kOwner]->push_back(runner_of(r, listed == 2));
                if (listed == 3) f.s.runners[kOwner].reset();
                f.s.lookups[9].result = RunnerLookup::Result::kNotFound;
                f.add(r);
                auto plan = f.plan();
                ++cases;
                ASSERT_EQ(plan.decisions.size(), 1u);
                const ScaleDownDecision& d = plan.decisions[0];
                const std::string what = describe(d);
                EXPECT_EQ(d.phase, marked && s != State::kTerminating ? 1 : 2) << what;
                if (bypass) {
                  EXPECT_EQ(d.kind, ScaleDownKind::kKeep) << what;
                }
                if (d.kind == ScaleDownKind::kDrain) {
                  EXPECT_TRUE(shared && s == State::kRunning && !agent_busy && listed == 1 && quota == 0) << what;
                }
                if (d.kind == ScaleDownKind::kRetire) {
                  EXPECT_TRUE(s == State::kIdle && quota == 0) << what;
                }
                if (d.kind == ScaleDownKind::kMarkOrphan) {
                  EXPECT_TRUE(!marked && listed == 0 && s != State::kDraining && s != State::kIdle) << what;
                }
                if (d.kind == ScaleDownKind::kUnmarkOrphan) {
                  EXPECT_TRUE(marked) << what;
                }
                if (d.kind == ScaleDownKind::kTerminate) {
                  EXPECT_TRUE(d.phase == 1 || (shared && s == State::kDraining)) << what;
                }
                if (s == State::kTerminating) {
                  EXPECT_EQ(d.kind, ScaleDownKind::kKeep) << what;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 6 * 2 * 2 * 2 * 4 * 2 * 2);
}

}  // namespace
}  // namespace runpool::pool::scale_down_testing
