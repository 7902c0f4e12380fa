#include "common/github/workflow_run.h"

#include <gtest/gtest.h>

#include "common/json.h"

namespace runpool::github {
namespace {

// Shaped as GitHub's own examples for the two listings (fields runpool does not read trimmed).
TEST(WorkflowRun, ParsesARunPage) {
  auto v = parse_json(R"({"total_count":2,"workflow_runs":[
      {"id":30433642,"name":"Build","run_number":562,"run_attempt":2,"event":"push","status":"queued","conclusion":null},
      {"id":30433643,"status":"completed","conclusion":"success"}]})", "t");
  auto runs = parse_workflow_run_page(v, "t");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, 30433642);
  EXPECT_EQ(runs[0].run_attempt, 2);
  EXPECT_EQ(runs[0].status, "queued");
  EXPECT_EQ(runs[1].run_attempt, 1) << "GitHub Enterprise Server before run attempts: the first";
}

TEST(WorkflowRun, ParsesAJobPage) {
  auto v = parse_json(R"({"total_count":1,"jobs":[{"id":399444496,"run_id":29679449,"run_attempt":3,
      "status":"queued","conclusion":null,"name":"build","steps":[],"labels":["ci-29679449-1-provision-51725241954"],
      "runner_id":null,"runner_name":null}]})", "t");
  auto jobs = parse_workflow_job_page(v, "t");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].id, 399444496);
  EXPECT_EQ(jobs[0].run_attempt, 3);
  EXPECT_EQ(jobs[0].status, "queued");
  EXPECT_EQ(jobs[0].name, "build");
  EXPECT_EQ(jobs[0].labels, (std::vector<std::string>{"ci-29679449-1-provision-51725241954"}));
  EXPECT_EQ(jobs[0].conclusion, "") << "null until completed";
  EXPECT_EQ(jobs[0].runner_name, "") << "null until a runner took it";
  auto done = parse_workflow_job_page(parse_json(R"({"jobs":[{"id":2,"status":"completed","conclusion":"failure",
      "labels":[],"runner_name":"ci-i-0abc-g3"}]})", "t"), "t");
  EXPECT_EQ(done[0].conclusion, "failure");
  EXPECT_EQ(done[0].runner_name, "ci-i-0abc-g3");
}

TEST(WorkflowRun, RefusesWhatIsNotAListing) {
  for (const char* bad : {R"({})", R"({"workflow_runs":{}})", R"({"workflow_runs":[{"status":"queued"}]})"}) {
    EXPECT_THROW(parse_workflow_run_page(parse_json(bad, "t"), "t"), JsonError) << bad;
  }
  for (const char* bad : {R"({"jobs":[{"id":1,"status":"queued"}]})", R"({"jobs":[{"id":1,"status":"queued","labels":[1]}]})",
                          R"({"jobs":[{"id":1,"labels":[]}]})"}) {
    EXPECT_THROW(parse_workflow_job_page(parse_json(bad, "t"), "t"), JsonError) << bad;
  }
}

}  // namespace
}  // namespace runpool::github
