#include "common/pool/rerun_plan.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

constexpr int64_t kHour = 3'600'000;
constexpr int64_t kNow = 1'800'000'000'000;

RunAssignment ended(const std::string& label, int64_t run_id, int64_t ended_ago_ms, int count = 2) {
  RunAssignment a;
  a.label = label;
  a.repository = "acme/app";
  a.run_id = run_id;
  a.attempt = 1;
  a.count = count;
  a.created_ms = kNow - ended_ago_ms - kHour;
  a.ended_ms = kNow - ended_ago_ms;
  return a;
}

RunJob job(const std::string& status, int64_t attempt, const std::string& label) { return {attempt, status, {label}}; }

RerunSnapshot snapshot_with(std::vector<RunAssignment> assignments) {
  RerunSnapshot s;
  s.now_ms = kNow;
  s.assignments = std::move(assignments);
  return s;
}

TEST(RerunPlan, ServesTheQueuedJobsOfANewerAttemptThatAskForTheLabel) {
  RerunSnapshot s = snapshot_with({ended("ci-7-1-provision", 7, kHour, 3)});
  s.runs = {{"acme/app", 7, 2}};
  s.jobs[{"acme/app", 7}] = {job("completed", 1, "ubuntu-latest"), job("queued", 2, "ci-7-1-provision"),
                             job("queued", 2, "CI-7-1-PROVISION"), job("queued", 2, "ubuntu-latest"),
                             job("completed", 1, "ci-7-1-provision")};
  auto plan = plan_reruns(s, {});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].kind, RerunActionKind::kServe);
  EXPECT_EQ(plan[0].attempt, 2);
  EXPECT_EQ(plan[0].count, 2) << "labels compare as GitHub compares them, case-insensitively";
  EXPECT_EQ(plan[0].assignment.label, "ci-7-1-provision");
}

TEST(RerunPlan, NeverMoreRunnersThanTheFirstProvisionHad) {
  RerunSnapshot s = snapshot_with({ended("l", 7, kHour, 2)});
  s.runs = {{"acme/app", 7, 3}};
  s.jobs[{"acme/app", 7}] = {job("queued", 3, "l"), job("queued", 3, "l"), job("queued", 3, "l"), job("queued", 3, "l")};
  auto plan = plan_reruns(s, {});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].count, 2);
  EXPECT_EQ(plan[0].attempt, 3);
}

TEST(RerunPlan, LeavesWhatNeedsNoRunner) {
  struct Case {
    const char* why;
    RunAssignment a;
    std::vector<ActiveRun> runs;
    std::vector<RunJob> jobs;
    std::set<std::string> live;
  };
  RunAssignment live_one = ended("l", 7, kHour);
  live_one.ended_ms = 0;
  RunAssignment served_two = ended("l", 7, kHour);
  served_two.attempt = 2;
  const std::vector<Case> cases = {
      {"the run is not active", ended("l", 7, kHour), {}, {job("queued", 2, "l")}, {}},
      {"the attempt served is the run's", ended("l", 7, kHour), {{"acme/app", 7, 1}}, {job("queued", 1, "l")}, {}},
      {"already served that attempt", served_two, {{"acme/app", 7, 2}}, {job("queued", 2, "l")}, {}},
      {"no queued job asks for the label", ended("l", 7, kHour), {{"acme/app", 7, 2}},
       {job("queued", 2, "other"), job("in_progress", 2, "l"), job("waiting", 2, "l")}, {}},
      {"the assignment still serves (no release yet)", live_one, {{"acme/app", 7, 2}}, {job("queued", 2, "l")}, {}},
      {"an instance still carries the label", ended("l", 7, kHour), {{"acme/app", 7, 2}}, {job("queued", 2, "l")}, {"L"}},
      {"another repository's run of that id", ended("l", 7, kHour), {{"acme/other", 7, 2}}, {job("queued", 2, "l")}, {}},
  };
  for (const Case& c : cases) {
    RerunSnapshot s = snapshot_with({c.a});
    s.runs = c.runs;
    s.live_labels = c.live;
    for (const ActiveRun& r : c.runs) s.jobs[{r.repository, r.run_id}] = c.jobs;
    EXPECT_TRUE(plan_reruns(s, {}).empty()) << c.why;
  }
}

TEST(RerunPlan, ForgetsWhatEndedBeforeTheWindow) {
  const RerunPolicy policy{24 * kHour};
  RunAssignment never_ended = ended("never", 9, 0);
  never_ended.ended_ms = 0;
  never_ended.created_ms = kNow - 25 * kHour;
  RerunSnapshot s = snapshot_with({ended("old", 7, 25 * kHour), ended("recent", 8, 23 * kHour), never_ended});
  s.runs = {{"acme/app", 7, 2}};
  s.jobs[{"acme/app", 7}] = {job("queued", 2, "old")};
  auto plan = plan_reruns(s, policy);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].kind, RerunActionKind::kForget);
  EXPECT_EQ(plan[0].assignment.label, "old") << "not served either: past the window";
  EXPECT_EQ(plan[1].kind, RerunActionKind::kForget);
  EXPECT_EQ(plan[1].assignment.label, "never");
  // A window of 0 serves nothing and forgets everything that does not serve now.
  s.live_labels = {"never"};
  auto off = plan_reruns(s, {0});
  EXPECT_EQ(off.size(), 2u);
  for (const auto& a : off) EXPECT_EQ(a.kind, RerunActionKind::kForget);
}

TEST(RerunPlan, GathersOnlyWhatItWillLookAt) {
  std::vector<RunAssignment> as = {ended("a", 7, kHour), ended("b", 8, kHour), ended("c", 9, kHour)};
  as[1].repository = "acme/svc";
  as[2].ended_ms = 0;  // still serving
  RunAssignment same_repo = ended("d", 7, kHour);  // a second provision of run 7
  as.push_back(same_repo);
  EXPECT_EQ(rerun_repositories(as, kNow, {}, {}), (std::vector<std::string>{"acme/app", "acme/svc"}));
  EXPECT_EQ(rerun_repositories(as, kNow, {}, {"a", "d"}), (std::vector<std::string>{"acme/svc"}));
  const std::vector<ActiveRun> runs = {{"acme/app", 7, 2}, {"acme/svc", 8, 1}, {"acme/app", 9, 2}};
  auto inspect = runs_to_inspect(as, runs, kNow, {}, {});
  EXPECT_EQ(inspect, (std::vector<std::pair<std::string, int64_t>>{{"acme/app", 7}})) << "run 7 once; 8 has no newer attempt; 9 serves";
}

}  // namespace
}  // namespace runpool::pool
