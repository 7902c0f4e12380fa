#include "controller/session_demand.h"

#include <gtest/gtest.h>

namespace runpool::controller {
namespace {

using github::JobMessage;
using github::JobMessageType;

JobMessage job(JobMessageType type, int64_t request, const std::string& runner = "") {
  JobMessage j;
  j.type = type;
  j.runner_request_id = request;
  j.job_id = "job-" + std::to_string(request);
  j.runner_name = runner;
  return j;
}

github::ScaleSetMessage envelope(std::vector<JobMessage> jobs, std::optional<int64_t> assigned = std::nullopt) {
  github::ScaleSetMessage m;
  m.message_id = 7;
  m.jobs = std::move(jobs);
  if (assigned) {
    m.statistics = github::ScaleSetStatistics{};
    m.statistics->total_assigned_jobs = *assigned;
  }
  return m;
}

const WallTime kNow = from_epoch_ms(1'000'000);

TEST(SessionDemand, StatisticsSetTheDemandAndAnEnvelopeWithoutThemKeepsIt) {
  SessionDemand d;
  absorb(d, envelope({}), kNow);
  EXPECT_FALSE(d.assigned_jobs) << "no statistics yet";
  absorb(d, envelope({}, 3), kNow);
  EXPECT_EQ(d.assigned_jobs, 3);
  absorb(d, envelope({job(JobMessageType::kJobAssigned, 1)}), kNow);
  EXPECT_EQ(d.assigned_jobs, 3);
  absorb(d, envelope({}, 0), kNow);
  EXPECT_EQ(d.assigned_jobs, 0);
}

TEST(SessionDemand, OfferedJobsAreAcquiredOnceEach) {
  SessionDemand d;
  Absorbed a = absorb(d,
                      envelope({job(JobMessageType::kJobAvailable, 5), job(JobMessageType::kJobAssigned, 4),
                                job(JobMessageType::kJobAvailable, 6), job(JobMessageType::kJobAvailable, 5)}),
                      kNow);
  EXPECT_EQ(a.to_acquire, (std::vector<int64_t>{5, 6}));
}

// github.com's flow: the service assigns jobs itself (JobAssigned, no JobAvailable); nothing is
// acquired and the demand is the statistics'.
TEST(SessionDemand, JobsTheServiceAssignedAreNotAcquired) {
  SessionDemand d;
  Absorbed a = absorb(d, envelope({job(JobMessageType::kJobAssigned, 4), job(JobMessageType::kJobAssigned, 5)}, 2), kNow);
  EXPECT_TRUE(a.to_acquire.empty());
  EXPECT_EQ(d.assigned_jobs, 2);
}

TEST(SessionDemand, CompletedJobsNameTheRunnersToDrainAndStartedOnesAreTimed) {
  SessionDemand d;
  JobMessage started = job(JobMessageType::kJobStarted, 1, "p-i-0123456789abcdef0-g2");
  started.queue_time = from_epoch_ms(990'000);
  started.runner_assign_time = from_epoch_ms(991'500);
  JobMessage untimed = job(JobMessageType::kJobStarted, 2, "p-i-0123456789abcdef1-g1");
  JobMessage no_assign = job(JobMessageType::kJobStarted, 3, "p-i-0123456789abcdef2-g1");
  no_assign.queue_time = from_epoch_ms(999'000);
  Absorbed a = absorb(d, envelope({started, untimed, no_assign}), kNow);
  ASSERT_EQ(a.started.size(), 3u);
  EXPECT_EQ(a.started[0].queued_to_started_ms, 1'500);
  EXPECT_FALSE(a.started[1].queued_to_started_ms);
  EXPECT_EQ(a.started[2].queued_to_started_ms, 1'000) << "timed to the envelope's arrival";
  EXPECT_EQ(d.jobs_started, 3);

  absorb(d,
         envelope({job(JobMessageType::kJobCompleted, 1, "p-i-0123456789abcdef0-g2"),
                   job(JobMessageType::kJobCompleted, 9, "")}),
         kNow);
  EXPECT_EQ(d.finished, std::set<std::string>{"p-i-0123456789abcdef0-g2"}) << "a job cancelled before any runner names none";
  EXPECT_EQ(d.jobs_completed, 2);

  forget_finished(d, [](const std::string&) { return false; });
  EXPECT_TRUE(d.finished.empty());
}

// The run of each runner's job, for re-running a job lost to spot: kept for the newest runners.
TEST(SessionDemand, StartedJobsNameTheirRunPerRunnerTheNewestKept) {
  SessionDemand d;
  JobMessage started = job(JobMessageType::kJobStarted, 1, "p-i-0123456789abcdef0-g2");
  started.owner_name = "acme";
  started.repository_name = "app";
  started.workflow_run_id = 7001;
  JobMessage anonymous = job(JobMessageType::kJobStarted, 2, "p-i-0123456789abcdef1-g1");  // no run named
  absorb(d, envelope({started, anonymous}), kNow);
  EXPECT_EQ(d.runs, (std::map<std::string, std::string>{{"p-i-0123456789abcdef0-g2", "acme/app 7001"}}));
  for (int i = 0; i < static_cast<int>(SessionDemand::kRunsKept) + 5; ++i) {
    JobMessage more = started;
    more.runner_name = "p-i-" + std::to_string(i) + "-g1";
    absorb(d, envelope({more}), kNow);
  }
  EXPECT_EQ(d.runs.size(), SessionDemand::kRunsKept);
  EXPECT_EQ(d.runs_order.size(), SessionDemand::kRunsKept);
  EXPECT_EQ(d.runs.count("p-i-0123456789abcdef0-g2"), 0u) << "the oldest went first";
  EXPECT_EQ(d.runs.count("p-i-1004-g1"), 1u);
}

}  // namespace
}  // namespace runpool::controller
