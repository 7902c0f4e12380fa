// Serving re-runs against in-memory fakes: a provision inside GitHub Actions keeps its run, its
// release ends it, and a re-run's queued jobs on the label get runners again through a refresh
// pass — once, however many passes look.
#include "controller/rerun.h"

#include <gtest/gtest.h>

#include <map>

#include "controller/provision.h"
#include "controller/release.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using testing::World;

std::function<const char*(const char*)> actions_env(std::map<std::string, std::string> env) {
  auto kept = std::make_shared<std::map<std::string, std::string>>(std::move(env));
  return [kept](const char* n) -> const char* {
    auto it = kept->find(n);
    return it == kept->end() ? nullptr : it->second.c_str();
  };
}

struct RerunWorld : World {
  pool::MemoryRunAssignmentStore runs;
  RerunWorld() { ctx.runs = &runs; }

  // The first attempt: provision (inside Actions, label given as the workflow's), then release.
  void first_attempt(const std::string& label, int count) {
    ProvisionOptions o = testing::provision_options(count, label);
    o.getenv = actions_env({{"GITHUB_REPOSITORY", "acme/app"}, {"GITHUB_RUN_ID", "7001"}, {"GITHUB_RUN_ATTEMPT", "1"}});
    o.keep_run = true;
    ASSERT_EQ(run_provision(ctx, o), kExitOk) << out.str();
    ASSERT_EQ(run_release(ctx, {label, true, std::nullopt, false, {}}), kExitOk) << out.str();
  }
  // GitHub after "re-run failed jobs": attempt 2 of run 7001, `queued` jobs waiting on `label`.
  void rerun_queued(const std::string& label, int queued) {
    github.runs["acme/app queued"] = {{7001, 2, "queued"}};
    std::vector<github::WorkflowJob> jobs = {{1, 1, "completed", "provision", {"ubuntu-latest"}, "success", "GitHub Actions 1"}};
    for (int i = 0; i < queued; ++i) jobs.push_back({int64_t(10 + i), 2, "queued", "build", {label}, "", ""});
    jobs.push_back({30, 2, "queued", "release", {"ubuntu-latest"}, "", ""});
    github.jobs[7001] = jobs;
  }
  std::vector<pool::InstanceRecord> records() {
    std::vector<pool::InstanceRecord> all;
    table.scan([&](const pool::InstanceRecord& r) { all.push_back(r); });
    return all;
  }
  // No capacity for any type of any class, spot or on-demand.
  void block_launches(bool blocked) {
    compute.capacity.clear();
    if (!blocked) return;
    for (const auto& rc : settings.resource_classes) {
      for (const auto& t : rc.instance_types) compute.capacity[{t, "spot"}] = compute.capacity[{t, "on-demand"}] = 0;
    }
  }
  int running(const std::string& label) {
    int n = 0;
    for (const auto& r : in_state(pool::State::kRunning)) n += r.label == label;
    return n;
  }
};

TEST(Rerun, AProvisionInsideActionsKeepsItsRunAndItsReleaseEndsIt) {
  RerunWorld w;
  ProvisionOptions o = testing::provision_options(2, "ci-7001-1-provision-9");
  o.getenv = actions_env({{"GITHUB_REPOSITORY", "acme/app"}, {"GITHUB_RUN_ID", "7001"}, {"GITHUB_RUN_ATTEMPT", "3"}});
  o.keep_run = true;
  o.allowed_types = std::vector<std::string>{"c7i.*"};
  ASSERT_EQ(run_provision(w.ctx, o), kExitOk) << w.out.str();
  auto kept = w.runs.get("ci-7001-1-provision-9");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->repository, "acme/app");
  EXPECT_EQ(kept->run_id, 7001);
  EXPECT_EQ(kept->attempt, 3);
  EXPECT_EQ(kept->count, 2);
  EXPECT_EQ(kept->resource_class, w.settings.default_resource_class);
  EXPECT_EQ(kept->allowed_types, "c7i.*");
  EXPECT_EQ(kept->ended_ms, 0);
  ASSERT_EQ(run_release(w.ctx, {"ci-7001-1-provision-9", true, std::nullopt, false, {}}), kExitOk);
  EXPECT_GT(w.runs.get("ci-7001-1-provision-9")->ended_ms, 0);
}

TEST(Rerun, NothingIsKeptOutsideActionsOrWhenNotAsked) {
  RerunWorld w;
  ProvisionOptions o = testing::provision_options(1, "l-outside");
  o.keep_run = true;  // no GITHUB_* in its environment
  ASSERT_EQ(run_provision(w.ctx, o), kExitOk);
  ProvisionOptions warm_up = testing::provision_options(1, "l-warm-up");
  warm_up.getenv = actions_env({{"GITHUB_REPOSITORY", "acme/app"}, {"GITHUB_RUN_ID", "1"}});
  ASSERT_EQ(run_provision(w.ctx, warm_up), kExitOk);
  EXPECT_TRUE(w.runs.list().empty());
}

TEST(Rerun, AFailedProvisionEndsItsRun) {
  RerunWorld w;
  w.block_launches(true);
  ProvisionOptions o = testing::provision_options(1, "l-failed");
  o.getenv = actions_env({{"GITHUB_REPOSITORY", "acme/app"}, {"GITHUB_RUN_ID", "5"}});
  o.keep_run = true;
  o.timeout = std::chrono::seconds(30);
  EXPECT_EQ(run_provision(w.ctx, o), kExitFailed);
  ASSERT_TRUE(w.runs.get("l-failed"));
  EXPECT_GT(w.runs.get("l-failed")->ended_ms, 0);
}

TEST(Rerun, ARerunsQueuedJobsGetRunnersOnTheirLabelOnce) {
  RerunWorld w;
  w.first_attempt("ci-7001-1-provision", 3);
  ASSERT_EQ(w.running("ci-7001-1-provision"), 0);
  w.rerun_queued("ci-7001-1-provision", 2);

  std::vector<std::pair<std::string, std::string>> errors;
  auto dry = serve_reruns(w.ctx, w.records(), true, errors);
  ASSERT_EQ(dry.size(), 1u);
  EXPECT_EQ(dry[0].outcome.kind, ActionOutcome::kPlanned);
  EXPECT_EQ(w.running("ci-7001-1-provision"), 0) << "a dry run provisions nothing";

  auto served = serve_reruns(w.ctx, w.records(), false, errors);
  ASSERT_EQ(served.size(), 1u) << w.out.str();
  EXPECT_EQ(served[0].outcome.kind, ActionOutcome::kDone) << served[0].outcome.detail;
  EXPECT_EQ(served[0].action.count, 2) << "one runner per queued job on the label";
  EXPECT_EQ(w.running("ci-7001-1-provision"), 2);
  EXPECT_EQ(w.runs.get("ci-7001-1-provision")->attempt, 2);
  EXPECT_EQ(w.runs.get("ci-7001-1-provision")->ended_ms, 0) << "serving again until the re-run's release";
  EXPECT_TRUE(errors.empty());

  // The next pass: the label is served, nothing more.
  EXPECT_TRUE(serve_reruns(w.ctx, w.records(), false, errors).empty());
  // The re-run's release returns them and ends it again; attempt 2 is not served twice.
  ASSERT_EQ(run_release(w.ctx, {"ci-7001-1-provision", true, std::nullopt, false, {}}), kExitOk);
  EXPECT_TRUE(serve_reruns(w.ctx, w.records(), false, errors).empty());
  EXPECT_EQ(w.running("ci-7001-1-provision"), 0);
  // A third attempt queues the job again: served again.
  w.github.runs["acme/app queued"] = {{7001, 3, "queued"}};
  w.github.jobs[7001] = {{40, 3, "queued", "build", {"ci-7001-1-provision"}, "", ""}};
  auto third = serve_reruns(w.ctx, w.records(), false, errors);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].outcome.kind, ActionOutcome::kDone);
  EXPECT_EQ(w.running("ci-7001-1-provision"), 1);
}

TEST(Rerun, AServeThatCannotProvisionIsTriedAgainNextPass) {
  RerunWorld w;
  w.first_attempt("l-retry", 1);
  w.rerun_queued("l-retry", 1);
  w.block_launches(true);
  w.settings.provision_timeout = std::chrono::seconds(30);
  // Nothing idle to claim either: the first attempt's instance is drained out of the pool.
  w.queue.queues.clear();
  std::vector<std::pair<std::string, std::string>> errors;
  auto failed = serve_reruns(w.ctx, w.records(), false, errors);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].outcome.kind, ActionOutcome::kFailed);
  EXPECT_EQ(w.runs.get("l-retry")->attempt, 1) << "back to the attempt before";
  EXPECT_GT(w.runs.get("l-retry")->ended_ms, 0);
  w.block_launches(false);
  w.clock.sleep_for(std::chrono::minutes(5));  // the next pass
  auto again = serve_reruns(w.ctx, w.records(), false, errors);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].outcome.kind, ActionOutcome::kDone) << again[0].outcome.detail;
}

TEST(Rerun, GitHubTroubleIsReportedAndTheRestGoesOn) {
  RerunWorld w;
  w.first_attempt("l-quiet", 1);
  // No active run: GitHub is asked about the repository, not about any run's jobs.
  std::vector<std::pair<std::string, std::string>> errors;
  EXPECT_TRUE(serve_reruns(w.ctx, w.records(), false, errors).empty());
  EXPECT_EQ(w.github.requests["ListWorkflowRuns"], 2) << "queued and in progress";
  EXPECT_EQ(w.github.requests["ListJobsForWorkflowRun"], 0);
  EXPECT_TRUE(errors.empty());
}

TEST(Rerun, WorkflowRunFromTheEnvironment) {
  auto a = workflow_run_from_env(actions_env({{"GITHUB_REPOSITORY", "acme/app"}, {"GITHUB_RUN_ID", "17"}, {"GITHUB_RUN_ATTEMPT", "2"}}));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->repository, "acme/app");
  EXPECT_EQ(a->run_id, 17);
  EXPECT_EQ(a->attempt, 2);
  EXPECT_EQ(workflow_run_from_env(actions_env({{"GITHUB_REPOSITORY", "acme/app"}, {"GITHUB_RUN_ID", "17"}}))->attempt, 1);
  for (auto env : std::vector<std::map<std::string, std::string>>{
           {}, {{"GITHUB_RUN_ID", "17"}}, {{"GITHUB_REPOSITORY", "acme/app"}},
           {{"GITHUB_REPOSITORY", "acme"}, {"GITHUB_RUN_ID", "17"}},
           {{"GITHUB_REPOSITORY", "acme/app/x"}, {"GITHUB_RUN_ID", "17"}},
           {{"GITHUB_REPOSITORY", "acme/app"}, {"GITHUB_RUN_ID", "x17"}},
           {{"GITHUB_REPOSITORY", "acme/app"}, {"GITHUB_RUN_ID", "0"}}}) {
    EXPECT_FALSE(workflow_run_from_env(actions_env(env)));
  }
}

}  // namespace
}  // namespace runpool::controller
