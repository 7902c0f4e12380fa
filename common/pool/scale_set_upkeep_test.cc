#include "common/pool/scale_set_upkeep.h"

#include <gtest/gtest.h>

#include "common/pool/runner_name.h"

namespace runpool::pool {
namespace {

InstanceRecord rec(const std::string& id, State state, int64_t gen = 3, const std::string& label = "linux-big") {
  InstanceRecord r;
  r.instance_id = id;
  r.pool = "p";
  r.label = label;
  r.state = state;
  r.generation = gen;
  r.state_since_ms = 100;
  return r;
}

InstanceRecord reported(InstanceRecord r, AgentSignal s, int64_t for_gen = 0) {
  r.signal = s;
  r.signal_generation = for_gen ? for_gen : r.generation;
  return r;
}

RunnerPhase phase_of(const InstanceRecord& r, const std::set<std::string>& finished = {}) {
  auto runners = scale_set_runners({r}, "p", "linux-big", finished, 5'000);
  EXPECT_EQ(runners.size(), 1u);
  return runners.empty() ? RunnerPhase::kStarting : runners[0].phase;
}

TEST(ScaleSetRunners, PhasesFollowTheRecordAndTheAgent) {
  EXPECT_EQ(phase_of(rec("i-a", State::kCreated)), RunnerPhase::kStarting);
  EXPECT_EQ(phase_of(rec("i-a", State::kClaimed)), RunnerPhase::kStarting);
  EXPECT_EQ(phase_of(reported(rec("i-a", State::kClaimed), AgentSignal::kRegistered, 2)), RunnerPhase::kStarting)
      << "registered for an earlier generation says nothing of this one";
  EXPECT_EQ(phase_of(reported(rec("i-a", State::kClaimed), AgentSignal::kRegistered)), RunnerPhase::kArmed);
  EXPECT_EQ(phase_of(rec("i-a", State::kRunning)), RunnerPhase::kArmed);
  InstanceRecord busy = rec("i-a", State::kRunning);
  busy.busy = true;
  EXPECT_EQ(phase_of(busy), RunnerPhase::kBusy);
  EXPECT_EQ(phase_of(rec("i-a", State::kDraining)), RunnerPhase::kEnding);
  EXPECT_EQ(phase_of(reported(rec("i-a", State::kRunning), AgentSignal::kFailed)), RunnerPhase::kEnding);
}

TEST(ScaleSetRunners, ARunnerWhoseJobCompletedIsEndingBeforeItsDrainIsWritten) {
  const std::string name = runner_name("p", "i-a", 3);
  EXPECT_EQ(phase_of(rec("i-a", State::kRunning), {name}), RunnerPhase::kEnding);
  EXPECT_EQ(scale_set_runners({rec("i-a", State::kRunning)}, "p", "linux-big", {name}, 5'000)[0].since_ms, 5'000)
      << "ending since the completion was seen";
  EXPECT_EQ(phase_of(rec("i-a", State::kRunning, 4), {name}), RunnerPhase::kArmed)
      << "the completed job was an earlier generation's";
}

TEST(ScaleSetRunners, OnlyThePoolsLiveRecordsOfTheSetCount) {
  InstanceRecord other_pool = rec("i-b", State::kRunning);
  other_pool.pool = "q";
  InstanceRecord shared = rec("i-c", State::kRunning);
  shared.shared = true;
  std::vector<InstanceRecord> records = {rec("i-a", State::kRunning), other_pool, shared,
                                         rec("i-d", State::kRunning, 3, "other-set"), rec("i-e", State::kIdle, 3, ""),
                                         rec("i-f", State::kTerminating), rec("i-g", State::kTerminated)};
  auto runners = scale_set_runners(records, "p", "linux-big", {}, 5'000);
  ASSERT_EQ(runners.size(), 1u);
  EXPECT_EQ(runners[0].instance_id, "i-a");
  EXPECT_EQ(runners[0].since_ms, 100);
}

std::vector<UpkeepKind> kinds(const std::vector<InstanceRecord>& records, const std::set<std::string>& finished = {}) {
  std::vector<UpkeepKind> out;
  for (const Upkeep& u : plan_upkeep(records, "p", "linux-big", finished)) out.push_back(u.kind);
  return out;
}

TEST(PlanUpkeep, EachRecordGetsTheStepItsStateAndAgentCallFor) {
  using K = std::vector<UpkeepKind>;
  EXPECT_EQ(kinds({rec("i-a", State::kClaimed)}), K{}) << "not registered yet: nothing";
  EXPECT_EQ(kinds({reported(rec("i-a", State::kClaimed), AgentSignal::kRegistered)}), K{UpkeepKind::kMarkRunning});
  EXPECT_EQ(kinds({reported(rec("i-a", State::kCreated), AgentSignal::kRegistered)}), K{UpkeepKind::kMarkRunning});
  EXPECT_EQ(kinds({reported(rec("i-a", State::kClaimed), AgentSignal::kRegistered, 2)}), K{});
  EXPECT_EQ(kinds({rec("i-a", State::kRunning)}), K{}) << "armed: the demand plan decides";
  EXPECT_EQ(kinds({rec("i-a", State::kRunning)}, {runner_name("p", "i-a", 3)}), K{UpkeepKind::kDrainFinished});
  EXPECT_EQ(kinds({reported(rec("i-a", State::kClaimed), AgentSignal::kRegistered)}, {runner_name("p", "i-a", 3)}),
            K{UpkeepKind::kDrainFinished})
      << "a job may complete before the runner was marked running";
  EXPECT_EQ(kinds({rec("i-a", State::kDraining)}), K{}) << "draining: the agent is at work";
  EXPECT_EQ(kinds({reported(rec("i-a", State::kDraining), AgentSignal::kDrained)}), K{UpkeepKind::kSettle});
  EXPECT_EQ(kinds({reported(rec("i-a", State::kDraining), AgentSignal::kDrained, 2)}), K{})
      << "drained for an earlier generation";
  EXPECT_EQ(kinds({reported(rec("i-a", State::kDraining), AgentSignal::kDrained)}, {runner_name("p", "i-a", 3)}),
            K{UpkeepKind::kSettle});
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining}) {
    EXPECT_EQ(kinds({reported(rec("i-a", s), AgentSignal::kFailed)}), K{UpkeepKind::kRetireFailed}) << state_name(s);
  }
  for (State s : {State::kIdle, State::kTerminating, State::kTerminated}) {
    EXPECT_EQ(kinds({reported(rec("i-a", s), AgentSignal::kFailed)}), K{}) << state_name(s);
  }
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining}) {
    InstanceRecord kept = reported(rec("i-a", s), AgentSignal::kFailed);
    kept.kept_until_ms = 1;
    EXPECT_EQ(kinds({kept}), K{}) << state_name(s) << ": kept for inspection (keep_failed), refresh ends it";
  }
  InstanceRecord other = reported(rec("i-a", State::kClaimed, 3, "other-set"), AgentSignal::kRegistered);
  EXPECT_EQ(kinds({other}), K{}) << "another set's";
}

}  // namespace
}  // namespace runpool::pool
