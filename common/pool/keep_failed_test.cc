#include "common/pool/keep_failed.h"

#include <gtest/gtest.h>

// A namespace of its own: the unity build compiles this file with other tests of runpool::pool.
namespace runpool::pool::keep_failed_test {
namespace {

constexpr int64_t kNow = 1'800'000'000'000;
constexpr int64_t kHour = 3'600'000;

InstanceRecord record(State s, AgentSignal signal = AgentSignal::kNone, int64_t signal_generation = 4) {
  InstanceRecord r;
  r.instance_id = "i-0abc";
  r.state = s;
  r.generation = 4;
  r.deadline_ms = kNow - 1'000;
  r.signal = signal;
  r.signal_generation = signal_generation;
  return r;
}

const State kStates[] = {State::kCreated, State::kClaimed,     State::kRunning,   State::kDraining,
                         State::kIdle,    State::kTerminating, State::kTerminated};
const AgentSignal kSignals[] = {AgentSignal::kNone,    AgentSignal::kBooted, AgentSignal::kRegistered,
                                AgentSignal::kDrained, AgentSignal::kFailed, AgentSignal::kInterrupted};

// Every state, signal, keep setting and cause: kept only for a failure, only while it can serve.
TEST(KeepFailed, OnlyAFailureIsKeptAndOnlyWhenAsked) {
  for (State s : kStates) {
    for (AgentSignal sig : kSignals) {
      for (int64_t keep : {int64_t{0}, 2 * kHour}) {
        for (bool unregistered_failed : {false, true}) {
          const InstanceRecord r = record(s, sig);
          const bool can_keep = s == State::kCreated || s == State::kClaimed || s == State::kRunning ||
                                s == State::kDraining;
          const bool failed = sig == AgentSignal::kFailed ||
                              (unregistered_failed && (s == State::kCreated || s == State::kClaimed) &&
                               sig != AgentSignal::kRegistered);
          const KeepVerdict want = keep > 0 && can_keep && failed ? KeepVerdict::kKeep : KeepVerdict::kNotKept;
          EXPECT_EQ(keep_verdict(r, kNow, keep, unregistered_failed), want)
              << state_name(s) << " " << agent_signal_name(sig) << " keep " << keep << " unregistered "
              << unregistered_failed;
        }
      }
    }
  }
}

TEST(KeepFailed, ASignalOfAnEarlierAssignmentIsNoFailure) {
  EXPECT_EQ(keep_verdict(record(State::kRunning, AgentSignal::kFailed, 3), kNow, kHour, false), KeepVerdict::kNotKept);
  // registered for an earlier generation is not registered for this one
  EXPECT_EQ(keep_verdict(record(State::kClaimed, AgentSignal::kRegistered, 3), kNow, kHour, true), KeepVerdict::kKeep);
}

// A kept record waits out its keep, then goes, even once keep_failed is turned off meanwhile.
TEST(KeepFailed, AKeptRecordEndsWhenItsKeepDoes) {
  InstanceRecord r = record(State::kRunning, AgentSignal::kFailed);
  r.kept_until_ms = kNow + kHour;
  for (int64_t keep : {int64_t{0}, kHour}) {
    EXPECT_EQ(keep_verdict(r, kNow, keep, false), KeepVerdict::kKept);
    EXPECT_EQ(keep_verdict(r, kNow + kHour - 1, keep, false), KeepVerdict::kKept);
    EXPECT_EQ(keep_verdict(r, kNow + kHour, keep, false), KeepVerdict::kKeepOver);
  }
  r.state = State::kTerminating;
  EXPECT_EQ(keep_verdict(r, kNow, kHour, false), KeepVerdict::kNotKept) << "terminating already";
}

TEST(KeepFailed, TheKeepMovesTheDeadlinesAndTakesTheCredentials) {
  InstanceRecord r = record(State::kClaimed, AgentSignal::kBooted);
  r.reg_token = Secret("REG");
  r.jit_config = Secret("JIT");
  Step s = keep_for_inspection(r, kNow, 2 * kHour);
  EXPECT_EQ(s.expect.states, std::vector<State>{State::kClaimed});
  EXPECT_EQ(s.expect.generation, 4);
  EXPECT_EQ(s.change.kept_until_ms, kNow + 2 * kHour);
  EXPECT_EQ(s.change.deadline_ms, kNow + 2 * kHour) << "the agent's own backstop waits for the keep";
  EXPECT_FALSE(s.change.hard_deadline_ms) << "none to move";
  ASSERT_TRUE(s.change.reg_token);
  EXPECT_TRUE(s.change.reg_token->empty());
  ASSERT_TRUE(s.change.jit_config);
  EXPECT_TRUE(s.change.jit_config->empty());
  EXPECT_FALSE(s.change.state) << "the state stays: nothing claims a failed record";

  // A later deadline is never brought forward.
  r.state = State::kRunning;
  r.deadline_ms = kNow + 5 * kHour;
  r.hard_deadline_ms = kNow + kHour / 2;
  s = keep_for_inspection(r, kNow, 2 * kHour);
  EXPECT_EQ(s.change.deadline_ms, kNow + 5 * kHour);
  EXPECT_EQ(s.change.hard_deadline_ms, kNow + 2 * kHour);
}

TEST(KeepFailed, TheDescriptionSaysUntilWhen) {
  InstanceRecord r = record(State::kRunning);
  r.kept_until_ms = 1'800'000'000'000;
  EXPECT_EQ(kept_description(r), "kept for inspection until 2027-01-15T08:00:00Z (keep_failed)");
}

}  // namespace
}  // namespace runpool::pool::keep_failed_test
