#include "common/pool/draining_claim.h"

#include <gtest/gtest.h>

#include "common/pool/sealed_field.h"

namespace runpool::pool {
namespace {

constexpr int64_t kNow = 1'800'000'000'000;

// A record of pool "ci", class "small", draining for 10 s on time, its agent beating.
InstanceRecord draining(const std::string& id, int64_t since_ago_ms = 10'000) {
  InstanceRecord r;
  r.instance_id = id;
  r.pool = "ci";
  r.resource_class = "small";
  r.instance_type = "m7i.large";
  r.usage_class = UsageClass::kSpot;
  r.state = State::kDraining;
  r.generation = 3;
  r.label = "run-1";
  r.reg_url = "https://github.com/acme/app";
  r.created_ms = kNow - 3'600'000;
  r.state_since_ms = kNow - since_ago_ms;
  r.deadline_ms = kNow + 600'000;
  r.hard_deadline_ms = kNow + 900'000;
  r.heartbeat_ms = kNow - 2'000;
  r.seal_key = make_seal_keys().public_key;  // launched with sealed tokens
  return r;
}

InstanceRecord drained(const std::string& id, int64_t since_ago_ms = 10'000) {
  InstanceRecord r = draining(id, since_ago_ms);
  r.signal = AgentSignal::kDrained;
  r.signal_generation = r.generation;
  return r;
}

ClaimRequest request() {
  ClaimRequest q;
  q.resource_class = "small";
  q.now_ms = kNow;
  q.min_remaining_ms = 60'000;
  q.max_heartbeat_age_ms = 30'000;
  q.pool = "ci";
  q.reuse_scope_key = "repository:acme/app";
  return q;
}

DrainingVerdict judge(const InstanceRecord& r, ClaimRequest q = request(), ReusePolicy p = {}) {
  return judge_draining(r, q, p, Timeouts{});
}

TEST(DrainingClaim, EachRecordJudgedAsItsPoolMessageWouldBeOnceReturned) {
  struct Case {
    const char* name;
    std::function<void(InstanceRecord&)> change;
    std::function<void(ClaimRequest&, ReusePolicy&)> ask;
    DrainingPick drained_pick;   // the record with the agent's drained for its generation
    DrainingPick draining_pick;  // the same record still draining
    const char* why;             // "" or a part of the reason
  };
  auto none = [](InstanceRecord&) {};
  auto plain = [](ClaimRequest&, ReusePolicy&) {};
  const DrainingPick F = DrainingPick::kFinish, A = DrainingPick::kAwait, P = DrainingPick::kPass;
  const std::vector<Case> cases = {
      {"on time", none, plain, F, A, ""},
      {"another pool", [](InstanceRecord& r) { r.pool = "other"; }, plain, P, P, "another pool"},
      {"another class", [](InstanceRecord& r) { r.resource_class = "large"; }, plain, P, P, "resource class"},
      {"shared", [](InstanceRecord& r) { r.shared = true; }, plain, P, P, "shared"},
      {"kept for inspection", [](InstanceRecord& r) { r.kept_until_ms = kNow + 1; }, plain, P, P, "kept"},
      {"marked for retirement", [](InstanceRecord& r) { r.retire_pending = true; }, plain, P, P, "retirement"},
      {"idle already", [](InstanceRecord& r) { r.state = State::kIdle; }, plain, P, P, "is idle"},
      {"running", [](InstanceRecord& r) { r.state = State::kRunning; }, plain, P, P, "is running"},
      {"past its drain deadline", [](InstanceRecord& r) { r.deadline_ms = kNow - 1; }, plain, F, P, "deadline"},
      {"past its hard deadline", [](InstanceRecord& r) { r.hard_deadline_ms = kNow; }, plain, F, P, "deadline"},
      {"draining longer than a drain takes", [](InstanceRecord& r) { r.state_since_ms = kNow - kExpectedDrainMs - 1; }, plain, F, P,
       "longer than a drain takes"},
      {"just within a drain's time", [](InstanceRecord& r) { r.state_since_ms = kNow - kExpectedDrainMs; }, plain, F, A, ""},
      {"agent silent", [](InstanceRecord& r) { r.heartbeat_ms = kNow - 31'000; }, plain, P, P, "heartbeat"},
      {"too old for its class", none, [](ClaimRequest& q, ReusePolicy&) { q.max_instance_age_ms = 3'000'000; }, P, P,
       "retirement"},
      {"usage class asked differs", none,
       [](ClaimRequest& q, ReusePolicy&) { q.usage_class = UsageClass::kOnDemand; }, P, P, "usage class"},
      {"type not allowed", none, [](ClaimRequest& q, ReusePolicy&) { q.allowed_type_globs = {"c7*"}; }, P, P,
       "type not allowed"},
      {"type allowed", none, [](ClaimRequest& q, ReusePolicy&) { q.allowed_type_globs = {"m7i.*"}; }, F, A, ""},
      {"reuse never", none, [](ClaimRequest&, ReusePolicy& p) { p.reuse = Reuse::kNever; }, P, P, "reuse-never"},
      {"same scope, this claim's", none, [](ClaimRequest&, ReusePolicy& p) { p.reuse = Reuse::kSameScope; }, F, A,
       ""},
      {"same scope, another repository's claim", none,
       [](ClaimRequest& q, ReusePolicy& p) {
         p.reuse = Reuse::kSameScope;
         q.reuse_scope_key = "repository:acme/other";
       },
       P, P, "kept for repository:acme/app"},
      {"idle life shorter than the claim needs", none,
       [](ClaimRequest& q, ReusePolicy&) { q.min_remaining_ms = Timeouts{}.idle_ttl_ms + 1; }, P, P, "expires"},
  };
  for (const Case& c : cases) {
    ClaimRequest q = request();
    ReusePolicy p;
    c.ask(q, p);
    InstanceRecord d = drained("i-1");
    c.change(d);
    DrainingVerdict v = judge(d, q, p);
    EXPECT_EQ(v.pick, c.drained_pick) << c.name << " (drained): " << v.why;
    InstanceRecord w = draining("i-1");
    c.change(w);
    v = judge(w, q, p);
    EXPECT_EQ(v.pick, c.draining_pick) << c.name << " (draining): " << v.why;
    if (v.pick == P) {
      EXPECT_NE(v.why.find(c.why), std::string::npos) << c.name << ": " << v.why;
    }
  }
}

TEST(DrainingClaim, AnAgentsWordForAnotherGenerationOrFailedIsNotDrained) {
  InstanceRecord r = drained("i-1");
  r.signal_generation = r.generation - 1;  // the previous assignment's drained
  EXPECT_EQ(judge(r).pick, DrainingPick::kAwait);
  r.signal = AgentSignal::kFailed;
  r.signal_generation = r.generation;
  DrainingVerdict v = judge(r);
  EXPECT_EQ(v.pick, DrainingPick::kPass);
  EXPECT_NE(v.why.find("failed"), std::string::npos);
}

TEST(DrainingClaim, PlanFinishesDrainedFirstWaitsForTheRestAndLaunchesWhatNoneCovers) {
  struct Case {
    int need;
    size_t finish, await;
    int launch_now;
  };
  // Two drained, three draining (started 5, 20 and 40 s ago), one of another class, one silent.
  auto facts = [](int need) {
    DrainingFacts f;
    f.records = {draining("i-d40", 40'000), drained("i-x2", 30'000), draining("i-d05", 5'000),
                 drained("i-x1", 50'000),   draining("i-d20", 20'000)};
    InstanceRecord other = draining("i-other");
    other.resource_class = "large";
    InstanceRecord silent = draining("i-silent");
    silent.heartbeat_ms = kNow - 600'000;
    f.records.push_back(other);
    f.records.push_back(silent);
    f.request = request();
    f.need = need;
    return f;
  };
  for (const Case& c : {Case{0, 2, 0, 0}, Case{1, 2, 0, 0}, Case{2, 2, 0, 0}, Case{3, 2, 1, 0}, Case{5, 2, 3, 0},
                        Case{8, 2, 3, 3}}) {
    DrainingPlan p = plan_draining_claims(facts(c.need));
    ASSERT_EQ(p.finish.size(), c.finish) << c.need;
    EXPECT_EQ(p.finish[0].instance_id, "i-x1") << "the longest drained first";
    EXPECT_EQ(p.await.size(), c.await) << c.need;
    EXPECT_EQ(p.launch_now, c.launch_now) << c.need;
    if (!p.await.empty()) {
      EXPECT_EQ(p.await[0].instance_id, "i-d40") << "the drain that started first is done first";
      EXPECT_EQ(p.await_until_ms, p.await.back().state_since_ms + kExpectedDrainMs);
      EXPECT_LE(p.await_until_ms, kNow + kExpectedDrainMs) << "never waits past one drain's time";
    } else {
      EXPECT_EQ(p.await_until_ms, 0);
    }
    ASSERT_EQ(p.notes.size(), 1u) << "another class's record is not even noted";
    EXPECT_NE(p.notes[0].find("i-silent: once returned: agent heartbeat is stale"), std::string::npos) << p.notes[0];
  }
}

// A drain another provision waits for (await_drain) is neither waited for nor taken by this one
// until that wait lapses: it launches instead, at once.
TEST(DrainingClaim, ADrainAnotherProvisionWaitsForIsItsUntilTheWaitLapses) {
  InstanceRecord waited = draining("i-w"), done = drained("i-d"), lapsed = draining("i-l");
  waited.awaited_until_ms = kNow + 80'000;
  done.awaited_until_ms = kNow + 1;
  lapsed.awaited_until_ms = kNow;
  DrainingFacts f;
  f.request = request();
  f.need = 3;
  f.records = {waited, done, lapsed};
  DrainingPlan p = plan_draining_claims(f);
  EXPECT_TRUE(p.finish.empty());
  ASSERT_EQ(p.await.size(), 1u);
  EXPECT_EQ(p.await[0].instance_id, "i-l");
  EXPECT_EQ(p.launch_now, 2);
  ASSERT_EQ(p.notes.size(), 2u);
  for (const auto& n : p.notes) EXPECT_NE(n.find("awaited by another provision"), std::string::npos) << n;
}

TEST(DrainingClaim, NothingDrainingLaunchesEverything) {
  DrainingFacts f;
  f.request = request();
  f.need = 3;
  f.records = {drained("i-1")};
  f.records[0].state = State::kIdle;  // the queue's business, not this plan's
  DrainingPlan p = plan_draining_claims(f);
  EXPECT_TRUE(p.finish.empty());
  EXPECT_TRUE(p.await.empty());
  EXPECT_TRUE(p.notes.empty());
  EXPECT_EQ(p.launch_now, 3);
}

}  // namespace
}  // namespace runpool::pool
