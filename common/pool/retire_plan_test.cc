#include "common/pool/retire_plan.h"

#include <gtest/gtest.h>

#include "common/pool/sealed_field.h"

namespace runpool::pool {
namespace {

InstanceRecord rec(State s, std::string ami = "ami-new", std::string runner = "2.336.0", std::string agent = "1.2.0") {
  InstanceRecord r;
  r.instance_id = "i-1";
  r.pool = "ci";
  r.state = s;
  r.ami_id = std::move(ami);
  r.runner_version = std::move(runner);
  r.agent_version = std::move(agent);
  r.seal_key = make_seal_keys().public_key;
  return r;
}

RetireCriteria all() { return {"ami-new", "2.336.0", "1.2.0"}; }

TEST(RetirePlan, CurrentOnlyWhenEveryGivenValueMatches) {
  EXPECT_EQ(outdated_reason(rec(State::kIdle), all()), "");
  EXPECT_EQ(outdated_reason(rec(State::kIdle, "ami-old"), all()), "AMI ami-old, not ami-new");
  EXPECT_EQ(outdated_reason(rec(State::kIdle, "ami-old", "2.330.0", "1.1.0"), all()),
            "AMI ami-old, not ami-new; runner 2.330.0, not 2.336.0; agent 1.1.0, not 1.2.0");
  // Only the given criteria count.
  EXPECT_EQ(outdated_reason(rec(State::kIdle, "ami-old"), RetireCriteria{std::nullopt, "2.336.0", std::nullopt}), "");
  EXPECT_EQ(outdated_reason(rec(State::kIdle, "ami-new", "2.330.0"), RetireCriteria{"ami-new", std::nullopt, std::nullopt}),
            "");
  EXPECT_FALSE(RetireCriteria{}.any());
  EXPECT_TRUE((RetireCriteria{std::nullopt, std::nullopt, "1"}.any()));
}

TEST(RetirePlan, AnUnreportedValueCannotBeShownCurrent) {
  EXPECT_EQ(outdated_reason(rec(State::kIdle, ""), all()), "AMI unknown, not ami-new");
  EXPECT_EQ(outdated_reason(rec(State::kIdle, "ami-new", ""), all()), "runner unknown, not 2.336.0");
}

TEST(RetirePlan, IdleRetiresAtOnceAssignedIsMarkedEndingIsLeft) {
  const RetireCriteria c{std::nullopt, "2.336.0", std::nullopt};
  EXPECT_EQ(decide_retire(rec(State::kIdle, "", "2.330.0"), c, "ci").action, RetireAction::kRetireNow);
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining}) {
    RetireDecision d = decide_retire(rec(s, "", "2.330.0"), c, "ci");
    EXPECT_EQ(d.action, RetireAction::kMark) << state_name(s);
    EXPECT_EQ(d.reason, "runner 2.330.0, not 2.336.0");
    InstanceRecord marked = rec(s, "", "2.330.0");
    marked.retire_pending = true;
    EXPECT_EQ(decide_retire(marked, c, "ci").action, RetireAction::kAlreadyMarked) << state_name(s);
  }
  for (State s : {State::kTerminating, State::kTerminated}) {
    EXPECT_EQ(decide_retire(rec(s, "", "2.330.0"), c, "ci").action, RetireAction::kKeep);
  }
  for (State s : {State::kIdle, State::kRunning}) {
    EXPECT_EQ(decide_retire(rec(s), all(), "ci").action, RetireAction::kKeep) << "current";
  }
}

TEST(RetirePlan, AnotherPoolsOrASharedInstanceIsKept) {
  InstanceRecord other = rec(State::kIdle, "ami-old");
  other.pool = "other";
  EXPECT_EQ(decide_retire(other, all(), "ci").action, RetireAction::kKeep);
  EXPECT_EQ(decide_retire(other, all(), "").action, RetireAction::kRetireNow) << "no pool named: any";
  InstanceRecord shared = rec(State::kRunning, "ami-old");
  shared.shared = true;
  RetireDecision d = decide_retire(shared, all(), "ci");
  EXPECT_EQ(d.action, RetireAction::kKeep);
  EXPECT_NE(d.reason.find("scale-down"), std::string::npos);
}

TEST(RetirePlan, RetirementDueWhenMarkedOrPastTheMaximumAge) {
  InstanceRecord r = rec(State::kIdle);
  r.created_ms = 1'000'000;
  EXPECT_EQ(retirement_due(r, 5'000'000, 0), "") << "no limit";
  EXPECT_EQ(retirement_due(r, 4'999'999, 4'000'000), "");
  EXPECT_EQ(retirement_due(r, 5'000'000, 4'000'000), "older than max_instance_age");
  r.retire_pending = true;
  EXPECT_EQ(retirement_due(r, 1'000'000, 0), "marked for retirement");
  InstanceRecord unknown = rec(State::kIdle);
  EXPECT_EQ(retirement_due(unknown, 5'000'000, 1), "") << "no launch time: no age";
  InstanceRecord unsealed = rec(State::kIdle);
  unsealed.seal_key.clear();
  EXPECT_EQ(retirement_due(unsealed, 1'000'000, 0), "launched before sealed tokens");
  EXPECT_EQ(retire_action_name(RetireAction::kMark), "mark");
}

}  // namespace
}  // namespace runpool::pool
