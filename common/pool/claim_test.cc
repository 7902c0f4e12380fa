#include "common/pool/claim.h"

#include <gtest/gtest.h>

#include "common/pool/sealed_field.h"

namespace runpool::pool {
namespace {

constexpr int64_t kNow = 1'800'000'000'000;

InstanceRecord idle_record() {
  InstanceRecord r;
  r.instance_id = "i-0123456789abcdef0";
  r.pool = "ci";
  r.state = State::kIdle;
  r.generation = 4;
  r.resource_class = "large";
  r.usage_class = UsageClass::kSpot;
  r.instance_type = "c7i.xlarge";
  r.deadline_ms = kNow + 3'600'000;
  r.heartbeat_ms = kNow - 5'000;
  r.seal_key = make_seal_keys().public_key;
  return r;
}

ClaimRequest request() {
  ClaimRequest q;
  q.resource_class = "large";
  q.pool = "ci";
  q.now_ms = kNow;
  q.min_remaining_ms = 600'000;
  q.max_heartbeat_age_ms = 60'000;
  return q;
}

PoolMessage message() { return {"i-0123456789abcdef0", 4}; }

TEST(JudgePoolMessage, ValidIdleInstanceIsClaimed) {
  EXPECT_EQ(judge_pool_message(message(), idle_record(), request()).fate, MessageFate::kClaim);
}

TEST(JudgePoolMessage, AnInstanceDueForRetirementIsNeverClaimed) {
  InstanceRecord marked = idle_record();
  marked.retire_pending = true;
  ClaimVerdict v = judge_pool_message(message(), marked, request());
  EXPECT_EQ(v.fate, MessageFate::kDrop);
  EXPECT_NE(v.reason.find("marked for retirement"), std::string::npos);
  InstanceRecord old = idle_record();
  old.created_ms = kNow - 7 * 86'400'000LL;
  ClaimRequest q = request();
  EXPECT_EQ(judge_pool_message(message(), old, q).fate, MessageFate::kClaim) << "no maximum age";
  q.max_instance_age_ms = 7 * 86'400'000LL;
  EXPECT_EQ(judge_pool_message(message(), old, q).fate, MessageFate::kDrop);
  q.max_instance_age_ms = 7 * 86'400'000LL + 1;
  EXPECT_EQ(judge_pool_message(message(), old, q).fate, MessageFate::kClaim);
  InstanceRecord unsealed = idle_record();
  unsealed.seal_key.clear();
  v = judge_pool_message(message(), unsealed, request());
  EXPECT_EQ(v.fate, MessageFate::kDrop) << "its token would be written in clear";
  EXPECT_NE(v.reason.find("launched before sealed tokens"), std::string::npos) << v.reason;
}

TEST(JudgePoolMessage, MissingRecordDrops) {
  EXPECT_EQ(judge_pool_message(message(), std::nullopt, request()).fate, MessageFate::kDrop);
}

TEST(JudgePoolMessage, EveryNonIdleStateDrops) {
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining, State::kTerminating,
                  State::kTerminated}) {
    InstanceRecord r = idle_record();
    r.state = s;
    EXPECT_EQ(judge_pool_message(message(), r, request()).fate, MessageFate::kDrop) << state_name(s);
  }
}

TEST(JudgePoolMessage, ASharedPoolsInstanceDrops) {
  InstanceRecord r = idle_record();
  r.shared = true;  // never advertised; a message naming one is forged or from older code
  ClaimVerdict v = judge_pool_message(message(), r, request());
  EXPECT_EQ(v.fate, MessageFate::kDrop);
  EXPECT_EQ(v.reason, "instance belongs to a shared pool");
}

TEST(JudgePoolMessage, AnotherPoolsInstanceDrops) {
  InstanceRecord r = idle_record();
  r.pool = "someone-else";  // same table, same class name: a forged message, or a shared queue
  ClaimVerdict v = judge_pool_message(message(), r, request());
  EXPECT_EQ(v.fate, MessageFate::kDrop);
  EXPECT_EQ(v.reason, "instance belongs to another pool");
  r.pool = "";
  EXPECT_EQ(judge_pool_message(message(), r, request()).fate, MessageFate::kDrop);
}

TEST(JudgePoolMessage, StaleGenerationDrops) {
  InstanceRecord r = idle_record();
  r.generation = 5;
  ClaimVerdict v = judge_pool_message(message(), r, request());
  EXPECT_EQ(v.fate, MessageFate::kDrop);
  EXPECT_EQ(v.reason, "message is for generation 4, the instance is at 5");
}

TEST(JudgePoolMessage, AGenerationTheRecordNeverHadDrops) {
  ClaimVerdict v = judge_pool_message({"i-0123456789abcdef0", 9}, idle_record(), request());
  EXPECT_EQ(v.fate, MessageFate::kDrop);
  EXPECT_EQ(v.reason, "message is for generation 9, the instance is at 4");  // not "older"
}

TEST(JudgePoolMessage, WrongClassDrops) {
  ClaimRequest q = request();
  q.resource_class = "small";
  EXPECT_EQ(judge_pool_message(message(), idle_record(), q).fate, MessageFate::kDrop);
}

TEST(JudgePoolMessage, DeadlineEdge) {
  InstanceRecord r = idle_record();
  r.deadline_ms = kNow + 600'000;  // exactly the minimum remaining: still claimable
  EXPECT_EQ(judge_pool_message(message(), r, request()).fate, MessageFate::kClaim);
  r.deadline_ms -= 1;
  EXPECT_EQ(judge_pool_message(message(), r, request()).fate, MessageFate::kDrop);
  r.deadline_ms = kNow - 1;  // already expired
  EXPECT_EQ(judge_pool_message(message(), r, request()).fate, MessageFate::kDrop);
}

TEST(JudgePoolMessage, HeartbeatEdge) {
  InstanceRecord r = idle_record();
  r.heartbeat_ms = kNow - 60'000;
  EXPECT_EQ(judge_pool_message(message(), r, request()).fate, MessageFate::kClaim);
  r.heartbeat_ms -= 1;
  EXPECT_EQ(judge_pool_message(message(), r, request()).fate, MessageFate::kDrop);
  r.heartbeat_ms = 0;  // never beat
  EXPECT_EQ(judge_pool_message(message(), r, request()).fate, MessageFate::kDrop);
}

TEST(JudgePoolMessage, UsageClassMismatchReleases) {
  ClaimRequest q = request();
  q.usage_class = UsageClass::kOnDemand;
  EXPECT_EQ(judge_pool_message(message(), idle_record(), q).fate, MessageFate::kRelease);
  q.usage_class = UsageClass::kSpot;
  EXPECT_EQ(judge_pool_message(message(), idle_record(), q).fate, MessageFate::kClaim);
}

TEST(JudgePoolMessage, TypeGlobsRelease) {
  ClaimRequest q = request();
  q.allowed_type_globs = {"m*", "r7*"};
  EXPECT_EQ(judge_pool_message(message(), idle_record(), q).fate, MessageFate::kRelease);
  q.allowed_type_globs = {"m*", "c7i.*"};
  EXPECT_EQ(judge_pool_message(message(), idle_record(), q).fate, MessageFate::kClaim);
}

// same-scope reuse: a tagged instance is left (released, not dropped) to a claimer of its scope;
// an untagged one is anyone's; the scope check never outranks a reason to drop.
TEST(JudgePoolMessage, ReuseScopeTagReleasesToOtherScopes) {
  InstanceRecord tagged = idle_record();
  tagged.reuse_scope_key = "repository:octo/app";
  ClaimRequest q = request();
  q.reuse_scope_key = "repository:octo/app";
  EXPECT_EQ(judge_pool_message(message(), tagged, q).fate, MessageFate::kClaim);
  q.reuse_scope_key = "repository:octo/other";
  ClaimVerdict v = judge_pool_message(message(), tagged, q);
  EXPECT_EQ(v.fate, MessageFate::kRelease);
  EXPECT_EQ(v.reason, "instance is kept for repository:octo/app");
  q.reuse_scope_key = "owner:octo";
  EXPECT_EQ(judge_pool_message(message(), tagged, q).fate, MessageFate::kRelease);
  q.reuse_scope_key = "";
  EXPECT_EQ(judge_pool_message(message(), tagged, q).fate, MessageFate::kRelease);
  for (const char* scope : {"", "repository:octo/app", "owner:someone"}) {
    q.reuse_scope_key = scope;
    EXPECT_EQ(judge_pool_message(message(), idle_record(), q).fate, MessageFate::kClaim) << scope;
  }
  tagged.heartbeat_ms = kNow - 3'600'000;
  q.reuse_scope_key = "repository:octo/other";
  EXPECT_EQ(judge_pool_message(message(), tagged, q).fate, MessageFate::kDrop);
}

TEST(InstanceTypeAllowed, GlobSemantics) {
  EXPECT_TRUE(instance_type_allowed("c7i.large", {}));
  EXPECT_TRUE(instance_type_allowed("c7i.large", {"c*"}));
  EXPECT_FALSE(instance_type_allowed("m7i.large", {"c*"}));
  EXPECT_TRUE(instance_type_allowed("m7i.large", {"c*", "m7?.large"}));
  EXPECT_FALSE(instance_type_allowed("m7i.xlarge", {"m7?.large"}));
  EXPECT_FALSE(instance_type_allowed("", {"c*"}));
}

TEST(InstanceRecordNames, RoundTrip) {
  for (State s : {State::kCreated, State::kClaimed, State::kRunning, State::kDraining, State::kIdle,
                  State::kTerminating, State::kTerminated}) {
    EXPECT_EQ(parse_state(state_name(s)), s);
  }
  EXPECT_FALSE(parse_state("Idle"));
  EXPECT_FALSE(parse_state(""));
  EXPECT_EQ(parse_usage_class("on-demand"), UsageClass::kOnDemand);
  EXPECT_FALSE(parse_usage_class("ondemand"));
  for (AgentSignal a : {AgentSignal::kNone, AgentSignal::kBooted, AgentSignal::kRegistered, AgentSignal::kDrained,
                        AgentSignal::kFailed, AgentSignal::kInterrupted}) {
    EXPECT_EQ(parse_agent_signal(agent_signal_name(a)), a);
  }
  EXPECT_TRUE(is_terminal(State::kTerminated));
  EXPECT_FALSE(is_terminal(State::kTerminating));
}

}  // namespace
}  // namespace runpool::pool
