// Jobs lost to spot, run again, against in-memory fakes: the run noted while the record has its
// label, the re-run asked of GitHub once the run is over, once whatever the passes, never for a
// job that ended well, and the mark written before the call.
#include "controller/spot_rerun.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "common/pool/runner_name.h"
#include "controller/release.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using testing::World;

constexpr const char* kId = "i-0spot0000000001";
constexpr const char* kLabel = "ci-7001-1-provision";

struct SpotWorld : World {
  pool::MemoryRunAssignmentStore runs;
  SpotWorld() {
    ctx.runs = &runs;
    pool::RunAssignment a;
    a.label = kLabel;
    a.repository = "acme/app";
    a.run_id = 7001;
    a.attempt = 1;
    runs.put(a);
    pool::InstanceRecord r = testing::idle_record(kId, now(), 3);
    r.state = pool::State::kRunning;
    r.label = kLabel;
    table.inner.create(r);
    agents_on = false;
  }
  std::string runner() const { return pool::runner_name("ci", kId, 3); }
  void lose(const std::string& job) {
    ASSERT_TRUE(table.inner.report(kId, {.signal = pool::AgentSignal::kInterrupted, .spot_job = job, .generation = 3}));
  }
  // GitHub's latest jobs of run 7001: provision (hosted), build on our runner, release.
  void github_jobs(const std::string& build_status, const std::string& build_conclusion, bool release_done) {
    github.jobs[7001] = {
        {1, 1, "completed", "provision", {"ubuntu-latest"}, "success", "GitHub Actions 1"},
        {2, 1, build_status, "build", {kLabel}, build_conclusion, runner()},
        {3, 1, release_done ? "completed" : "in_progress", "release", {"ubuntu-latest"}, release_done ? "success" : "",
         "GitHub Actions 2"}};
  }
  std::vector<SpotRerunResult> pass(bool dry_run = false) {
    std::vector<pool::InstanceRecord> all;
    table.scan([&](const pool::InstanceRecord& r) { all.push_back(r); });
    errors.clear();
    return spot_reruns(ctx, all, dry_run, errors);
  }
  std::vector<std::pair<std::string, std::string>> errors;
};

TEST(SpotRerunPass, ReRunsALostJobOnceItsRunIsOverAndNeverAgain) {
  SpotWorld w;
  w.lose("build");
  w.github_jobs("completed", "failure", false);
  auto first = w.pass();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].decision.verdict, pool::SpotVerdict::kWait) << first[0].decision.reason;
  EXPECT_EQ(w.record(kId).spot_run, "acme/app 7001") << "noted while the record has its label";
  EXPECT_TRUE(w.github.reruns.empty());

  // The record is closed (its label goes), then the run ends.
  ASSERT_TRUE(w.table.inner.transition(kId, {}, {.state = pool::State::kTerminated, .label = ""}));
  w.github_jobs("completed", "failure", true);
  auto second = w.pass();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].decision.verdict, pool::SpotVerdict::kRerun);
  EXPECT_EQ(second[0].outcome.kind, ActionOutcome::kDone) << second[0].outcome.detail;
  EXPECT_EQ(w.github.reruns, std::vector<std::string>{"acme/app 2"});
  EXPECT_EQ(w.record(kId).spot_rerun, "rerun 2");
  EXPECT_TRUE(spot_reruns_text(second, false).find("spot-rerun") != std::string::npos);

  for (int i = 0; i < 3; ++i) EXPECT_TRUE(w.pass().empty());
  EXPECT_EQ(w.github.reruns.size(), 1u) << "never twice";
  EXPECT_TRUE(w.errors.empty());
}

TEST(SpotRerunPass, AJobThatEndedWellIsNeverReRun) {
  SpotWorld w;
  w.lose("build");
  w.github_jobs("completed", "success", true);
  auto r = w.pass();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].decision.verdict, pool::SpotVerdict::kNoRerun);
  EXPECT_TRUE(w.github.reruns.empty());
  EXPECT_EQ(w.record(kId).spot_rerun.rfind("none: ", 0), 0u) << w.record(kId).spot_rerun;
  EXPECT_TRUE(w.pass().empty()) << "decided";
}

TEST(SpotRerunPass, TheMarkComesBeforeTheCallSoAPassAfterACrashCallsNoMore) {
  SpotWorld w;
  w.lose("build");
  w.github_jobs("completed", "failure", true);
  // What a controller that died right after its mark leaves.
  ASSERT_TRUE(w.table.inner.transition(kId, {.spot_rerun = ""}, {.spot_rerun = pool::spot_mark_requested(2)}));
  EXPECT_TRUE(w.pass().empty());
  EXPECT_TRUE(w.github.reruns.empty()) << "at most once";
}

TEST(SpotRerunPass, AnotherPassMarkingFirstMakesThisOneSkip) {
  SpotWorld w;
  w.lose("build");
  w.github_jobs("completed", "failure", true);
  w.pass(true);  // a dry run notes and writes nothing
  EXPECT_EQ(w.record(kId).spot_run, "");
  ASSERT_TRUE(w.table.inner.transition(kId, {}, {.spot_run = "acme/app 7001"}));
  w.table.before_transition = [&](const std::string&, const pool::Expect& e, const pool::LifecycleChange&) {
    if (e.spot_rerun && e.spot_rerun->empty()) {
      w.table.before_transition = nullptr;
      w.table.inner.transition(kId, {}, {.spot_rerun = "requested 2"});  // the other pass
    }
  };
  auto r = w.pass();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome.kind, ActionOutcome::kSkipped);
  EXPECT_TRUE(w.github.reruns.empty());
}

TEST(SpotRerunPass, GitHubsRefusalIsRecordedAndNotTriedAgain) {
  SpotWorld w;
  w.lose("build");
  w.github_jobs("completed", "cancelled", true);
  w.github.refuse_rerun = true;
  auto r = w.pass();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome.kind, ActionOutcome::kFailed);
  EXPECT_EQ(w.record(kId).spot_rerun, "refused 2: This workflow run is not completed yet.");
  w.github.refuse_rerun = false;
  EXPECT_TRUE(w.pass().empty());
  EXPECT_TRUE(w.github.reruns.empty());
}

// A POST retried after its first answer was lost: GitHub re-ran the job, then refused the retry
// (the run is going again). The listing shows the newer attempt: re-run, once.
TEST(SpotRerunPass, ARefusedRetryOfAReRunThatHappenedCountsAsDone) {
  SpotWorld w;
  w.lose("build");
  w.github_jobs("completed", "failure", true);
  w.github.refuse_rerun = true;
  w.github.on_rerun = [&] { w.github.jobs[7001][1] = {9, 2, "queued", "build", {kLabel}, "", ""}; };
  auto r = w.pass();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome.kind, ActionOutcome::kDone) << r[0].outcome.detail;
  EXPECT_EQ(w.record(kId).spot_rerun, "rerun 2");
}

TEST(SpotRerunPass, ReleaseNotesTheRunAndSaysSoInItsStepSummary) {
  SpotWorld w;
  w.lose("build");
  std::string summary = ::testing::TempDir() + "/spot_summary.md";
  std::remove(summary.c_str());
  ReleaseOptions o{kLabel, false, std::nullopt, false, {}};
  o.actions.summary = summary;
  run_release(w.ctx, o);
  EXPECT_EQ(w.record(kId).spot_run, "acme/app 7001");
  EXPECT_NE(w.out.str().find("spot interruption notice"), std::string::npos) << w.out.str();
  std::ifstream in(summary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("spot interruption"), std::string::npos) << text;
}

// serve: the run comes from the scale set's session (its JobStarted), by runner name; refresh
// re-runs the job once the run is over, as in step mode.
TEST(SpotRerunPass, ServeNotesTheRunItsSessionNamedForTheRunner) {
  SpotWorld w;
  w.runs.end(kLabel, w.now());
  ASSERT_TRUE(w.table.inner.transition(kId, {}, {.label = "linux-set"}));  // a scale set's, no kept run
  w.lose("build");
  std::vector<pool::InstanceRecord> live = {w.record(kId)};
  EXPECT_EQ(note_session_spot_runs(w.ctx, live, {{"ci-i-other-g1", "acme/app 1"}}), 0);
  EXPECT_EQ(note_session_spot_runs(w.ctx, live, {{w.runner(), "acme/app 7001"}}), 1);
  EXPECT_EQ(w.record(kId).spot_run, "acme/app 7001");
  ASSERT_TRUE(w.table.inner.transition(kId, {}, {.state = pool::State::kTerminated, .label = ""}));
  w.github_jobs("completed", "failure", true);
  auto r = w.pass();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].decision.verdict, pool::SpotVerdict::kRerun) << r[0].decision.reason;
  EXPECT_EQ(w.github.reruns, std::vector<std::string>{"acme/app 2"});
}

// Someone with the instance's credentials writes a job in hand for an earlier generation (an
// earlier tenant's runner, whose run serve's session still remembers) with a raw UpdateItem: serve
// notes nothing for it (and refresh's decision refuses it: common/pool/spot_rerun_test.cc).
TEST(SpotRerunPass, AJobInHandOfAnEarlierGenerationIsNeverNoted) {
  SpotWorld w;
  w.runs.end(kLabel, w.now());
  ASSERT_TRUE(w.table.inner.transition(kId, {}, {.label = "linux-set"}));
  pool::InstanceRecord forged = w.record(kId);
  ASSERT_EQ(forged.generation, 3);
  forged.spot_job = "-";
  forged.spot_generation = 2;
  EXPECT_EQ(note_session_spot_runs(w.ctx, {forged}, {{pool::runner_name("ci", kId, 2), "victim/app 111"}}), 0);
  EXPECT_EQ(w.record(kId).spot_run, "");
}

TEST(SpotRerunPass, NoRunNotedWaitsWhileTheInstanceLivesAndIsFinalOnceItIsGone) {
  SpotWorld w;
  ASSERT_TRUE(w.table.inner.transition(kId, {}, {.label = "linux-set"}));
  w.lose("build");
  auto waiting = w.pass();
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_EQ(waiting[0].decision.verdict, pool::SpotVerdict::kWait);
  EXPECT_EQ(w.record(kId).spot_rerun, "");
  ASSERT_TRUE(w.table.inner.transition(kId, {}, {.state = pool::State::kTerminated, .label = ""}));
  auto final_ = w.pass();
  ASSERT_EQ(final_.size(), 1u);
  EXPECT_EQ(final_[0].decision.verdict, pool::SpotVerdict::kNoRerun);
  EXPECT_EQ(w.record(kId).spot_rerun, "none: no workflow run was noted for it");
}

TEST(SpotRerun, RunTextRoundTripsAndRefusesWhatIsNotOne) {
  EXPECT_EQ(parse_spot_run(spot_run_text("acme/app", 7001)), std::make_pair(std::string("acme/app"), int64_t{7001}));
  for (const char* bad : {"", "acme/app", "acme/app ", " 7", "acme/app 7x", "acme/app 0", "acme/app 12345678901234567890"}) {
    EXPECT_FALSE(parse_spot_run(bad)) << bad;
  }
}

}  // namespace
}  // namespace runpool::controller
