// A repository's workflow runs and their jobs, as much as runpool reads of them (docs.github.com
// /rest/actions/workflow-runs and /workflow-jobs): refresh looks for the jobs a re-run queued on a
// label whose provision ran in an earlier attempt (common/pool/rerun_plan.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <json/json.h>

namespace runpool::github {

struct WorkflowRun {
  int64_t id = 0;
  int64_t run_attempt = 1;
  std::string status;  // "queued", "in_progress", "completed", "waiting", "requested", "pending"
};

struct WorkflowJob {
  int64_t id = 0;
  int64_t run_attempt = 1;
  std::string status;  // as the run's
  std::string name;
  std::vector<std::string> labels;  // its runs-on
  std::string conclusion;           // "success", "failure", "cancelled", …; "" until it is completed
  std::string runner_name;          // the runner that took it; "" before one did
};

// `GET …/actions/runs` pages and `GET …/runs/{id}/jobs` pages; JsonError on a body that is not one.
std::vector<WorkflowRun> parse_workflow_run_page(const Json::Value& v, const std::string& what);
std::vector<WorkflowJob> parse_workflow_job_page(const Json::Value& v, const std::string& what);

}  // namespace runpool::github
