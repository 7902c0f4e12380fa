#include "common/github/workflow_run.h"

#include "common/json.h"

namespace runpool::github {
namespace {

std::string element(const std::string& what, const char* key, Json::ArrayIndex i) {
  return what + " " + key + "[" + std::to_string(i) + "]";
}

}  // namespace

std::vector<WorkflowRun> parse_workflow_run_page(const Json::Value& v, const std::string& what) {
  const Json::Value& runs = require_array(v, "workflow_runs", what);
  std::vector<WorkflowRun> out;
  for (Json::ArrayIndex i = 0; i < runs.size(); ++i) {
    const std::string w = element(what, "workflow_runs", i);
    WorkflowRun r;
    r.id = require_int(runs[i], "id", w);
    r.run_attempt = optional_int(runs[i], "run_attempt", w).value_or(1);
    r.status = optional_string(runs[i], "status", w).value_or("");
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<WorkflowJob> parse_workflow_job_page(const Json::Value& v, const std::string& what) {
  const Json::Value& jobs = require_array(v, "jobs", what);
  std::vector<WorkflowJob> out;
  for (Json::ArrayIndex i = 0; i < jobs.size(); ++i) {
    const std::string w = element(what, "jobs", i);
    WorkflowJob j;
    j.id = require_int(jobs[i], "id", w);
    j.run_attempt = optional_int(jobs[i], "run_attempt", w).value_or(1);
    j.status = require_string(jobs[i], "status", w);
    j.name = optional_string(jobs[i], "name", w).value_or("");
    j.conclusion = optional_string(jobs[i], "conclusion", w).value_or("");
    j.runner_name = optional_string(jobs[i], "runner_name", w).value_or("");
    const Json::Value& labels = require_array(jobs[i], "labels", w);
    for (Json::ArrayIndex k = 0; k < labels.size(); ++k) {
      if (!labels[k].isString()) throw JsonError(w + ": labels[" + std::to_string(k) + "] is not a string");
      j.labels.push_back(labels[k].asString());
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace runpool::github
