// scale-down's idle quota: per resource class across owners, in eviction order, idle runners only.
#include <gtest/gtest.h>

#include "common/pool/scale_down_plan.h"
#include "common/pool/scale_down_plan_testing.h"

// In the fixtures' namespace, so their helpers are found first and by this file alone.
namespace runpool::pool::scale_down_testing {
namespace {

// Three idle shared runners launched 3h, 2h and 1h ago (ids 1, 2, 3).
Fixture three_by_age(int idle, Eviction e) {
  Fixture f;
  f.quota("small", idle, e);
  for (int n = 1; n <= 3; ++n) {
    InstanceRecord r = record(n, State::kRunning);
    r.created_ms = kNow - (4 - n) * kHour;
    f.listed(r);
  }
  return f;
}

std::vector<std::string> kept(const ScaleDownPlan& plan) {
  std::vector<std::string> ids;
  for (const auto& d : plan.decisions) {
    if (d.rule == "idle.quota") ids.push_back(d.record.instance_id);
  }
  return ids;
}

TEST(ScaleDownQuota, OldestFirstKeepsTheNewest) {
  auto plan = three_by_age(1, Eviction::kOldestFirst).plan();
  EXPECT_EQ(kept(plan), (std::vector<std::string>{id_of(3)}));
  EXPECT_EQ(only(plan, id_of(1)).kind, ScaleDownKind::kDrain);
  EXPECT_EQ(only(plan, id_of(2)).kind, ScaleDownKind::kDrain);
  // In eviction order: the kept one first, then the next to go.
  EXPECT_EQ(order_of(plan), (std::vector<std::string>{id_of(3), id_of(2), id_of(1)}));
  EXPECT_NE(only(plan, id_of(1)).reason.find("oldest_first"), std::string::npos);
}

TEST(ScaleDownQuota, NewestFirstKeepsTheOldest) {
  auto plan = three_by_age(2, Eviction::kNewestFirst).plan();
  EXPECT_EQ(kept(plan), (std::vector<std::string>{id_of(1), id_of(2)}));
  ScaleDownDecision d = only(plan, id_of(3));
  EXPECT_EQ(d.kind, ScaleDownKind::kDrain);
  EXPECT_EQ(d.rule, "idle.over-quota");
  EXPECT_EQ(order_of(plan), (std::vector<std::string>{id_of(1), id_of(2), id_of(3)}));
}

TEST(ScaleDownQuota, TiesBreakOnTheInstanceIdInBothOrders) {
  for (Eviction e : {Eviction::kOldestFirst, Eviction::kNewestFirst}) {
    Fixture f;
    f.quota("small", 1, e);
    for (int n : {3, 1, 2}) f.listed(record(n, State::kRunning));  // one launch time, scanned out of order
    auto plan = f.plan();
    EXPECT_EQ(kept(plan), (std::vector<std::string>{id_of(1)})) << eviction_name(e);
    EXPECT_EQ(order_of(plan), (std::vector<std::string>{id_of(1), id_of(2), id_of(3)})) << eviction_name(e);
  }
}

TEST(ScaleDownQuota, QuotaCoversAllOwnersOfAClass) {
  Fixture f;
  f.quota("small", 2);
  for (int n = 1; n <= 4; ++n) {
    InstanceRecord r = record(n, State::kRunning);
    r.reg_url = n % 2 ? "https://github.com/beta" : "https://github.com/alpha/app";
    r.created_ms = kNow - n * kHour;  // 1 is the newest
    f.listed(r);
  }
  auto plan = f.plan();
  // The two newest are kept whatever their owner; alpha's decisions come before beta's.
  EXPECT_EQ(kept(plan), (std::vector<std::string>{id_of(2), id_of(1)}));
  EXPECT_EQ(order_of(plan), (std::vector<std::string>{id_of(2), id_of(4), id_of(1), id_of(3)}));
  EXPECT_EQ(only(plan, id_of(2)).owner, "alpha/app");
  EXPECT_EQ(only(plan, id_of(3)).owner, "beta");
  EXPECT_EQ(only(plan, id_of(3)).kind, ScaleDownKind::kDrain);
  EXPECT_EQ(only(plan, id_of(4)).kind, ScaleDownKind::kDrain);
}

TEST(ScaleDownQuota, EachClassHasItsOwnQuotaAndAClassWithoutOneKeepsNone) {
  Fixture f;
  f.quota("small", 1);
  f.quota("large", 2, Eviction::kNewestFirst);
  for (int n = 1; n <= 9; ++n) {
    InstanceRecord r = record(n, State::kRunning);
    r.resource_class = n <= 3 ? "small" : n <= 6 ? "large" : "gpu";
    r.created_ms = kNow - n * kHour;
    f.listed(r);
  }
  auto plan = f.plan();
  EXPECT_EQ(kept(plan), (std::vector<std::string>{id_of(6), id_of(5), id_of(1)}));  // by class name
  for (int n : {7, 8, 9}) EXPECT_EQ(only(plan, id_of(n)).kind, ScaleDownKind::kDrain);
  EXPECT_NE(only(plan, id_of(7)).reason.find("quota of 0"), std::string::npos);
}

TEST(ScaleDownQuota, IdlePoolInstancesAndSharedRunnersOfAClassShareIt) {
  Fixture f;
  f.quota("small", 1);
  InstanceRecord pooled = record(1, State::kIdle, false);
  pooled.created_ms = kNow - 2 * kHour;
  f.add(pooled);
  InstanceRecord runner = record(2, State::kRunning);
  f.listed(runner);
  auto plan = f.plan();
  EXPECT_EQ(kept(plan), (std::vector<std::string>{id_of(2)}));
  ScaleDownDecision d = only(plan, id_of(1));
  EXPECT_EQ(d.kind, ScaleDownKind::kRetire);
  EXPECT_EQ(d.rule, "idle.over-quota");
  // Idle records need no GitHub: owner "" sorts first.
  EXPECT_EQ(order_of(plan), (std::vector<std::string>{id_of(1), id_of(2)}));
}

TEST(ScaleDownQuota, BusyAndYoungRunnersTakeNoSlot) {
  // Seed 000 would give the oldest_first slot to the newest, busy one and remove the idle one.
  for (int why : {0, 1, 2}) {  // busy by the agent, busy by GitHub, too young
    Fixture f;
    f.quota("small", 1);
    InstanceRecord idle = record(1, State::kRunning);
    idle.created_ms = kNow - 2 * kHour;
    f.listed(idle);
    InstanceRecord other = record(2, State::kRunning);
    if (why == 0) other.busy = true;
    if (why == 2) other.created_ms = kNow - 60'000;
    f.listed(other, why == 1);
    auto plan = f.plan();
    EXPECT_EQ(kept(plan), (std::vector<std::string>{id_of(1)})) << why;
    EXPECT_EQ(only(plan, id_of(2)).kind, ScaleDownKind::kKeep) << why;
  }
}

TEST(ScaleDownQuota, OneOwnersFailedListLeavesTheOthersProcessed) {
  Fixture f;
  f.quota("small", 0);
  InstanceRecord broken = record(1, State::kRunning);
  broken.reg_url = "https://github.com/broken";
  f.add(broken);
  f.s.runners["broken"] = std::nullopt;
  InstanceRecord fine = record(2, State::kRunning);
  f.listed(fine);
  auto plan = f.plan();
  EXPECT_EQ(only(plan, id_of(1)).rule, "github.unavailable");
  EXPECT_EQ(only(plan, id_of(2)).kind, ScaleDownKind::kDrain);
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_NE(plan.notes[0].find("broken"), std::string::npos);
}

TEST(ScaleDownQuota, BypassedAndOrphanedRecordsTakeNoSlot) {
  Fixture f;
  f.quota("small", 1);
  InstanceRecord bypassed = record(1, State::kIdle, false);
  bypassed.bypass_removal = true;
  InstanceRecord marked = record(2, State::kIdle, false);
  marked.orphan_since_ms = kNow - 1;
  InstanceRecord idle = record(3, State::kIdle, false);
  idle.created_ms = kNow - 2 * kHour;  // the oldest: kept only if the others took no slot
  for (const auto& r : {bypassed, marked, idle}) f.add(r);
  auto plan = f.plan();
  EXPECT_EQ(kept(plan), (std::vector<std::string>{id_of(3)}));
}

}  // namespace
}  // namespace runpool::pool::scale_down_testing
