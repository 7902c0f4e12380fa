#include "agent/decisions.h"

#include <gtest/gtest.h>

#include <set>

#include "common/pool/runner_fate.h"

namespace runpool::agent {
namespace {

using pool::AgentSignal;
using pool::InstanceRecord;
using pool::State;

const std::vector<State> kAllStates = {State::kCreated,  State::kClaimed,     State::kRunning,   State::kDraining,
                                       State::kIdle,     State::kTerminating, State::kTerminated};
const std::vector<Phase> kAllPhases = {Phase::kIdle, Phase::kServing, Phase::kDraining, Phase::kStopped,
                                       Phase::kTerminating};
const std::vector<AgentSignal> kAllSignals = {AgentSignal::kNone,    AgentSignal::kBooted, AgentSignal::kRegistered,
                                              AgentSignal::kDrained, AgentSignal::kFailed, AgentSignal::kInterrupted};

InstanceRecord rec(State s, int64_t gen, AgentSignal sig = AgentSignal::kNone, int64_t sig_gen = -1) {
  InstanceRecord r;
  r.instance_id = "i-1";
  r.state = s;
  r.generation = gen;
  r.label = "run-1";
  r.reg_url = "https://github.com/o/r";
  r.reg_token = Secret("reg");
  r.signal = sig;
  r.signal_generation = sig_gen < 0 ? gen : sig_gen;
  r.deadline_ms = 1'000'000;
  return r;
}

AgentState agent(Phase p, int64_t gen, int64_t last_served = 0) {
  AgentState a;
  a.phase = p;
  a.generation = gen;
  a.last_served = last_served;
  a.next_ready = true;
  return a;
}

Action act(const AgentState& a, const InstanceRecord& r) { return decide(a, r).action; }

// ---- decide: idle

TEST(DecideIdle, RegistersANewAssignmentWithCredentials) {
  for (State s : {State::kCreated, State::kClaimed}) {
    EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), rec(s, 3)), Action::kRegister);
    EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), rec(s, 3, AgentSignal::kBooted)), Action::kRegister);
    // A signal for an older generation says nothing about this one.
    EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), rec(s, 3, AgentSignal::kDrained, 2)), Action::kRegister);
    EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), rec(s, 3, AgentSignal::kFailed, 2)), Action::kRegister);
  }
}

TEST(DecideIdle, WaitsForAssignmentsAlreadyServedOrFailed) {
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 3), rec(State::kClaimed, 3)), Action::kWait);
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 5), rec(State::kClaimed, 3)), Action::kWait);
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), rec(State::kClaimed, 3, AgentSignal::kFailed)), Action::kWait);
  for (State s : {State::kIdle, State::kTerminating, State::kTerminated}) {
    EXPECT_EQ(act(agent(Phase::kIdle, 0, 0), rec(s, 9)), Action::kWait) << pool::state_name(s);
  }
  EXPECT_EQ(decide(agent(Phase::kIdle, 0, 0), std::nullopt).action, Action::kWait);
}

// A corrupted or forged record: labels a run-scoped assignment was never given (a comma adds
// labels), shell or control characters, a URL that is not a GitHub scope — refused, never
// registered. A shared pool's label list is fine.
TEST(DecideIdle, ReadiesTheNextJobUserOnceWhileInThePool) {
  AgentState a = agent(Phase::kIdle, 0, 3);
  a.next_ready = false;
  EXPECT_EQ(act(a, rec(State::kIdle, 3, AgentSignal::kDrained)), Action::kReadyNext);
  EXPECT_EQ(act(a, rec(State::kIdle, 0, AgentSignal::kBooted)), Action::kReadyNext) << "a fresh instance warmed up";
  // Not before it is in the pool (an assignment is registered at once), not while ending.
  EXPECT_EQ(act(a, rec(State::kClaimed, 4)), Action::kRegister);
  for (State s : {State::kDraining, State::kTerminating, State::kTerminated}) {
    EXPECT_NE(act(a, rec(s, 3)), Action::kReadyNext) << pool::state_name(s);
  }
  AgentState interrupted = a;
  interrupted.interrupted = true;  // takes no new assignment
  EXPECT_EQ(act(interrupted, rec(State::kIdle, 3)), Action::kWait);
  AgentState failed = a;
  failed.pre_run_failure = "pre-run script failed: exit 3";
  EXPECT_NE(act(failed, rec(State::kIdle, 3)), Action::kReadyNext);
  a.next_ready = true;
  EXPECT_EQ(act(a, rec(State::kIdle, 3)), Action::kWait);
}

TEST(DecideIdle, RefusesHostileLabelsAndRegistrationUrls) {
  for (const std::string& label : {std::string("run-1,victim-run"), std::string("x,$(touch y)"), std::string("a b"),
                                   std::string("run\n1"), std::string(","), std::string("run-1,"), std::string(101, 'l')}) {
    InstanceRecord r = rec(State::kClaimed, 3);
    r.label = label;
    EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), r), Action::kRefuse) << label;
  }
  for (const std::string& url : {std::string("https://github.com/o/r\";touch y;\""), std::string("ftp://github.com/o"),
                                 std::string("https://github.com"), std::string("https://github.com/o r"),
                                 std::string("file:///etc/passwd"), std::string("https://github.com/o/$(x)")}) {
    InstanceRecord r = rec(State::kClaimed, 3);
    r.reg_url = url;
    EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), r), Action::kRefuse) << url;
  }
  InstanceRecord shared = rec(State::kClaimed, 3);
  shared.shared = true;
  shared.label = "self-hosted,linux,x64,small";
  shared.reg_url = "http://127.0.0.1:8080/acme";
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), shared), Action::kRegister);
}

TEST(DecideIdle, RefusesAssignmentsItCannotServe) {
  InstanceRecord r = rec(State::kClaimed, 3);
  r.label.clear();
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), r), Action::kRefuse);
  r = rec(State::kClaimed, 3);
  r.reg_url.clear();
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), r), Action::kRefuse);
  r = rec(State::kClaimed, 3);
  r.reg_token = Secret();
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), r), Action::kRefuse);
  // A scale-set assignment carries a JIT configuration instead of the token.
  r.jit_config = Secret("jit");
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), r), Action::kRegister);
  // Registered (or running) for this generation, but no runner here: it is lost.
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), rec(State::kClaimed, 3, AgentSignal::kRegistered)), Action::kRefuse);
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), rec(State::kRunning, 3)), Action::kRefuse);
  // Interrupted instances take nothing new.
  AgentState a = agent(Phase::kIdle, 0, 2);
  a.interrupted = true;
  EXPECT_EQ(act(a, rec(State::kClaimed, 3)), Action::kRefuse);
  EXPECT_NE(decide(a, rec(State::kClaimed, 3)).reason.find("interruption"), std::string::npos);
}

TEST(DecideIdle, FinishesADrainOfAnAssignmentWithoutRunner) {
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 2), rec(State::kDraining, 3)), Action::kFinishUnserved);
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 3), rec(State::kDraining, 3, AgentSignal::kFailed)), Action::kFinishUnserved);
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 3), rec(State::kDraining, 3, AgentSignal::kDrained)), Action::kWait);
}

TEST(DecideIdle, AFailedPreRunScriptAnswersEveryGenerationWithFailedOnce) {
  AgentState a = agent(Phase::kIdle, 0, 0);
  a.pre_run_failure = "pre-run script failed: exit 3: no disk";
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining, State::kIdle}) {
    Decision d = decide(a, rec(s, 1));
    EXPECT_EQ(d.action, Action::kRefuse) << pool::state_name(s);
    EXPECT_EQ(d.reason, a.pre_run_failure) << "the reason is the failure's signal_detail";
    // Reported already for this generation: nothing more; a new generation is answered again.
    EXPECT_EQ(act(a, rec(s, 1, AgentSignal::kFailed)), Action::kWait) << pool::state_name(s);
    EXPECT_EQ(act(a, rec(s, 2, AgentSignal::kFailed, 1)), Action::kRefuse) << pool::state_name(s);
  }
  // Even an assignment it "served" before (last_served) is not registered.
  EXPECT_EQ(act(agent(Phase::kIdle, 0, 5), rec(State::kClaimed, 3)), Action::kWait);
  a.last_served = 5;
  EXPECT_EQ(act(a, rec(State::kClaimed, 3)), Action::kRefuse);
  for (State s : {State::kTerminating, State::kTerminated}) EXPECT_EQ(act(a, rec(s, 1)), Action::kWait);
  EXPECT_EQ(decide(a, std::nullopt).action, Action::kWait);
}

// ---- decide: serving

TEST(DecideServing, SupervisesDrainsOrAbandons) {
  for (State s : {State::kCreated, State::kClaimed, State::kRunning}) {
    EXPECT_EQ(act(agent(Phase::kServing, 3), rec(s, 3)), Action::kSupervise);
  }
  EXPECT_EQ(act(agent(Phase::kServing, 3), rec(State::kDraining, 3)), Action::kDrain);
  EXPECT_EQ(act(agent(Phase::kServing, 3), rec(State::kIdle, 3)), Action::kAbandon);
  for (State s : kAllStates) {
    EXPECT_EQ(act(agent(Phase::kServing, 3), rec(s, 4)), Action::kAbandon) << pool::state_name(s);
    EXPECT_EQ(act(agent(Phase::kServing, 3), rec(s, 2)), Action::kAbandon) << pool::state_name(s);
  }
  EXPECT_EQ(act(agent(Phase::kServing, 3), rec(State::kTerminating, 3)), Action::kWait);
  EXPECT_EQ(act(agent(Phase::kServing, 3), rec(State::kTerminated, 3)), Action::kWait);
  EXPECT_EQ(decide(agent(Phase::kServing, 3), std::nullopt).action, Action::kWait);
}

// ---- decide: draining, stopped, terminating

TEST(DecideDraining, AlwaysLetsTheDrainRun) {
  for (State s : kAllStates) {
    for (int64_t g : {2, 3, 4}) EXPECT_EQ(act(agent(Phase::kDraining, 3), rec(s, g)), Action::kWait);
  }
}

TEST(DecideStopped, DeregistersOnADrainElseWaitsOrCleans) {
  EXPECT_EQ(act(agent(Phase::kStopped, 3), rec(State::kDraining, 3)), Action::kDeregisterAndClean);
  EXPECT_EQ(act(agent(Phase::kStopped, 3), rec(State::kDraining, 3, AgentSignal::kFailed)),
            Action::kDeregisterAndClean);
  EXPECT_EQ(act(agent(Phase::kStopped, 3), rec(State::kDraining, 3, AgentSignal::kDrained)), Action::kCleanLocal);
  for (State s : {State::kCreated, State::kClaimed, State::kRunning}) {
    EXPECT_EQ(act(agent(Phase::kStopped, 3), rec(s, 3, AgentSignal::kFailed)), Action::kWait);
  }
  EXPECT_EQ(act(agent(Phase::kStopped, 3), rec(State::kIdle, 3)), Action::kCleanLocal);
  for (State s : kAllStates) EXPECT_EQ(act(agent(Phase::kStopped, 3), rec(s, 4)), Action::kCleanLocal);
  EXPECT_EQ(act(agent(Phase::kStopped, 3), rec(State::kTerminating, 3)), Action::kWait);
}

TEST(DecidePreRunFailed, ARunnerLeftConfiguredIsStoppedAndCleanedNeverServed) {
  // Only after a reboot: the runner of the assignment before it is not served again.
  AgentState a = agent(Phase::kServing, 3);
  a.pre_run_failure = "pre-run script failed: timed out after 10m";
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining, State::kIdle}) {
    EXPECT_EQ(act(a, rec(s, 3)), Action::kAbandon) << pool::state_name(s);
  }
  EXPECT_EQ(act(a, rec(State::kTerminating, 3)), Action::kWait);
  a.phase = Phase::kStopped;
  for (State s : {State::kCreated, State::kRunning, State::kDraining}) {
    EXPECT_EQ(act(a, rec(s, 3)), Action::kCleanLocal) << pool::state_name(s);
  }
  EXPECT_EQ(act(a, rec(State::kTerminated, 3)), Action::kWait);
}

TEST(DecideTerminating, DoesNothingElse) {
  for (State s : kAllStates) EXPECT_EQ(act(agent(Phase::kTerminating, 3), rec(s, 3)), Action::kWait);
}

// Properties over every phase × state × generation × signal × token combination.
TEST(Decide, InvariantsOverEveryCombination) {
  int combos = 0;
  for (Phase p : kAllPhases) {
    for (State s : kAllStates) {
      for (int64_t g : {2, 3, 4}) {
        for (AgentSignal sig : kAllSignals) {
          for (bool token : {false, true}) {
            for (bool interrupted : {false, true}) {
              for (bool pre_run_failed : {false, true}) {
                AgentState a = agent(p, 3, p == Phase::kIdle ? 3 : 2);
                a.interrupted = interrupted;
                if (pre_run_failed) a.pre_run_failure = "pre-run script failed: exit 3";
                InstanceRecord r = rec(s, g, sig);
                if (!token) r.reg_token = Secret();
                Decision d = decide(a, r);
                ++combos;
                EXPECT_FALSE(d.reason.empty());
                // Registration only from idle, for a newer assignment with its token, never interrupted.
                if (d.action == Action::kRegister) {
                  EXPECT_EQ(p, Phase::kIdle);
                  EXPECT_GT(g, a.last_served);
                  EXPECT_TRUE(token);
                  EXPECT_FALSE(interrupted);
                  EXPECT_TRUE(s == State::kCreated || s == State::kClaimed);
                }
                // Deregistration only when the controller drains this very assignment.
                if (d.action == Action::kDeregisterAndClean) {
                  EXPECT_EQ(p, Phase::kStopped);
                  EXPECT_EQ(s, State::kDraining);
                  EXPECT_EQ(g, a.generation);
                }
                if (d.action == Action::kDrain) {
                  EXPECT_EQ(p, Phase::kServing);
                  EXPECT_EQ(s, State::kDraining);
                }
                if (d.action == Action::kSupervise) {
                  EXPECT_EQ(p, Phase::kServing);
                }
                if (p == Phase::kDraining || p == Phase::kTerminating) {
                  EXPECT_EQ(d.action, Action::kWait);
                }
                // A failed pre-run script: nothing is served, every generation is answered `failed`.
                if (pre_run_failed) {
                  EXPECT_TRUE(d.action == Action::kWait || d.action == Action::kRefuse || d.action == Action::kAbandon ||
                              d.action == Action::kCleanLocal)
                      << action_name(d.action);
                  const bool ending = s == State::kTerminating || s == State::kTerminated;
                  if (p == Phase::kIdle && !ending && sig != AgentSignal::kFailed) {
                    EXPECT_EQ(d.action, Action::kRefuse);
                    EXPECT_EQ(d.reason, "pre-run script failed: exit 3");
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(combos, 5 * 7 * 3 * 6 * 2 * 2 * 2);
}

// ---- resume_step

ResumeFacts resume_facts(const std::optional<InstanceRecord>& r, std::optional<int64_t> configured, bool listener) {
  ResumeFacts f;
  f.state = initial_state(r, configured);
  f.record = r;
  f.listener_left = listener;
  return f;
}

TEST(ResumeStep, IdleCleansWhatIsLeftAndTakesTheStateAsItIs) {
  for (State st : kAllStates) {
    Resumption r = resume_step(resume_facts(rec(st, 4, AgentSignal::kDrained, 3), std::nullopt, false));
    EXPECT_EQ(r.state.phase, Phase::kIdle);
    EXPECT_TRUE(r.clean_leftovers);
    EXPECT_TRUE(r.drain_reason.empty());
  }
  EXPECT_TRUE(resume_step(resume_facts(std::nullopt, std::nullopt, false)).clean_leftovers);
}

TEST(ResumeStep, ServingKnowsWhetherTheRegistrationTokenIsStillInTheRecord) {
  InstanceRecord with = rec(State::kClaimed, 3, AgentSignal::kBooted);
  Resumption r = resume_step(resume_facts(with, 3, true));
  EXPECT_EQ(r.state.phase, Phase::kServing);
  EXPECT_FALSE(r.token_taken) << "the token is still there: taken before the Listener runs again";
  EXPECT_FALSE(r.clean_leftovers) << "the runner of the assignment is kept";
  InstanceRecord without = with;
  without.reg_token = Secret("");
  EXPECT_TRUE(resume_step(resume_facts(without, 3, true)).token_taken);
  EXPECT_TRUE(resume_step(resume_facts(without, 3, false)).token_taken);
}

// Exhaustively over states and signals: the mark counts only for the record's generation, assigned
// or already draining, once its runner was reported registered.
TEST(EndedEphemeralGeneration, OnlyARegisteredRunnerOfTheCurrentAssignmentEnded) {
  for (State st : kAllStates) {
    for (AgentSignal sig : kAllSignals) {
      const bool assigned = st == State::kCreated || st == State::kClaimed || st == State::kRunning ||
                            st == State::kDraining;
      const bool expected = assigned && sig == AgentSignal::kRegistered;
      EXPECT_EQ(ended_ephemeral_generation(rec(st, 4, sig), 4), expected ? std::optional<int64_t>(4) : std::nullopt)
          << pool::state_name(st) << " " << pool::agent_signal_name(sig);
      EXPECT_EQ(ended_ephemeral_generation(rec(st, 4, sig), 3), std::nullopt) << "a mark of an earlier assignment";
      EXPECT_EQ(ended_ephemeral_generation(rec(st, 4, sig, 3), 4), std::nullopt) << "a signal of an earlier assignment";
    }
  }
  EXPECT_EQ(ended_ephemeral_generation(rec(State::kRunning, 4, AgentSignal::kRegistered), std::nullopt), std::nullopt);
  EXPECT_EQ(ended_ephemeral_generation(std::nullopt, 4), std::nullopt);
}

TEST(ResumeStep, ADrainUnderWayIsResumed) {
  Resumption r = resume_step(resume_facts(rec(State::kDraining, 3, AgentSignal::kRegistered), 3, true));
  EXPECT_EQ(r.state.phase, Phase::kDraining);
  EXPECT_EQ(r.drain_reason, "resumed a drain after a restart");
  EXPECT_EQ(resume_step(resume_facts(rec(State::kDraining, 3), 3, false)).state.phase, Phase::kDraining);
}

TEST(ResumeStep, AListenerOfAnAssignmentThatIsOverIsDrainedBeforeTheCleaning) {
  // Another generation, or this one failed or drained: stopped; a Listener still running drains first.
  for (const InstanceRecord& r : {rec(State::kClaimed, 4), rec(State::kRunning, 3, AgentSignal::kFailed),
                                  rec(State::kDraining, 3, AgentSignal::kDrained), rec(State::kIdle, 3)}) {
    Resumption without = resume_step(resume_facts(r, 3, false));
    EXPECT_EQ(without.state.phase, Phase::kStopped);
    EXPECT_TRUE(without.drain_reason.empty());
    Resumption with = resume_step(resume_facts(r, 3, true));
    EXPECT_EQ(with.state.phase, Phase::kDraining);
    EXPECT_NE(with.drain_reason.find("left by an earlier agent"), std::string::npos);
    EXPECT_EQ(with.state.generation, 3);
  }
}

TEST(ResumeStep, AFailureOnRecordIsNotReportedAgain) {
  EXPECT_TRUE(resume_step(resume_facts(rec(State::kRunning, 3, AgentSignal::kFailed), 3, false)).failure_reported);
  EXPECT_FALSE(resume_step(resume_facts(rec(State::kRunning, 3, AgentSignal::kRegistered), 3, false)).failure_reported);
}

TEST(ResumeStep, BootedIsReportedUnlessTheRecordAlreadyHasASignalOfItsGeneration) {
  EXPECT_TRUE(resume_step(resume_facts(rec(State::kClaimed, 3), 3, false)).report_booted);
  EXPECT_TRUE(resume_step(resume_facts(rec(State::kClaimed, 4, AgentSignal::kDrained, 3), std::nullopt, false))
                  .report_booted);
  EXPECT_FALSE(resume_step(resume_facts(rec(State::kClaimed, 3, AgentSignal::kRegistered), 3, false)).report_booted)
      << "a signal of the generation is never replaced by booted";
  EXPECT_FALSE(resume_step(resume_facts(std::nullopt, std::nullopt, false)).report_booted);
}

// ---- initial_state

TEST(InitialState, WithoutLocalConfigurationItIsIdle) {
  AgentState s = initial_state(std::nullopt, std::nullopt);
  EXPECT_EQ(s.phase, Phase::kIdle);
  EXPECT_EQ(s.last_served, 0);
  s = initial_state(rec(State::kIdle, 4, AgentSignal::kDrained, 4), std::nullopt);
  EXPECT_EQ(s.phase, Phase::kIdle);
  EXPECT_EQ(s.last_served, 4);
  s = initial_state(rec(State::kClaimed, 5, AgentSignal::kDrained, 4), std::nullopt);
  EXPECT_EQ(s.last_served, 4);
  EXPECT_EQ(act(s, rec(State::kClaimed, 5, AgentSignal::kDrained, 4)), Action::kRegister);
}

TEST(InitialState, ARunnerConfiguredForTheCurrentAssignmentIsResumed) {
  for (State st : {State::kCreated, State::kClaimed, State::kRunning}) {
    for (AgentSignal sig : {AgentSignal::kNone, AgentSignal::kBooted, AgentSignal::kRegistered,
                            AgentSignal::kInterrupted}) {
      AgentState s = initial_state(rec(st, 3, sig), 3);
      EXPECT_EQ(s.phase, Phase::kServing) << pool::state_name(st);
      EXPECT_EQ(s.generation, 3);
    }
    EXPECT_EQ(initial_state(rec(st, 3, AgentSignal::kFailed), 3).phase, Phase::kStopped);
  }
  EXPECT_EQ(initial_state(rec(State::kDraining, 3), 3).phase, Phase::kDraining);
  EXPECT_EQ(initial_state(rec(State::kDraining, 3, AgentSignal::kFailed), 3).phase, Phase::kDraining);
  EXPECT_EQ(initial_state(rec(State::kDraining, 3, AgentSignal::kDrained), 3).phase, Phase::kStopped);
}

TEST(InitialState, ARunnerOfAnotherAssignmentIsStoppedAndCleaned) {
  for (State st : kAllStates) {
    AgentState s = initial_state(rec(st, 4), 3);
    EXPECT_EQ(s.phase, Phase::kStopped);
    EXPECT_EQ(s.generation, 3);
    EXPECT_EQ(act(s, rec(st, 4)), Action::kCleanLocal);
  }
  EXPECT_EQ(initial_state(std::nullopt, 3).phase, Phase::kStopped);
  EXPECT_EQ(initial_state(rec(State::kIdle, 3), 3).phase, Phase::kStopped);
  EXPECT_EQ(initial_state(rec(State::kTerminating, 3), 3).phase, Phase::kStopped);
  // A runner left configured after `drained` was reported: cleaned, then the next assignment.
  AgentState s = initial_state(rec(State::kIdle, 3, AgentSignal::kDrained), 3);
  EXPECT_LT(s.last_served, 3);
  EXPECT_EQ(act(s, rec(State::kIdle, 3, AgentSignal::kDrained)), Action::kCleanLocal);
}

TEST(ShouldReportRegistered, OnlyOnceListeningForTheCurrentAssignment) {
  EXPECT_TRUE(should_report_registered(rec(State::kClaimed, 3), 3, true));
  EXPECT_TRUE(should_report_registered(rec(State::kCreated, 3, AgentSignal::kBooted), 3, true));
  EXPECT_TRUE(should_report_registered(rec(State::kClaimed, 3, AgentSignal::kDrained, 2), 3, true));
  EXPECT_FALSE(should_report_registered(rec(State::kClaimed, 3), 3, false));
  EXPECT_FALSE(should_report_registered(rec(State::kClaimed, 4), 3, true));
  EXPECT_FALSE(should_report_registered(rec(State::kDraining, 3), 3, true));
  EXPECT_FALSE(should_report_registered(rec(State::kIdle, 3), 3, true));
  for (AgentSignal sig : {AgentSignal::kRegistered, AgentSignal::kFailed, AgentSignal::kInterrupted,
                          AgentSignal::kDrained}) {
    EXPECT_FALSE(should_report_registered(rec(State::kClaimed, 3, sig), 3, true));
  }
}

// ---- self-termination

SelfTerminationFacts facts(std::optional<InstanceRecord> r) {
  SelfTerminationFacts f;
  f.now_ms = 500'000;
  f.since_start = std::chrono::minutes(1);
  f.record = r;
  f.boot_grace = std::chrono::minutes(5);
  f.unreachable_limit = std::chrono::minutes(10);
  return f;
}

TEST(SelfTermination, StaysWithinTheDeadline) {
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining, State::kIdle}) {
    InstanceRecord r = rec(s, 1);
    r.deadline_ms = 500'001;
    EXPECT_EQ(decide_self_termination(facts(r)).verdict, Verdict::kStay) << pool::state_name(s);
  }
}

TEST(SelfTermination, DeadlinePassedTerminatesAnIdleInstanceInEveryState) {
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining, State::kIdle}) {
    InstanceRecord r = rec(s, 1);
    r.deadline_ms = 500'000;  // exactly now: passed
    SelfTermination t = decide_self_termination(facts(r));
    EXPECT_EQ(t.verdict, Verdict::kTerminate) << pool::state_name(s);
    EXPECT_NE(t.reason.find("deadline"), std::string::npos);
  }
}

TEST(SelfTermination, TheControllerGetsTheGraceFirst) {
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining, State::kIdle}) {
    InstanceRecord r = rec(s, 1);
    r.deadline_ms = 400'000;
    SelfTerminationFacts f = facts(r);
    f.deadline_grace = std::chrono::milliseconds(100'001);
    EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kStay) << pool::state_name(s);
    f.deadline_grace = std::chrono::milliseconds(100'000);
    EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kTerminate) << pool::state_name(s);
  }
  // A job past the deadline runs on until the hard deadline plus the grace.
  InstanceRecord r = rec(State::kRunning, 1);
  r.deadline_ms = 300'000;
  r.hard_deadline_ms = 450'000;
  SelfTerminationFacts f = facts(r);
  f.busy = true;
  f.deadline_grace = std::chrono::milliseconds(60'000);
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kDrainFirst);
  f.now_ms = 510'000;
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kTerminate);
}

TEST(SelfTermination, ARunningJobIsDrainedFirstUntilTheHardDeadline) {
  InstanceRecord r = rec(State::kRunning, 1);
  r.deadline_ms = 400'000;
  r.hard_deadline_ms = 600'000;
  SelfTerminationFacts f = facts(r);
  f.busy = true;
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kDrainFirst);
  f.now_ms = 600'000;
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kTerminate);
  EXPECT_NE(decide_self_termination(f).reason.find("hard deadline"), std::string::npos);
  // Without a hard deadline in the record, the loop's bound applies; without any, it terminates.
  r.hard_deadline_ms = 0;
  f = facts(r);
  f.busy = true;
  f.job_bound_ms = 700'000;
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kDrainFirst);
  f.job_bound_ms.reset();
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kTerminate);
}

TEST(SelfTermination, TerminatingOrTerminatedRecordsEndTheInstance) {
  for (State s : {State::kTerminating, State::kTerminated}) {
    InstanceRecord r = rec(s, 1);
    r.deadline_ms = 900'000;
    SelfTerminationFacts f = facts(r);
    f.busy = true;
    EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kTerminate);
  }
}

TEST(SelfTermination, NoRecordAfterTheBootGrace) {
  SelfTerminationFacts f = facts(std::nullopt);
  f.since_start = std::chrono::minutes(5) - Duration{1};
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kStay);
  f.since_start = std::chrono::minutes(5);
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kTerminate);
  EXPECT_NE(decide_self_termination(f).reason.find("no record"), std::string::npos);
  f.busy = true;
  f.job_bound_ms = 900'000;
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kDrainFirst);
  f.job_bound_ms = 400'000;
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kTerminate);
}

TEST(SelfTermination, TableUnreachableBeyondTheLimit) {
  InstanceRecord fresh = rec(State::kRunning, 1);
  fresh.deadline_ms = 900'000;
  SelfTerminationFacts f = facts(std::nullopt);
  f.unreachable_for = std::chrono::minutes(10) - Duration{1};
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kStay);
  f.since_start = std::chrono::hours(1);  // no boot-grace verdict while the table is unreachable
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kStay);
  f.unreachable_for = std::chrono::minutes(10);
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kTerminate);
  EXPECT_NE(decide_self_termination(f).reason.find("unreachable"), std::string::npos);
  f.busy = true;
  f.job_bound_ms = 900'000;
  EXPECT_EQ(decide_self_termination(f).verdict, Verdict::kDrainFirst);
}

TEST(SelfTermination, JobBound) {
  InstanceRecord r = rec(State::kClaimed, 1);
  r.deadline_ms = 1000;
  EXPECT_EQ(job_bound_ms(r, Duration{500}), 1500);
  r.hard_deadline_ms = 1200;
  EXPECT_EQ(job_bound_ms(r, Duration{500}), 1200);
}

// ---- draining

DrainFacts drain(DrainStrategy s) {
  DrainFacts f;
  f.strategy = s;
  f.listener_running = true;
  f.drain_timeout = Duration{1000};
  f.stock_idle_wait = Duration{500};
  f.stop_timeout = Duration{300};
  f.remove_retry = Duration{200};
  return f;
}

TEST(RunnerDrainSupport, ReadFromRunHelp) {
  EXPECT_EQ(parse_run_help(""), (RunnerDrainSupport{}));
  EXPECT_EQ(parse_run_help("Commands: configure [--url U]\n  run [--jitconfig B64 | --once]\n"), (RunnerDrainSupport{}));
  EXPECT_EQ(parse_run_help(" --drain-file PATH    drain once PATH exists\n --drain-on-sigusr1   drain on SIGUSR1\n"),
            (RunnerDrainSupport{true, true}));
  EXPECT_EQ(parse_run_help("run [--drain-file PATH]"), (RunnerDrainSupport{true, false}));
  EXPECT_EQ(parse_run_help("--drain-on-sigusr1"), (RunnerDrainSupport{false, true}));
  // Other words that merely contain the option are not it.
  EXPECT_EQ(parse_run_help("x--drain-file --drain-files --drain-on-sigusr12 no--drain-on-sigusr1"), (RunnerDrainSupport{}));
}

TEST(DrainStrategy, ChosenByDetectionAndOnlyForEphemeralRunners) {
  for (bool file : {false, true}) {
    for (bool sig : {false, true}) {
      for (bool eph : {false, true}) {
        const DrainStrategy want = sig && eph ? DrainStrategy::kDrainSignal : DrainStrategy::kStock;
        EXPECT_EQ(choose_drain_strategy(RunnerDrainSupport{file, sig}, eph), want) << file << sig << eph;
      }
    }
  }
  // Not detected (run --help failed or timed out): stock, whatever else.
  EXPECT_EQ(choose_drain_strategy(std::nullopt, true), DrainStrategy::kStock);
  EXPECT_EQ(choose_drain_strategy(std::nullopt, false), DrainStrategy::kStock);
  EXPECT_EQ(strategy_name(DrainStrategy::kStock), "stock");
  EXPECT_EQ(strategy_name(DrainStrategy::kDrainSignal), "drain-signal");
}

TEST(DrainStep, StockWaitsOutOneLongPollBeforeDeregistering) {
  DrainFacts f = drain(DrainStrategy::kStock);
  f.has_remove_token = true;
  f.poll_wait = Duration{700};
  f.since_drain_start = Duration{699};
  EXPECT_EQ(drain_step(f), DrainStep::kWait);  // idle, but a dispatch may still be on its way
  f.since_drain_start = Duration{700};
  EXPECT_EQ(drain_step(f), DrainStep::kDeregister);
  f.since_drain_start = Duration{100};
  f.has_remove_token = false;  // without a token too: no SIGINT before the poll is out
  EXPECT_EQ(drain_step(f), DrainStep::kWait);
  f.since_drain_start = Duration{700};
  EXPECT_EQ(drain_step(f), DrainStep::kInterrupt);
  // Once deregistered (a restarted agent resuming), the wait is over.
  f.has_remove_token = true;
  f.deregistered = true;
  f.since_drain_start = Duration{0};
  f.since_deregistered = Duration{500};
  EXPECT_EQ(drain_step(f), DrainStep::kInterrupt);
}

TEST(DrainStep, AJustInTimeRunnerIsStoppedNeverRemovedWithConfigSh) {
  DrainFacts f = drain(DrainStrategy::kStock);
  f.just_in_time = true;
  f.has_remove_token = true;  // refresh's drain hands one over all the same
  f.poll_wait = Duration{700};
  f.since_drain_start = Duration{699};
  EXPECT_EQ(drain_step(f), DrainStep::kWait) << "the poll's dispatch still comes first";
  f.since_drain_start = Duration{700};
  EXPECT_EQ(drain_step(f), DrainStep::kInterrupt);
  f.busy = true;
  EXPECT_EQ(drain_step(f), DrainStep::kWait) << "its job runs to its end";

  DeregisterFacts d;
  d.just_in_time = true;
  d.has_remove_token = true;
  DeregisterDecision dd = deregister_step(d);
  EXPECT_EQ(dd.step, DeregisterStep::kGiveUp);
  EXPECT_EQ(dd.reason, kJustInTimeLeftToController);
  d.just_in_time = false;
  EXPECT_EQ(deregister_step(d).step, DeregisterStep::kRemove);
}

TEST(DrainStep, DrainSignalWaitsForTheListenerThenFallsBackWhenIgnored) {
  DrainFacts f = drain(DrainStrategy::kDrainSignal);
  EXPECT_EQ(drain_step(f), DrainStep::kWait);
  f.since_drain_start = Duration{999};
  EXPECT_EQ(drain_step(f), DrainStep::kWait);
  f.since_drain_start = Duration{1000};
  EXPECT_EQ(drain_step(f), DrainStep::kFallBackToStock);
  f.busy = true;  // a job in hand: never fall back (nor stop) while it runs
  f.since_drain_start = Duration{1'000'000};
  EXPECT_EQ(drain_step(f), DrainStep::kWait);
  f.listener_running = false;
  EXPECT_EQ(drain_step(f), DrainStep::kListenerGone);
}

TEST(DrainStep, StockWaitsUntilIdleThenDeregistersThenInterrupts) {
  DrainFacts f = drain(DrainStrategy::kStock);
  f.has_remove_token = true;
  f.busy = true;
  EXPECT_EQ(drain_step(f), DrainStep::kWait);
  f.busy = false;
  EXPECT_EQ(drain_step(f), DrainStep::kDeregister);
  // A failed remove (busy on GitHub: 422) is retried after a pause.
  f.since_remove_attempt = Duration{100};
  EXPECT_EQ(drain_step(f), DrainStep::kWait);
  f.since_remove_attempt = Duration{200};
  EXPECT_EQ(drain_step(f), DrainStep::kDeregister);
  // Deregistered: the Listener should notice and exit; SIGINT if it does not in time.
  f.deregistered = true;
  f.since_deregistered = Duration{499};
  EXPECT_EQ(drain_step(f), DrainStep::kWait);
  f.since_deregistered = Duration{500};
  EXPECT_EQ(drain_step(f), DrainStep::kInterrupt);
  f.since_interrupt = Duration{299};
  EXPECT_EQ(drain_step(f), DrainStep::kWait);
  f.since_interrupt = Duration{300};
  EXPECT_EQ(drain_step(f), DrainStep::kKill);
  f.listener_running = false;
  EXPECT_EQ(drain_step(f), DrainStep::kListenerGone);
}

TEST(DrainStep, StockWithoutRemoveTokenInterruptsOnceIdle) {
  DrainFacts f = drain(DrainStrategy::kStock);
  f.busy = true;
  EXPECT_EQ(drain_step(f), DrainStep::kWait);
  f.busy = false;
  EXPECT_EQ(drain_step(f), DrainStep::kInterrupt);
}

TEST(DrainStep, NeverInterruptsOrKillsABusyRunnerBeforeItWasAsked) {
  for (DrainStrategy s : {DrainStrategy::kDrainSignal, DrainStrategy::kStock}) {
    for (bool token : {false, true}) {
      for (bool dereg : {false, true}) {
        for (int64_t t : {0, 100, 10'000'000}) {
          DrainFacts f = drain(s);
          f.busy = true;
          f.has_remove_token = token;
          f.deregistered = dereg;
          f.since_drain_start = Duration{t};
          f.since_deregistered = Duration{t};
          f.since_remove_attempt = Duration{t};
          DrainStep step = drain_step(f);
          EXPECT_EQ(step, DrainStep::kWait);
        }
      }
    }
  }
}

// ---- Registration

TEST(RegisterStep, RetriesAFailureUpToThreeRunsWithinTheBoundNeverATimeout) {
  const Duration bound{120'000}, backoff{2'000};
  auto step = [&](int attempt, bool ok, bool timed_out, int64_t elapsed_ms) {
    return register_step({attempt, ok, timed_out, Duration{elapsed_ms}, 3, bound, backoff});
  };
  EXPECT_EQ(step(1, true, false, 5'000).step, RegisterStep::kDone);
  EXPECT_EQ(step(3, true, false, 5'000).step, RegisterStep::kDone);
  RegisterDecision d = step(1, false, false, 5'000);
  EXPECT_EQ(d.step, RegisterStep::kRetry);
  EXPECT_EQ(d.pause, backoff);
  EXPECT_EQ(step(2, false, false, 5'000).step, RegisterStep::kRetry);
  EXPECT_EQ(step(3, false, false, 5'000).step, RegisterStep::kGiveUp) << "three runs at most";
  EXPECT_EQ(step(1, false, true, 5'000).step, RegisterStep::kGiveUp) << "a timeout took the whole bound";
  EXPECT_EQ(step(1, false, false, 120'000).step, RegisterStep::kGiveUp) << "the bound has passed";
  EXPECT_EQ(step(1, false, false, 119'999).step, RegisterStep::kRetry);
}

// ---- Listener exits

TEST(TerminatingStep, TheApiThenTheOsShutdownEachGetTheWaitThenTheAgentGivesUp) {
  const Duration w{2000};
  EXPECT_EQ(terminating_step({Duration{0}, std::nullopt, w}), TerminatingStep::kWait);
  EXPECT_EQ(terminating_step({Duration{1999}, std::nullopt, w}), TerminatingStep::kWait);
  EXPECT_EQ(terminating_step({Duration{2000}, std::nullopt, w}), TerminatingStep::kShutDownOs);
  EXPECT_EQ(terminating_step({Duration{2500}, Duration{0}, w}), TerminatingStep::kWait);
  EXPECT_EQ(terminating_step({Duration{4400}, Duration{1999}, w}), TerminatingStep::kWait);
  EXPECT_EQ(terminating_step({Duration{4500}, Duration{2000}, w}), TerminatingStep::kGiveUp);
  // TerminateInstances failed: the OS shutdown started at once, and its wait is what counts.
  EXPECT_EQ(terminating_step({Duration{10}, Duration{10}, w}), TerminatingStep::kWait);
}

TEST(AfterListenerStartFailure, RetriesAfterTheBackoffUntilTheRestartsAreSpent) {
  ExitDecision d = after_listener_start_failure("no such file", 0, 3, Duration{200});
  EXPECT_EQ(d.what, AfterExit::kRestart);
  EXPECT_EQ(d.delay, Duration{200});
  EXPECT_NE(d.reason.find("no such file"), std::string::npos);
  EXPECT_EQ(after_listener_start_failure("x", 2, 3, Duration{200}).what, AfterExit::kRestart);
  d = after_listener_start_failure("no such file", 3, 3, Duration{200});
  EXPECT_EQ(d.what, AfterExit::kFail);
  EXPECT_EQ(d.reason, "cannot start the Listener: no such file");
  EXPECT_EQ(after_listener_start_failure("x", 0, 0, Duration{200}).what, AfterExit::kFail);
}

TEST(AfterListenerExit, ByExitCode) {
  const Duration b{100};
  EXPECT_EQ(after_listener_exit({false, 0}, false, 0, 5, b).what, AfterExit::kFail);
  EXPECT_EQ(after_listener_exit({false, 1}, false, 0, 5, b).what, AfterExit::kFail);
  EXPECT_EQ(after_listener_exit({false, 7}, false, 0, 5, b).what, AfterExit::kFail);
  EXPECT_EQ(after_listener_exit({false, 7}, false, 0, 5, b).reason.rfind(pool::kRunnerVersionDeprecated, 0), 0u)
      << "a deprecated version is told apart from a configuration problem";
  EXPECT_EQ(after_listener_exit({false, 1}, false, 0, 5, b).reason.find(pool::kRunnerVersionDeprecated),
            std::string::npos);
  for (int code : {2, 5, 6, 42, 137}) {
    ExitDecision d = after_listener_exit({false, code}, false, 0, 5, b);
    EXPECT_EQ(d.what, AfterExit::kRestart) << code;
    EXPECT_EQ(d.delay, b);
  }
  // A self-update (3, 4): never restarted into a runner update.sh is swapping; failed at once.
  for (bool ephemeral : {false, true}) {
    for (int code : {3, 4}) {
      ExitDecision d = after_listener_exit({false, code}, false, 0, 5, b, ephemeral);
      EXPECT_EQ(d.what, AfterExit::kFail) << code;
      EXPECT_EQ(d.reason.rfind(kRunnerSelfUpdate, 0), 0u) << d.reason;
    }
  }
  EXPECT_EQ(after_listener_exit({false, 3}, true, 0, 5, b).what, AfterExit::kStopped) << "asked to stop";
  for (int sig : {9, 11, 15}) EXPECT_EQ(after_listener_exit({true, sig}, false, 0, 5, b).what, AfterExit::kRestart);
}

// An adopted Listener's end tells nothing (not this agent's child, no wait status): whatever ended
// it, a fresh start says what is wrong, bounded like any restart.
TEST(AfterListenerExit, AnEndOfUnknownCauseRestarts) {
  const ExitStatus unknown{false, 0, true};
  ExitDecision d = after_listener_exit(unknown, false, 0, 5, Duration{100});
  EXPECT_EQ(d.what, AfterExit::kRestart);
  EXPECT_NE(d.reason.find("exit status unknown"), std::string::npos) << d.reason;
  EXPECT_EQ(after_listener_exit(unknown, false, 5, 5, Duration{100}).what, AfterExit::kFail);
  EXPECT_EQ(after_listener_exit(unknown, true, 0, 5, Duration{100}).what, AfterExit::kStopped);
}

// A JIT runner exits 0 after its one job (or once GitHub removed it): its normal end, never a
// restart. A followed one's end of unknown cause is the same: it cannot serve again either way.
TEST(AfterListenerExit, AnEphemeralRunnersEndIsItsAssignmentsEnd) {
  const Duration b{100};
  EXPECT_EQ(after_listener_exit({false, 0}, false, 0, 5, b, true).what, AfterExit::kDone);
  EXPECT_EQ(after_listener_exit({false, 0, true}, false, 0, 5, b, true).what, AfterExit::kDone);
  EXPECT_EQ(after_listener_exit({false, 0}, true, 0, 5, b, true).what, AfterExit::kStopped) << "asked to stop";
  EXPECT_EQ(after_listener_exit({false, 1}, false, 0, 5, b, true).what, AfterExit::kFail) << "a bad JIT value";
  EXPECT_EQ(after_listener_exit({false, 2}, false, 0, 5, b, true).what, AfterExit::kRestart);
  EXPECT_EQ(after_listener_exit({false, 0}, false, 0, 5, b, false).what, AfterExit::kFail) << "a persistent runner";
}

TEST(AfterListenerExit, AnyExitWhileStoppingEndsIt) {
  for (ExitStatus s : {ExitStatus{false, 0}, ExitStatus{false, 1}, ExitStatus{false, 2}, ExitStatus{true, 9}}) {
    EXPECT_EQ(after_listener_exit(s, true, 0, 5, Duration{1}).what, AfterExit::kStopped);
  }
}

TEST(AfterListenerExit, RestartsAreBoundedWithGrowingBackoff) {
  const Duration b{100};
  EXPECT_EQ(after_listener_exit({false, 2}, false, 1, 5, b).delay, Duration{200});
  EXPECT_EQ(after_listener_exit({false, 2}, false, 4, 5, b).delay, Duration{1600});
  EXPECT_EQ(after_listener_exit({false, 2}, false, 9, 50, b).delay, Duration{3200});  // capped at 32x
  ExitDecision d = after_listener_exit({false, 2}, false, 5, 5, b);
  EXPECT_EQ(d.what, AfterExit::kFail);
  EXPECT_NE(d.reason.find("5 restarts"), std::string::npos);
  EXPECT_EQ(after_listener_exit({true, 9}, false, 0, 0, b).what, AfterExit::kFail);
}

TEST(Names, AreDistinct) {
  std::set<std::string_view> names;
  for (Phase p : kAllPhases) names.insert(phase_name(p));
  EXPECT_EQ(names.size(), kAllPhases.size());
  EXPECT_EQ(describe({true, 9}), "killed by signal 9");
  EXPECT_EQ(describe({false, 2}), "exit code 2");
}

TEST(DrainStep, StockStopsTryingOnceRemoveAttemptsAreSpent) {
  DrainFacts f = drain(DrainStrategy::kStock);
  f.has_remove_token = true;
  f.remove_exhausted = true;
  EXPECT_EQ(drain_step(f), DrainStep::kInterrupt);
  f.busy = true;  // never while a job runs
  EXPECT_EQ(drain_step(f), DrainStep::kWait);
}

// ---- deregistration

TEST(RemoveFailure, ClassifiesTheRunnersOutput) {
  EXPECT_EQ(classify_remove_failure("Http response code: NotFound from 'POST http://127.0.0.1:1/api/v3/actions/"
                                    "runner-registration'\n{\"message\":\"Not Found\"}", false),
            RemoveFailure::kTokenRefused);
  EXPECT_EQ(classify_remove_failure("Http response code: Unauthorized from 'POST …'", false), RemoveFailure::kTokenRefused);
  EXPECT_EQ(classify_remove_failure("Failed: Removing runner from the server\nBad request - Runner \"p-i-g2\" is still "
                                    "running a job\"", false),
            RemoveFailure::kBusy);
  EXPECT_EQ(classify_remove_failure("Failed: Removing runner from the server\nServer Error", false), RemoveFailure::kOther);
  EXPECT_EQ(classify_remove_failure("", false), RemoveFailure::kOther);
  // A timeout is no answer at all, whatever was printed before it.
  EXPECT_EQ(classify_remove_failure("Http response code: NotFound", true), RemoveFailure::kOther);
  EXPECT_EQ(remove_failure_name(RemoveFailure::kTokenRefused), "remove token refused");
  EXPECT_EQ(remove_failure_name(RemoveFailure::kBusy), "runner busy on GitHub");
  EXPECT_EQ(remove_failure_name(RemoveFailure::kOther), "error");
}

DeregisterFacts dereg() {
  DeregisterFacts f;
  f.has_remove_token = true;
  f.max_attempts = 3;
  f.retry_interval = Duration{100};
  f.token_wait = Duration{1000};
  return f;
}

TEST(DeregisterStep, FirstAttemptAndBoundedRetries) {
  DeregisterFacts f = dereg();
  EXPECT_EQ(deregister_step(f).step, DeregisterStep::kRemove);
  EXPECT_EQ(deregister_step(f).reason, "deregistering");
  for (RemoveFailure why : {RemoveFailure::kBusy, RemoveFailure::kOther}) {
    f.last_failure = why;
    f.attempts = 1;
    f.since_last_attempt = Duration{99};
    EXPECT_EQ(deregister_step(f).step, DeregisterStep::kWait);
    f.since_last_attempt = Duration{100};
    EXPECT_EQ(deregister_step(f).step, DeregisterStep::kRemove);
    EXPECT_EQ(deregister_step(f).reason, "retrying config.sh remove (1/3)");
    f.attempts = 3;
    DeregisterDecision d = deregister_step(f);
    EXPECT_EQ(d.step, DeregisterStep::kGiveUp);
    EXPECT_NE(d.reason.find("3 time(s)"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find(remove_failure_name(why)), std::string::npos) << d.reason;
    f.attempts = 4;  // past the bound, however it got there
    EXPECT_EQ(deregister_step(f).step, DeregisterStep::kGiveUp);
  }
  f = dereg();
  f.max_attempts = 0;  // no attempt allowed: the controller deletes the runner
  EXPECT_EQ(deregister_step(f).step, DeregisterStep::kGiveUp);
}

TEST(DeregisterStep, RefusedTokenIsHandedBackAndAFreshOneAwaited) {
  DeregisterFacts f = dereg();
  f.attempts = 1;
  f.last_failure = RemoveFailure::kTokenRefused;
  f.since_last_attempt = Duration{0};
  EXPECT_EQ(deregister_step(f).step, DeregisterStep::kReturnToken);
  // Handed back: the record has none until the controller writes a fresh one.
  f.has_remove_token = false;
  f.awaiting_token_for = Duration{999};
  EXPECT_EQ(deregister_step(f).step, DeregisterStep::kWait);
  f.awaiting_token_for = Duration{1000};
  DeregisterDecision d = deregister_step(f);
  EXPECT_EQ(d.step, DeregisterStep::kGiveUp);
  EXPECT_NE(d.reason.find("no fresh remove token"), std::string::npos) << d.reason;
  // A fresh token came (the loop clears awaiting_token_for): it is tried, not handed back.
  f.has_remove_token = true;
  f.awaiting_token_for.reset();
  f.since_last_attempt = Duration{100};
  f.last_failure = RemoveFailure::kOther;
  EXPECT_EQ(deregister_step(f).step, DeregisterStep::kRemove);
  // While the stale token is still in the record (the hand-back not yet read back): wait.
  f.last_failure = RemoveFailure::kTokenRefused;
  f.awaiting_token_for = Duration{10};
  f.since_last_attempt = Duration{10};
  EXPECT_EQ(deregister_step(f).step, DeregisterStep::kWait);
  // Refusals count against the bound too.
  f.attempts = 3;
  EXPECT_EQ(deregister_step(f).step, DeregisterStep::kGiveUp);
}

TEST(DeregisterStep, NoTokenAtAllGivesUpAtOnce) {
  DeregisterFacts f = dereg();
  f.has_remove_token = false;
  DeregisterDecision d = deregister_step(f);
  EXPECT_EQ(d.step, DeregisterStep::kGiveUp);
  EXPECT_EQ(d.reason, "no remove token in the record");
}

TEST(DeregisterStep, Names) {
  EXPECT_EQ(deregister_step_name(DeregisterStep::kRemove), "remove");
  EXPECT_EQ(deregister_step_name(DeregisterStep::kWait), "wait");
  EXPECT_EQ(deregister_step_name(DeregisterStep::kReturnToken), "return-token");
  EXPECT_EQ(deregister_step_name(DeregisterStep::kGiveUp), "give-up");
}

// ---- signal_detail

TEST(DetailToWrite, ASuccessNeverReplacesAFailureOfItsGeneration) {
  DetailFacts f;
  f.generation = 4;
  f.detail = "no runner was serving this assignment";
  f.evidence_generation = 4;
  f.evidence = "runner left registered: r (id 9): Server Error";
  DetailWrite w = detail_to_write(f);
  EXPECT_FALSE(w.detail.has_value());
  EXPECT_FALSE(w.evidence);
  f.detail = "";
  EXPECT_FALSE(detail_to_write(f).detail.has_value());
  // Another generation's failure is no evidence about this one.
  f.detail = "no runner was serving this assignment";
  f.evidence_generation = 3;
  w = detail_to_write(f);
  EXPECT_EQ(w.detail, "no runner was serving this assignment");
  EXPECT_FALSE(w.evidence);
  f.evidence_generation = 0;
  f.evidence = "";
  EXPECT_EQ(detail_to_write(f).detail, "no runner was serving this assignment");
  f.detail = "";  // a success without a detail writes none
  EXPECT_FALSE(detail_to_write(f).detail.has_value());
}

TEST(DetailToWrite, AFailureIsWrittenAndKeepsTheEarlierOne) {
  DetailFacts f;
  f.generation = 4;
  f.failure = true;
  f.detail = "runner left registered: r (id 9): no fresh remove token within 2m";
  DetailWrite w = detail_to_write(f);
  EXPECT_EQ(w.detail, f.detail);
  EXPECT_TRUE(w.evidence);
  f.evidence_generation = 4;
  f.evidence = "cleaning failed: EBUSY";
  w = detail_to_write(f);
  ASSERT_TRUE(w.detail);
  EXPECT_EQ(*w.detail, f.detail + " (earlier: cleaning failed: EBUSY)");
  EXPECT_EQ(w.detail->rfind(pool::kRunnerLeftRegistered, 0), 0u) << "the newest failure leads";
  EXPECT_TRUE(w.evidence);
  // The same failure again, or one that already carries the earlier: as it is.
  f.evidence = f.detail;
  EXPECT_EQ(detail_to_write(f).detail, f.detail);
  f.evidence = "r (id 9)";
  EXPECT_EQ(detail_to_write(f).detail, f.detail);
  // An earlier generation's failure is not carried over.
  f.evidence_generation = 3;
  f.evidence = "cleaning failed: EBUSY";
  EXPECT_EQ(detail_to_write(f).detail, f.detail);
  f.detail = "";
  EXPECT_FALSE(detail_to_write(f).detail.has_value());
}

TEST(FailureEvidence, FailedAndRunnerLeftOnlyForTheCurrentGeneration) {
  InstanceRecord r = rec(State::kDraining, 4, AgentSignal::kFailed, 4);
  r.signal_detail = "cleaning failed";
  EXPECT_EQ(failure_evidence(r), "cleaning failed");
  r.signal_generation = 3;
  EXPECT_EQ(failure_evidence(r), "");
  r.signal_generation = 4;
  r.signal = AgentSignal::kDrained;
  EXPECT_EQ(failure_evidence(r), "");
  r.signal_detail = pool::runner_left_detail("r", 9, "502");
  EXPECT_EQ(failure_evidence(r), r.signal_detail);
  for (AgentSignal s : {AgentSignal::kNone, AgentSignal::kBooted, AgentSignal::kRegistered, AgentSignal::kInterrupted}) {
    r.signal = s;
    EXPECT_EQ(failure_evidence(r), "") << pool::agent_signal_name(s);
  }
  r.signal = AgentSignal::kFailed;
  r.signal_detail = "-";  // the table's stand-in for an empty detail
  EXPECT_EQ(failure_evidence(r), "");
}

// ---- Busy or idle ----

using std::chrono::minutes;
using std::chrono::seconds;

constexpr Duration kBound = minutes(5);

constexpr Duration kCompletionWait = std::chrono::seconds(30);

BusyDecision busy_at(const JobTrack& t, Duration now, bool worker = false, bool listener = true) {
  BusyFacts f;
  f.track = t;
  f.worker_running = worker;
  f.listener_running = listener;
  f.now = now;
  f.job_start_bound = kBound;
  f.job_completion_wait = kCompletionWait;
  return decide_busy(f);
}

TEST(Busy, IdleWithNothingSeen) {
  auto d = busy_at(JobTrack{}, seconds(100));
  EXPECT_FALSE(d.busy);
  EXPECT_EQ(d.track, JobTrack{});
  EXPECT_EQ(d.reason, "");
}

TEST(Busy, FromTheRequestOnBeforeAnythingShowsOnStdout) {
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(10));
  EXPECT_EQ(t.requested_at, seconds(10));
  EXPECT_TRUE(busy_at(t, seconds(10)).busy);
  EXPECT_TRUE(busy_at(t, seconds(10) + kBound - Duration(1)).busy);
}

TEST(Busy, RequestsNoWorkerFollowedAreSettledWhenTheirTellersMayHaveForgedThem) {
  const JobTrack forged = apply_job_signal(apply_job_signal({}, JobSignal::kRequested, seconds(1)), JobSignal::kRequested,
                                           seconds(2));
  JobTrack t = settle_unconfirmed_request(forged);
  EXPECT_FALSE(t.requested_at);
  EXPECT_EQ(t.runs, t.requests) << "counted as answered: a late read of the same line opens nothing";
  EXPECT_FALSE(busy_at(t, seconds(3)).busy);
  // A request a Worker followed is a job in hand, and nothing open stays as it is.
  JobTrack real = apply_job_signal({}, JobSignal::kRequested, seconds(1));
  real = busy_at(real, seconds(2), true).track;
  EXPECT_EQ(settle_unconfirmed_request(real), real);
  EXPECT_EQ(settle_unconfirmed_request(JobTrack{}), JobTrack{});
}

TEST(Busy, CompletedEndsIt) {
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(1));
  t = apply_job_signal(t, JobSignal::kRunning, seconds(2), "build");
  EXPECT_EQ(t.job, "build");
  EXPECT_EQ(t.requested_at, seconds(1));  // the clock runs from the arrival, not "Running job"
  t = apply_job_signal(t, JobSignal::kCompleted, seconds(3));
  EXPECT_FALSE(t.requested_at);
  EXPECT_EQ(t.job, "");
  auto d = busy_at(t, seconds(3));
  EXPECT_FALSE(d.busy);
  EXPECT_EQ(d.reason, "");
}

TEST(Busy, OrderOfSignalsInOnePollMatters) {
  // The previous job completes, then the next request arrives: busy.
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(1));
  t = apply_job_signal(t, JobSignal::kRunning, seconds(1), "a");
  t = apply_job_signal(t, JobSignal::kCompleted, seconds(2));
  t = apply_job_signal(t, JobSignal::kRequested, seconds(2));
  EXPECT_TRUE(busy_at(t, seconds(2)).busy);
  // A request, then its completion: idle.
  t = apply_job_signal(t, JobSignal::kCompleted, seconds(2));
  EXPECT_FALSE(busy_at(t, seconds(2)).busy);
}

// stdout is read before the perf log: a job over within one read shows its request last. That
// request was answered already — not a new job, and no busy until the bound.
TEST(Busy, AWholeJobWithinOneReadLeavesItIdle) {
  JobTrack t = apply_job_signal({}, JobSignal::kRunning, seconds(1), "fast");
  t = apply_job_signal(t, JobSignal::kCompleted, seconds(1));
  t = apply_job_signal(t, JobSignal::kRequested, seconds(1));
  EXPECT_FALSE(busy_at(t, seconds(1)).busy);
  // The next request is a new job.
  t = apply_job_signal(t, JobSignal::kRequested, seconds(5));
  EXPECT_TRUE(busy_at(t, seconds(5)).busy);
  t = apply_job_signal(t, JobSignal::kRunning, seconds(5), "next");
  EXPECT_EQ(t.job, "next");
  t = apply_job_signal(t, JobSignal::kCompleted, seconds(6));
  EXPECT_FALSE(busy_at(t, seconds(6)).busy);
  // Running read before its own request while the job goes on: one job, busy, named.
  t = apply_job_signal(t, JobSignal::kRunning, seconds(7), "long");
  t = apply_job_signal(t, JobSignal::kRequested, seconds(7));
  EXPECT_TRUE(busy_at(t, seconds(7)).busy);
  EXPECT_EQ(t.job, "long");
  t = apply_job_signal(t, JobSignal::kCompleted, seconds(9));
  EXPECT_FALSE(busy_at(t, seconds(9)).busy);
}

// A dropped request (no Running, no completion) does not shift the count: after it, a whole job
// within one read still leaves the runner idle.
TEST(Busy, ADroppedRequestIsSettledForTheCount) {
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(0));
  t = busy_at(t, seconds(0) + kBound).track;  // over at the bound
  EXPECT_FALSE(t.requested_at);
  t = apply_job_signal(t, JobSignal::kRunning, seconds(400), "b");
  t = apply_job_signal(t, JobSignal::kCompleted, seconds(400));
  t = apply_job_signal(t, JobSignal::kRequested, seconds(400));
  EXPECT_FALSE(busy_at(t, seconds(400)).busy);
  // Dropped, then superseded by the next request before the bound: the same.
  t = apply_job_signal(t, JobSignal::kRequested, seconds(500));
  t = apply_job_signal(t, JobSignal::kRunning, seconds(501), "c");
  t = apply_job_signal(t, JobSignal::kCompleted, seconds(501));
  // c had its own request (at 500): one more after its completion is the next job's.
  t = apply_job_signal(t, JobSignal::kRequested, seconds(501));
  EXPECT_TRUE(busy_at(t, seconds(501)).busy);
}

// A dispatch cancelled before its first renew answered (a shutdown, a cancellation, pull request
// #4461's sentinel): "Running job", then no Worker and no completion line. The next request is a
// job of its own, told by its own name; the cancelled one is not counted open again.
TEST(Busy, AJobCancelledBeforeItsWorkerGivesWayToTheNextRequest) {
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(0));
  t = apply_job_signal(t, JobSignal::kRunning, seconds(1), "victim");
  EXPECT_TRUE(busy_at(t, seconds(2)).busy);
  t = apply_job_signal(t, JobSignal::kRequested, seconds(10));
  EXPECT_EQ(t.requested_at, seconds(10));
  EXPECT_TRUE(t.job.empty()) << "not the cancelled job's";
  t = apply_job_signal(t, JobSignal::kRunning, seconds(11), "next");
  EXPECT_EQ(t.job, "next");
  EXPECT_TRUE(busy_at(t, seconds(12), true).busy);
  t = apply_job_signal(t, JobSignal::kCompleted, seconds(20));
  auto d = busy_at(t, seconds(20));
  EXPECT_FALSE(d.busy);
  EXPECT_TRUE(d.reason.empty()) << d.reason;
  EXPECT_EQ(d.track.requests, 2);
  EXPECT_EQ(d.track.runs, 2);
}

// _diag's acknowledgement tells of a request the perf log already told of.
TEST(Busy, AnAcknowledgementIsARequestOnlyWithoutThePerfLog) {
  JobTrack t = apply_job_signal({}, JobSignal::kAcknowledged, seconds(0));
  EXPECT_TRUE(busy_at(t, seconds(0)).busy) << "no perf log: the acknowledgement is the arrival";
  t = apply_job_signal(t, JobSignal::kRunning, seconds(1), "x");
  t = apply_job_signal(t, JobSignal::kCompleted, seconds(2));
  EXPECT_FALSE(busy_at(t, seconds(2)).busy);

  JobTrack p = apply_job_signal({}, JobSignal::kRequested, seconds(0));
  p = apply_job_signal(p, JobSignal::kAcknowledged, seconds(0));
  EXPECT_EQ(p.requests, 1) << "the same request, told twice";
  p = apply_job_signal(p, JobSignal::kRunning, seconds(1), "y");
  p = apply_job_signal(p, JobSignal::kCompleted, seconds(2));
  p = apply_job_signal(p, JobSignal::kAcknowledged, seconds(3));
  EXPECT_FALSE(busy_at(p, seconds(3)).busy);
}

TEST(Busy, RunningJobWithoutARequestSeenStartsTheClock) {
  JobTrack t = apply_job_signal({}, JobSignal::kRunning, seconds(7), "test");
  EXPECT_EQ(t.requested_at, seconds(7));
  EXPECT_TRUE(busy_at(t, seconds(7) + kBound - Duration(1)).busy);
  EXPECT_FALSE(busy_at(t, seconds(7) + kBound).busy);
}

// Acquire answered 404/409/422 ("Skipping message Job"): a request, then nothing at all.
TEST(Busy, ARequestThatNeverGotAWorkerIsOverAtTheBound) {
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(10));
  auto d = busy_at(t, seconds(10) + kBound);
  EXPECT_FALSE(d.busy);
  EXPECT_FALSE(d.track.requested_at);
  EXPECT_NE(d.reason.find("no Worker and no completion within 5m"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("the job request"), std::string::npos) << d.reason;
}

// A failed first renew, or a cancel before it: "Running job", then nothing.
TEST(Busy, RunningJobWithoutWorkerOrCompletionIsOverAtTheBound) {
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(10));
  t = apply_job_signal(t, JobSignal::kRunning, seconds(11), "deploy");
  EXPECT_TRUE(busy_at(t, seconds(10) + kBound - Duration(1)).busy);
  auto d = busy_at(t, seconds(10) + kBound);
  EXPECT_FALSE(d.busy);
  EXPECT_NE(d.reason.find("job deploy"), std::string::npos) << d.reason;
}

TEST(Busy, AWorkerIsBusyWhateverTheClockSays) {
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(0));
  auto d = busy_at(t, seconds(0) + 10 * kBound, /*worker=*/true);
  EXPECT_TRUE(d.busy);
  EXPECT_TRUE(d.track.worker_seen);
  // A Worker with nothing seen before it (an agent restarted mid-job): busy, and tracked.
  d = busy_at(JobTrack{}, seconds(50), true);
  EXPECT_TRUE(d.busy);
  EXPECT_EQ(d.track.requested_at, seconds(50));
  EXPECT_TRUE(d.track.worker_seen);
}

// A send-to-worker timeout: the Worker is killed and nothing is printed. The job stays in hand
// for the completion wait after the Worker is seen gone (the Listener could be reporting it), then
// ends, before the bound.
TEST(Busy, TheWorkersExitEndsItAfterTheCompletionWait) {
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(0));
  t = apply_job_signal(t, JobSignal::kRunning, seconds(1), "j");
  t = busy_at(t, seconds(2), true).track;
  auto d = busy_at(t, seconds(3));
  EXPECT_TRUE(d.busy) << "the completion may still come";
  EXPECT_TRUE(d.reason.empty());
  EXPECT_EQ(d.track.worker_gone_at, seconds(3));
  d = busy_at(d.track, seconds(3) + kCompletionWait - std::chrono::milliseconds(1));
  EXPECT_TRUE(d.busy);
  EXPECT_EQ(d.track.worker_gone_at, seconds(3)) << "from the first time it was seen gone";
  d = busy_at(d.track, seconds(3) + kCompletionWait);
  EXPECT_FALSE(d.busy);
  EXPECT_FALSE(d.track.requested_at);
  EXPECT_FALSE(d.track.worker_gone_at);
  EXPECT_NE(d.reason.find("its Worker exited and no completion line came within 30s"), std::string::npos) << d.reason;
}

// The real runner's order: the Worker exits, then the Listener prints the line (a crashed
// Worker's output goes to GitHub first). Busy lasts until the line, with no warning.
TEST(Busy, TheCompletionLineAfterTheWorkersExitEndsItQuietly) {
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(0));
  t = apply_job_signal(t, JobSignal::kRunning, seconds(1), "j");
  t = busy_at(t, seconds(2), true).track;
  auto d = busy_at(t, seconds(5));  // Worker gone, the report under way
  EXPECT_TRUE(d.busy);
  t = apply_job_signal(d.track, JobSignal::kCompleted, seconds(6));
  d = busy_at(t, seconds(6));
  EXPECT_FALSE(d.busy);
  EXPECT_TRUE(d.reason.empty()) << d.reason;
  EXPECT_FALSE(d.track.worker_gone_at);
  // A Worker of the next job resets the wait.
  t = apply_job_signal(d.track, JobSignal::kRequested, seconds(7));
  d = busy_at(t, seconds(8), true);
  d = busy_at(d.track, seconds(9));
  EXPECT_EQ(d.track.worker_gone_at, seconds(9));
  d = busy_at(d.track, seconds(10), true);
  EXPECT_FALSE(d.track.worker_gone_at) << "a Worker again";
}

TEST(Busy, TheListenersExitEndsIt) {
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(0));
  auto d = busy_at(t, seconds(1), false, /*listener=*/false);
  EXPECT_FALSE(d.busy);
  EXPECT_FALSE(d.track.requested_at);
  EXPECT_NE(d.reason.find("ended with the Listener"), std::string::npos);
  // Its Worker still there (being killed with its group): still busy until it is gone.
  EXPECT_TRUE(busy_at(t, seconds(1), true, false).busy);
}

TEST(Busy, ANewRequestRestartsTheClock) {
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(0));
  t = busy_at(t, seconds(1), true).track;
  t = apply_job_signal(t, JobSignal::kRequested, seconds(100));
  EXPECT_FALSE(t.worker_seen);
  EXPECT_EQ(t.requested_at, seconds(100));
  EXPECT_TRUE(busy_at(t, seconds(100) + kBound - Duration(1)).busy);
  EXPECT_FALSE(busy_at(t, seconds(100) + kBound).busy);
}

TEST(Busy, AZeroBoundTrustsOnlyWorkersAndCompletions) {
  JobTrack t = apply_job_signal({}, JobSignal::kRequested, seconds(0));
  BusyFacts f;
  f.track = t;
  f.now = seconds(0);
  EXPECT_FALSE(decide_busy(f).busy);
  f.worker_running = true;
  EXPECT_TRUE(decide_busy(f).busy);
}

}  // namespace
}  // namespace runpool::agent
