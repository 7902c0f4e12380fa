#include "common/pool/demand_plan.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

ScaleSetRunner in_phase(const std::string& id, RunnerPhase phase, int64_t since_ms = 0) { return {id, phase, since_ms}; }

DemandFacts facts(int min_armed, int max_runners, std::optional<int64_t> assigned, std::vector<ScaleSetRunner> runners,
                  int claimable = 100) {
  DemandFacts f;
  f.now_ms = 1'000'000;
  f.min_armed = min_armed;
  f.max_runners = max_runners;
  f.assigned_jobs = assigned;
  f.runners = std::move(runners);
  f.claimable = claimable;
  f.arm_grace_ms = 60'000;
  return f;
}

TEST(DemandPlan, DesiredIsMinArmedPlusAssignedBoundedByMax) {
  struct Case {
    int min_armed, max_runners;
    int64_t assigned;
    int64_t desired;
  };
  for (const Case& c : {Case{0, 10, 0, 0}, Case{0, 10, 3, 3}, Case{2, 10, 3, 5}, Case{2, 4, 3, 4}, Case{0, 0, 5, 0},
                        Case{5, 3, 0, 3}, Case{1, 2'147'483'647, 1'000'000, 1'000'001}}) {
    DemandPlan p = plan_demand(facts(c.min_armed, c.max_runners, c.assigned, {}));
    EXPECT_EQ(p.desired, c.desired) << c.min_armed << " " << c.max_runners << " " << c.assigned;
    EXPECT_EQ(p.claim + p.launch, c.desired) << "nothing yet: every desired runner is added";
  }
}

TEST(DemandPlan, GrowingClaimsWarmFirstAndLaunchesOnlyTheRest) {
  DemandPlan p = plan_demand(facts(1, 10, 4, {in_phase("i-a", RunnerPhase::kBusy), in_phase("i-b", RunnerPhase::kArmed)}, 2));
  EXPECT_EQ(p.rule, DemandRule::kGrow);
  EXPECT_EQ(p.desired, 5);
  EXPECT_EQ(p.current, 2);
  EXPECT_EQ(p.claim, 2);
  EXPECT_EQ(p.launch, 1);
  EXPECT_TRUE(p.remove.empty());
  p = plan_demand(facts(0, 10, 3, {}, 5));
  EXPECT_EQ(p.claim, 3);
  EXPECT_EQ(p.launch, 0);
  p = plan_demand(facts(0, 10, 3, {}, 0));
  EXPECT_EQ(p.claim, 0);
  EXPECT_EQ(p.launch, 3);
}

TEST(DemandPlan, EndingRunnersNoLongerCountStartingAndBusyOnesDo) {
  DemandPlan p = plan_demand(facts(0, 10, 3,
                                   {in_phase("i-a", RunnerPhase::kStarting), in_phase("i-b", RunnerPhase::kBusy),
                                    in_phase("i-c", RunnerPhase::kEnding), in_phase("i-d", RunnerPhase::kEnding)}));
  EXPECT_EQ(p.current, 2);
  EXPECT_EQ(p.claim + p.launch, 1);
}

TEST(DemandPlan, ShrinkingRemovesOnlyArmedRunnersLongestArmedFirst) {
  const int64_t now = 1'000'000;
  DemandPlan p = plan_demand(facts(0, 10, 1,
                                   {in_phase("i-busy", RunnerPhase::kBusy, now - 500'000),
                                    in_phase("i-start", RunnerPhase::kStarting, now - 500'000),
                                    in_phase("i-new", RunnerPhase::kArmed, now - 120'000),
                                    in_phase("i-old", RunnerPhase::kArmed, now - 300'000)}));
  EXPECT_EQ(p.rule, DemandRule::kShrink);
  EXPECT_EQ(p.desired, 1);
  EXPECT_EQ(p.current, 4);
  EXPECT_EQ(p.remove, (std::vector<std::string>{"i-old", "i-new"})) << "3 too many, but only the armed go";
  EXPECT_EQ(p.claim + p.launch, 0);
  EXPECT_NE(p.why.find("starting, busy or armed too recently"), std::string::npos) << p.why;
}

TEST(DemandPlan, ARunnerArmedWithinTheGraceIsKept) {
  const int64_t now = 1'000'000;
  // A job assigned a moment ago may be on its way to the runner that armed a moment ago.
  DemandPlan p = plan_demand(facts(0, 10, 0, {in_phase("i-fresh", RunnerPhase::kArmed, now - 59'999)}));
  EXPECT_TRUE(p.remove.empty());
  EXPECT_EQ(p.rule, DemandRule::kSteady);
  p = plan_demand(facts(0, 10, 0, {in_phase("i-fresh", RunnerPhase::kArmed, now - 60'000)}));
  EXPECT_EQ(p.remove, std::vector<std::string>{"i-fresh"});
}

TEST(DemandPlan, MinArmedIsKeptAndNothingMoreRemoved) {
  const int64_t now = 1'000'000;
  DemandPlan p = plan_demand(facts(2, 10, 0,
                                   {in_phase("i-a", RunnerPhase::kArmed, now - 900'000),
                                    in_phase("i-b", RunnerPhase::kArmed, now - 800'000),
                                    in_phase("i-c", RunnerPhase::kArmed, now - 700'000)}));
  EXPECT_EQ(p.remove, std::vector<std::string>{"i-a"});
  p = plan_demand(facts(3, 10, 0,
                        {in_phase("i-a", RunnerPhase::kArmed, now - 900'000), in_phase("i-b", RunnerPhase::kArmed),
                         in_phase("i-c", RunnerPhase::kArmed)}));
  EXPECT_EQ(p.rule, DemandRule::kSteady);
  EXPECT_TRUE(p.remove.empty());
}

TEST(DemandPlan, WithoutStatisticsNothingIsRemovedAndMinArmedIsKept) {
  const int64_t now = 1'000'000;
  DemandPlan p = plan_demand(facts(0, 10, std::nullopt, {in_phase("i-a", RunnerPhase::kArmed, now - 900'000)}));
  EXPECT_EQ(p.rule, DemandRule::kNoStatistics);
  EXPECT_TRUE(p.remove.empty());
  p = plan_demand(facts(2, 10, std::nullopt, {}, 1));
  EXPECT_EQ(p.rule, DemandRule::kNoStatistics);
  EXPECT_EQ(p.claim, 1);
  EXPECT_EQ(p.launch, 1);
}

TEST(DemandPlan, AMaximumLoweredBelowWhatRunsRemovesArmedOnlyAndNeverAddsMore) {
  const int64_t now = 1'000'000;
  DemandPlan p = plan_demand(facts(0, 1, 5,
                                   {in_phase("i-a", RunnerPhase::kBusy), in_phase("i-b", RunnerPhase::kBusy),
                                    in_phase("i-c", RunnerPhase::kArmed, now - 900'000)}));
  EXPECT_EQ(p.desired, 1);
  EXPECT_EQ(p.remove, std::vector<std::string>{"i-c"});
  EXPECT_EQ(p.claim + p.launch, 0);
}

TEST(DemandPlan, NegativeInputsCountAsZero) {
  DemandPlan p = plan_demand(facts(-3, -1, -7, {}, -2));
  EXPECT_EQ(p.desired, 0);
  EXPECT_EQ(p.claim, 0);
  EXPECT_EQ(p.launch, 0);
}

// Every combination of a small world: the plan never removes a runner that is not armed past its
// grace, never removes more than the surplus, never adds while removing, and adds exactly the
// shortfall.
TEST(DemandPlan, InvariantsOverASmallWorld) {
  const int64_t now = 1'000'000;
  const RunnerPhase phases[] = {RunnerPhase::kStarting, RunnerPhase::kArmed, RunnerPhase::kBusy, RunnerPhase::kEnding};
  int cases = 0;
  for (int n = 0; n <= 3; ++n) {
    int combos = 1;
    for (int i = 0; i < n; ++i) combos *= 8;  // 4 phases × armed fresh or old
    for (int code = 0; code < combos; ++code) {
      std::vector<ScaleSetRunner> rs;
      for (int i = 0, c = code; i < n; ++i, c /= 8) {
        rs.push_back(in_phase("i-" + std::to_string(i), phases[c % 4], (c / 4) % 2 ? now - 10'000 : now - 600'000));
      }
      for (int min_armed = 0; min_armed <= 2; ++min_armed) {
        for (int max_runners = 0; max_runners <= 4; ++max_runners) {
          for (int64_t assigned = 0; assigned <= 3; ++assigned) {
            for (int claimable = 0; claimable <= 2; ++claimable) {
              DemandFacts f = facts(min_armed, max_runners, assigned, rs, claimable);
              DemandPlan p = plan_demand(f);
              ++cases;
              ASSERT_LE(p.desired, max_runners);
              ASSERT_TRUE(p.remove.empty() || p.claim + p.launch == 0);
              ASSERT_LE(p.claim, claimable);
              if (p.current < p.desired) {
                ASSERT_EQ(p.claim + p.launch, p.desired - p.current);
              } else {
                ASSERT_EQ(p.claim + p.launch, 0);
                ASSERT_LE(static_cast<int64_t>(p.remove.size()), p.current - p.desired);
              }
              for (const auto& id : p.remove) {
                auto it = std::find_if(rs.begin(), rs.end(), [&](const ScaleSetRunner& r) { return r.instance_id == id; });
                ASSERT_NE(it, rs.end());
                ASSERT_EQ(it->phase, RunnerPhase::kArmed);
                ASSERT_GE(now - it->since_ms, f.arm_grace_ms);
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 10'000);
}

TEST(DemandPlan, InstancesBeingCleanedAreAwaitedRatherThanLaunchedWhileRecent) {
  DemandFacts f = facts(0, 10, 3, {in_phase("i-a", RunnerPhase::kEnding, 990'000), in_phase("i-b", RunnerPhase::kEnding, 100)},
                        0);
  f.return_wait_ms = 120'000;
  DemandPlan p = plan_demand(f);
  EXPECT_EQ(p.rule, DemandRule::kGrow);
  EXPECT_EQ(p.claim, 0);
  EXPECT_EQ(p.awaited, 1) << "i-a ended 10 s ago; i-b long ago (stuck: not waited for)";
  EXPECT_EQ(p.launch, 2);
  EXPECT_NE(p.why.find("1 awaited from cleaning"), std::string::npos) << p.why;

  f.claimable = 1;
  p = plan_demand(f);
  EXPECT_EQ(p.claim, 1);
  EXPECT_EQ(p.awaited, 1);
  EXPECT_EQ(p.launch, 1);

  f.return_wait_ms = 0;  // reuse = never: nothing comes back
  p = plan_demand(f);
  EXPECT_EQ(p.awaited, 0);
  EXPECT_EQ(p.launch, 2);

  f.return_wait_ms = 120'000;
  f.assigned_jobs = 1;
  f.claimable = 0;
  p = plan_demand(f);
  EXPECT_EQ(p.awaited, 1) << "never more awaited than needed";
  EXPECT_EQ(p.launch, 0);
}

}  // namespace
}  // namespace runpool::pool
