#include "common/pool/spot_rerun.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

constexpr const char* kRunner = "ci-i-0abc-3";

InstanceRecord lost(const std::string& job, const std::string& result = "", const std::string& mark = "") {
  InstanceRecord r;
  r.instance_id = "i-0abc";
  r.label = "ci-7-1-provision";
  r.spot_job = job;
  r.generation = 3;
  r.spot_generation = 3;
  r.spot_job_result = result;
  r.spot_rerun = mark;
  r.state = State::kTerminated;
  return r;
}

SpotRunJob gh(int64_t id, const std::string& name, const std::string& status, const std::string& conclusion,
              const std::string& runner = kRunner, int64_t attempt = 1) {
  return {id, attempt, name, status, conclusion, runner};
}

SpotRun run_of(std::vector<SpotRunJob> jobs) { return {"acme/app", 7, std::move(jobs)}; }

const SpotRunJob kProvision = gh(1, "provision", "completed", "success", "GitHub Actions 2");
const SpotRunJob kReleaseDone = gh(4, "release", "completed", "success", "GitHub Actions 3");
const SpotRunJob kReleaseRunning = gh(4, "release", "in_progress", "", "GitHub Actions 3");

TEST(SpotRerun, DecisionTable) {
  struct Case {
    const char* name;
    InstanceRecord record;
    std::optional<SpotRun> run;
    SpotVerdict want;
    int64_t job_id;
  };
  const std::vector<Case> cases = {
      {"no job in hand at the notice", lost(""), run_of({kProvision}), SpotVerdict::kNothing, 0},
      {"written for an earlier generation (an earlier tenant's runner): never", [] {
         InstanceRecord r = lost("build");
         r.spot_generation = 2;
         return r;
       }(), run_of({kProvision, gh(2, "build", "completed", "failure", "ci-i-0abc-2"), kReleaseDone}),
       SpotVerdict::kNoRerun, 0},
      {"already decided: requested", lost("build", "", "requested 2"), run_of({kProvision}), SpotVerdict::kNothing, 0},
      {"already decided: re-run", lost("build", "", "rerun 2"), run_of({kProvision}), SpotVerdict::kNothing, 0},
      {"completed on the instance", lost("build", "Succeeded"), run_of({kProvision}), SpotVerdict::kNoRerun, 0},
      {"completed with issues", lost("build", "SucceededWithIssues"), std::nullopt, SpotVerdict::kNoRerun, 0},
      {"no run noted, instance gone (shared pool)", lost("build"), std::nullopt, SpotVerdict::kNoRerun, 0},
      {"no run noted yet, instance live", [] {
         auto r = lost("build");
         r.state = State::kDraining;
         return r;
       }(), std::nullopt, SpotVerdict::kWait, 0},
      {"lost, run over: re-run",
       lost("build"), run_of({kProvision, gh(2, "build", "completed", "failure"), kReleaseDone}), SpotVerdict::kRerun, 2},
      {"cancelled on the instance, run over: re-run", lost("build", "Canceled"),
       run_of({kProvision, gh(2, "build", "completed", "cancelled"), kReleaseDone}), SpotVerdict::kRerun, 2},
      {"lost, run still going: wait",
       lost("build"), run_of({kProvision, gh(2, "build", "completed", "failure"), kReleaseRunning}), SpotVerdict::kWait, 0},
      {"job still in progress on GitHub: wait",
       lost("build"), run_of({kProvision, gh(2, "build", "in_progress", ""), kReleaseRunning}), SpotVerdict::kWait, 0},
      {"succeeded on GitHub", lost("build"),
       run_of({kProvision, gh(2, "build", "completed", "success"), kReleaseDone}), SpotVerdict::kNoRerun, 0},
      {"someone already re-ran it (queued, no runner)", lost("build"),
       run_of({kProvision, gh(9, "build", "queued", "", "", 2), kReleaseDone}), SpotVerdict::kNoRerun, 0},
      {"someone already re-ran it (another runner)", lost("build"),
       run_of({kProvision, gh(9, "build", "completed", "failure", "ci-i-0def-1", 2), kReleaseDone}),
       SpotVerdict::kNoRerun, 0},
      {"not listed yet, run going: wait", lost("build"), run_of({kProvision, kReleaseRunning}), SpotVerdict::kWait, 0},
      {"not listed, run over", lost("build"), run_of({kProvision, kReleaseDone}), SpotVerdict::kNoRerun, 0},
      {"name not printed yet: this runner's job",
       lost("-"), run_of({kProvision, gh(2, "test", "completed", "failure"), kReleaseDone}), SpotVerdict::kRerun, 2},
      {"name not printed yet, the runner ran two jobs: which is unknown",
       lost("-"),
       run_of({kProvision, gh(2, "lint", "completed", "failure"), gh(3, "test", "completed", "failure"), kReleaseDone}),
       SpotVerdict::kNoRerun, 0},
      {"name not printed, nothing by this runner", lost("-"), run_of({kProvision, kReleaseDone}), SpotVerdict::kNoRerun, 0},
      {"a skipped job", lost("build"), run_of({kProvision, gh(2, "build", "completed", "skipped"), kReleaseDone}),
       SpotVerdict::kNoRerun, 0},
  };
  for (const auto& c : cases) {
    SpotDecision d = decide_spot_rerun(c.record, kRunner, c.run);
    EXPECT_EQ(d.verdict, c.want) << c.name << ": " << d.reason;
    EXPECT_EQ(d.job_id, c.job_id) << c.name;
    if (c.want != SpotVerdict::kNothing) {
      EXPECT_FALSE(d.reason.empty()) << c.name;
    }
  }
}

TEST(SpotRerun, PendingOnlyWithAJobAndNoMark) {
  EXPECT_FALSE(spot_rerun_pending(lost("")));
  EXPECT_TRUE(spot_rerun_pending(lost("build")));
  EXPECT_TRUE(spot_rerun_pending(lost("-")));
  EXPECT_FALSE(spot_rerun_pending(lost("build", "", spot_mark_requested(2))));
}

TEST(SpotRerun, MarksSayWhatWasDecidedAndAreNeverEmpty) {
  EXPECT_EQ(spot_mark_requested(42), "requested 42");
  EXPECT_EQ(spot_mark_done(42), "rerun 42");
  EXPECT_EQ(spot_mark_refused(42, "This workflow run is not completed yet."),
            "refused 42: This workflow run is not completed yet.");
  EXPECT_EQ(spot_mark_none("job 'build' ended in success"), "none: job 'build' ended in success");
  EXPECT_EQ(spot_mark_none(std::string(500, 'x')).size(), 206u);
  EXPECT_FALSE(spot_mark_none("").empty());
}

}  // namespace
}  // namespace runpool::pool
