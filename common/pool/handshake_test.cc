#include "common/pool/handshake.h"

#include <gtest/gtest.h>

#include <vector>

namespace runpool::pool {
namespace {

constexpr int64_t kJudgedAt = 1'000'000;

InstanceRecord written(State s, int64_t gen = 3, const std::string& label = "run-1") {
  InstanceRecord r;
  r.instance_id = "i-0123456789abcdef0";
  r.state = s;
  r.generation = gen;
  r.label = label;
  r.heartbeat_ms = kJudgedAt - 1000;
  return r;
}
InstanceRecord with_signal(InstanceRecord r, AgentSignal s, const std::string& detail = "", int64_t gen = 0) {
  r.signal = s;
  r.signal_generation = gen ? gen : r.generation;
  r.signal_detail = detail;
  return r;
}

HandshakeDecision judge(Awaited a, const InstanceRecord& w, const InstanceRecord* cur, const std::string& ec2 = "",
                        bool warm = false) {
  HandshakeFacts f;
  f.awaited = a;
  f.written = &w;
  f.current = cur;
  f.ec2_state = ec2;
  f.now_ms = kJudgedAt;
  f.claimed_warm = warm;
  f.max_heartbeat_age_ms = 30'000;
  return judge_handshake(f);
}

const std::vector<State> kStates = {State::kCreated, State::kIdle,     State::kClaimed,    State::kRunning,
                                    State::kDraining, State::kTerminating, State::kTerminated};
const std::vector<AgentSignal> kSignals = {AgentSignal::kNone,     AgentSignal::kBooted,  AgentSignal::kRegistered,
                                           AgentSignal::kDrained,  AgentSignal::kFailed,  AgentSignal::kInterrupted};
const std::vector<std::string> kEc2 = {"", "pending", "running", "stopping", "stopped", "shutting-down", "terminated"};
bool aws_dead(const std::string& s) {
  return s == "stopping" || s == "stopped" || s == "shutting-down" || s == "terminated";
}

// ---- registered

TEST(Handshake, RegisteredIsAWriteThenDone) {
  const InstanceRecord w = written(State::kCreated);
  InstanceRecord r = w;
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r).verdict, Verdict::kWait);
  r = with_signal(w, AgentSignal::kBooted);
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r).verdict, Verdict::kWait);
  r = with_signal(w, AgentSignal::kRegistered);
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r).verdict, Verdict::kWrite) << "the waiter marks it running";
  r.state = State::kRunning;
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r).verdict, Verdict::kDone);
  // A claimed instance the same way.
  const InstanceRecord c = written(State::kClaimed);
  r = with_signal(c, AgentSignal::kRegistered);
  EXPECT_EQ(judge(Awaited::kRegistered, c, &r).verdict, Verdict::kWrite);
  // A `registered` of the previous generation is not this assignment's.
  r = with_signal(c, AgentSignal::kRegistered, "", c.generation - 1);
  EXPECT_EQ(judge(Awaited::kRegistered, c, &r).verdict, Verdict::kWait);
}

TEST(Handshake, RegisteredFailuresSayWhy) {
  const InstanceRecord w = written(State::kCreated);
  EXPECT_EQ(judge(Awaited::kRegistered, w, nullptr), (HandshakeDecision{Verdict::kGone, "its record disappeared"}));
  InstanceRecord r = with_signal(w, AgentSignal::kFailed, "pre-run script failed: exit 3");
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r),
            (HandshakeDecision{Verdict::kFail, "its agent failed to register: pre-run script failed: exit 3"}));
  r = with_signal(w, AgentSignal::kInterrupted, "spot interruption");
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r),
            (HandshakeDecision{Verdict::kFail, "was interrupted before registering: spot interruption"}));
  r = w;
  r.state = State::kTerminating;
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r),
            (HandshakeDecision{Verdict::kFail, "is terminating (before registering)"}));
  r = with_signal(w, AgentSignal::kFailed, "boot failed");
  r.state = State::kTerminating;
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r), (HandshakeDecision{Verdict::kFail, "is terminating (boot failed)"}));
  r = w;
  r.generation = w.generation + 1;
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r).verdict, Verdict::kMovedOn);
  r = w;
  r.label = "run-2";
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r),
            (HandshakeDecision{Verdict::kMovedOn, "was taken over by another assignment"}));
}

TEST(Handshake, RegisteredNoticesADeadInstanceInEc2) {
  const InstanceRecord w = written(State::kCreated);
  InstanceRecord r = w;
  for (const std::string& s : kEc2) {
    const HandshakeDecision want =
        aws_dead(s) ? HandshakeDecision{Verdict::kGone, "is " + s + " in EC2", true} : HandshakeDecision{};
    EXPECT_EQ(judge(Awaited::kRegistered, w, &r, s), want) << s;
  }
  // What the agent wrote comes first: it registered (and maybe went since; the next look says).
  r = with_signal(w, AgentSignal::kRegistered);
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r, "terminated").verdict, Verdict::kWrite);
  r.state = State::kRunning;
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r, "terminated").verdict, Verdict::kDone);
}

TEST(Handshake, ASilentAgentOfAClaimedInstanceIsGiven30sThenFails) {
  const InstanceRecord w = written(State::kClaimed);
  InstanceRecord r = w;
  r.heartbeat_ms = kJudgedAt - 30'000;
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r, "", true).verdict, Verdict::kWait);
  r.heartbeat_ms = kJudgedAt - 30'001;
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r, "", true),
            (HandshakeDecision{Verdict::kFail, "its agent has been silent for 30.0s"}));
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r, "", false).verdict, Verdict::kWait) << "a launch has no beat to lose";
  r.heartbeat_ms = 0;
  EXPECT_EQ(judge(Awaited::kRegistered, w, &r, "", true).verdict, Verdict::kWait) << "never beat: booting";
}

// ---- drained

TEST(Handshake, DrainedIsDoneOrAFreshTokenOrWait) {
  const InstanceRecord w = written(State::kDraining);
  InstanceRecord r = w;
  r.remove_token = Secret("remove-token");
  EXPECT_EQ(judge(Awaited::kDrained, w, &r).verdict, Verdict::kWait);
  r.remove_token = Secret("");
  EXPECT_EQ(judge(Awaited::kDrained, w, &r).verdict, Verdict::kWrite) << "the agent handed a refused token back";
  r = with_signal(w, AgentSignal::kDrained, "runner left registered: x (id 4): 500");
  EXPECT_EQ(judge(Awaited::kDrained, w, &r).verdict, Verdict::kDone) << "its runner's fate is the waiter's to settle";
  r = with_signal(w, AgentSignal::kFailed, "cleaning failed");
  EXPECT_EQ(judge(Awaited::kDrained, w, &r),
            (HandshakeDecision{Verdict::kFail, "its agent failed while draining: cleaning failed"}));
}

TEST(Handshake, DrainedEndsWhenTheRecordMovesOnOrTheInstanceEnds) {
  const InstanceRecord w = written(State::kDraining);
  EXPECT_EQ(judge(Awaited::kDrained, w, nullptr).verdict, Verdict::kGone);
  InstanceRecord r = w;
  r.state = State::kIdle;
  EXPECT_EQ(judge(Awaited::kDrained, w, &r),
            (HandshakeDecision{Verdict::kMovedOn, "was returned to the pool by another runpoolctl"}));
  r = w;
  r.generation = w.generation + 1;
  r.state = State::kClaimed;
  EXPECT_EQ(judge(Awaited::kDrained, w, &r).verdict, Verdict::kMovedOn);
  for (State s : {State::kTerminating, State::kTerminated}) {
    r = w;
    r.state = s;
    EXPECT_EQ(judge(Awaited::kDrained, w, &r),
              (HandshakeDecision{Verdict::kGone, "is " + std::string(state_name(s))}));
  }
  r = w;
  r.remove_token = Secret("t");
  EXPECT_EQ(judge(Awaited::kDrained, w, &r, "stopped"), (HandshakeDecision{Verdict::kGone, "is stopped in EC2", true}));
  EXPECT_EQ(judge(Awaited::kDrained, w, &r, "running").verdict, Verdict::kWait);
  r = with_signal(r, AgentSignal::kDrained);
  EXPECT_EQ(judge(Awaited::kDrained, w, &r, "terminated").verdict, Verdict::kDone) << "it drained before it went";
}

// signal_detail is the agent's word, forgeable by a thief holding the instance role's credentials:
// a reason quoting it (provision's and release's errors, step summaries, logs) is one line, short.
TEST(Handshake, AHostileDetailIsQuotedOnOneShortLine) {
  const std::string hostile = "x\n::set-output name=label::thief\n" + std::string(100'000, 'y');
  struct Case {
    Awaited awaited;
    State state;
    AgentSignal signal;
  };
  const Case cases[] = {
      {Awaited::kRegistered, State::kClaimed, AgentSignal::kFailed},
      {Awaited::kRegistered, State::kClaimed, AgentSignal::kInterrupted},
      {Awaited::kRegistered, State::kDraining, AgentSignal::kNone},
      {Awaited::kDrained, State::kDraining, AgentSignal::kFailed},
  };
  for (const auto& c : cases) {
    InstanceRecord w = written(c.awaited == Awaited::kDrained ? State::kDraining : State::kClaimed);
    InstanceRecord cur = with_signal(written(c.state), c.signal, hostile);
    HandshakeDecision d = judge(c.awaited, w, &cur);
    EXPECT_EQ(d.verdict, Verdict::kFail) << d.reason.substr(0, 80);
    EXPECT_EQ(d.reason.find('\n'), std::string::npos);
    EXPECT_NE(d.reason.find("x?::set-output"), std::string::npos) << d.reason.substr(0, 80);
    EXPECT_LT(d.reason.size(), 700u);
  }
}

TEST(Handshake, ProblemsReadAsSentences) {
  EXPECT_EQ(handshake_problem("i-1", {Verdict::kGone, "is stopped in EC2", true}), "instance i-1 is stopped in EC2");
  EXPECT_EQ(handshake_problem("i-1", {Verdict::kMovedOn, "was taken over by another assignment"}),
            "instance i-1 was taken over by another assignment");
  EXPECT_EQ(handshake_problem("i-1", {Verdict::kGone, "its record disappeared"}), "instance i-1: its record disappeared");
}

// ---- over every combination

TEST(Handshake, EveryCombinationHasOneVerdictThatFollowsTheRules) {
  for (Awaited a : {Awaited::kRegistered, Awaited::kDrained}) {
    const InstanceRecord w = written(a == Awaited::kRegistered ? State::kCreated : State::kDraining);
    for (State s : kStates) {
      for (AgentSignal sig : kSignals) {
        for (int64_t gen : {w.generation, w.generation + 1}) {
          for (const std::string& ec2 : kEc2) {
            InstanceRecord r = with_signal(w, sig, "d");
            r.state = s;
            r.generation = gen;
            r.signal_generation = gen;
            const HandshakeDecision d = judge(a, w, &r, ec2);
            SCOPED_TRACE(std::string(state_name(s)) + " " + std::string(agent_signal_name(sig)) + " gen " +
                         std::to_string(gen) + " ec2 " + ec2 + " → " + std::string(verdict_name(d.verdict)));
            // Another generation's record is never this wait's to finish, fail or write.
            if (gen != w.generation) {
              EXPECT_EQ(d.verdict, Verdict::kMovedOn);
            }
            // Done only on the awaited answer.
            if (d.verdict == Verdict::kDone) {
              if (a == Awaited::kRegistered) EXPECT_EQ(s, State::kRunning);
              else EXPECT_TRUE(s == State::kDraining && sig == AgentSignal::kDrained);
            }
            // A write only where the waiter has one to make.
            if (d.verdict == Verdict::kWrite) {
              if (a == Awaited::kRegistered) {
                EXPECT_TRUE((s == State::kCreated || s == State::kClaimed) && sig == AgentSignal::kRegistered);
              } else {
                EXPECT_EQ(s, State::kDraining);
              }
            }
            // Every ending says why; waiting and finishing need no words.
            const bool ends = d.verdict == Verdict::kFail || d.verdict == Verdict::kGone || d.verdict == Verdict::kMovedOn;
            EXPECT_EQ(d.reason.empty(), !ends);
            // An instance dead in EC2 is never waited for; only EC2's word has the waiter close a record.
            if (aws_dead(ec2)) {
              EXPECT_NE(d.verdict, Verdict::kWait);
            }
            if (d.close_record) {
              EXPECT_TRUE(aws_dead(ec2) && d.verdict == Verdict::kGone);
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace runpool::pool
