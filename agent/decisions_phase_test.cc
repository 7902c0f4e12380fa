#include <gtest/gtest.h>

#include <vector>

#include "agent/decisions.h"

namespace runpool::agent {
namespace {

constexpr Phase kPhI = Phase::kIdle, kPhS = Phase::kServing, kPhD = Phase::kDraining, kPhX = Phase::kStopped,
                kPhT = Phase::kTerminating;

struct PhaseCase {
  PhaseEvent event;
  // The phase after the event, from each phase in the order idle, serving, draining, stopped, terminating.
  std::vector<Phase> after;
};

// Every phase × every event: the whole transition table of the agent's phase.
const std::vector<PhaseCase> kPhaseTable = {
    {PhaseEvent::kConfigured, {kPhX, kPhX, kPhX, kPhX, kPhX}},
    {PhaseEvent::kServing, {kPhS, kPhS, kPhS, kPhS, kPhS}},
    {PhaseEvent::kFailed, {kPhX, kPhX, kPhX, kPhX, kPhX}},
    {PhaseEvent::kDrainBegun, {kPhI, kPhD, kPhD, kPhX, kPhT}},
    {PhaseEvent::kListenerGone, {kPhX, kPhX, kPhX, kPhX, kPhX}},
    {PhaseEvent::kRunnerDone, {kPhI, kPhX, kPhD, kPhX, kPhT}},
    {PhaseEvent::kCleaned, {kPhI, kPhI, kPhI, kPhI, kPhI}},
    {PhaseEvent::kTerminating, {kPhT, kPhT, kPhT, kPhT, kPhT}},
};

TEST(PhaseStep, EveryPhaseUnderEveryEvent) {
  const std::vector<Phase> from = {kPhI, kPhS, kPhD, kPhX, kPhT};
  for (const PhaseCase& c : kPhaseTable) {
    ASSERT_EQ(c.after.size(), from.size());
    for (size_t i = 0; i < from.size(); ++i) {
      AgentState s;
      s.phase = from[i];
      s.generation = 4;
      EXPECT_EQ(advance(s, c.event, 9).phase, c.after[i])
          << phase_event_name(c.event) << " from " << phase_name(from[i]);
    }
  }
}

TEST(PhaseStep, ConfiguredAndServingTakeTheGenerationOthersKeepIt) {
  AgentState s;
  s.phase = Phase::kIdle;
  s.generation = 4;
  EXPECT_EQ(advance(s, PhaseEvent::kConfigured, 9).generation, 9);
  EXPECT_EQ(advance(s, PhaseEvent::kServing, 9).generation, 9);
  for (PhaseEvent e : {PhaseEvent::kFailed, PhaseEvent::kDrainBegun, PhaseEvent::kListenerGone,
                       PhaseEvent::kRunnerDone, PhaseEvent::kCleaned, PhaseEvent::kTerminating}) {
    EXPECT_EQ(advance(s, e, 9).generation, 4) << phase_event_name(e);
  }
}

TEST(PhaseStep, CleanedRecordsTheNewestServedAndForgetsTheReadiedUser) {
  AgentState s;
  s.phase = Phase::kStopped;
  s.generation = 7;
  s.last_served = 5;
  s.next_ready = true;
  AgentState n = advance(s, PhaseEvent::kCleaned);
  EXPECT_EQ(n.last_served, 7);
  EXPECT_FALSE(n.next_ready);
  s.last_served = 8;  // a newer assignment finished unserved already: never goes back
  EXPECT_EQ(advance(s, PhaseEvent::kCleaned).last_served, 8);
}

TEST(PhaseStep, OnlyThePhaseMovesTheRestIsKept) {
  AgentState s;
  s.phase = Phase::kServing;
  s.generation = 3;
  s.last_served = 2;
  s.interrupted = true;
  s.pre_run_failure = "pre-run script failed: exit 3";
  s.next_ready = true;
  AgentState n = advance(s, PhaseEvent::kDrainBegun);
  EXPECT_EQ(n.phase, Phase::kDraining);
  EXPECT_EQ(n.last_served, 2);
  EXPECT_TRUE(n.interrupted);
  EXPECT_EQ(n.pre_run_failure, s.pre_run_failure);
  EXPECT_TRUE(n.next_ready);
}

}  // namespace
}  // namespace runpool::agent
