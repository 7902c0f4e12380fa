#include "common/pool/spot_rerun.h"

#include <algorithm>

namespace runpool::pool {
namespace {

bool spot_succeeded(const std::string& runner_result) {
  return runner_result == "Succeeded" || runner_result == "SucceededWithIssues";
}

// GitHub's conclusions of a job that did its work: nothing to run again.
bool spot_concluded_well(const std::string& conclusion) {
  return conclusion == "success" || conclusion == "skipped" || conclusion == "neutral";
}

SpotDecision spot_verdict(SpotVerdict v, std::string reason, int64_t job_id = 0) { return {v, job_id, std::move(reason)}; }

}  // namespace

bool spot_rerun_pending(const InstanceRecord& r) { return !r.spot_job.empty() && r.spot_rerun.empty(); }

SpotDecision decide_spot_rerun(const InstanceRecord& r, const std::string& runner_name,
                               const std::optional<SpotRun>& run) {
  if (!spot_rerun_pending(r)) return spot_verdict(SpotVerdict::kNothing, "");
  // The agent writes its own generation, which a spot notice ends; any other is written by someone
  // else with the instance's credentials, pointing at an earlier tenant's runner.
  if (r.spot_generation != r.generation) {
    return spot_verdict(SpotVerdict::kNoRerun, "the job in hand is written for generation " +
                                                  std::to_string(r.spot_generation) + ", not the record's " +
                                                  std::to_string(r.generation));
  }
  const std::string job = r.spot_job == "-" ? "the job in hand" : "job '" + r.spot_job + "'";
  if (spot_succeeded(r.spot_job_result)) {
    return spot_verdict(SpotVerdict::kNoRerun, job + " completed on the instance (" + r.spot_job_result + ")");
  }
  if (!run) {
    // Noted while the instance lives (release, refresh or serve); once it is gone, never.
    if (!is_terminal(r.state)) return spot_verdict(SpotVerdict::kWait, "no workflow run noted for it yet");
    return spot_verdict(SpotVerdict::kNoRerun, "no workflow run was noted for it");
  }

  // The latest execution of that name run by this runner. Another runner's, or one no runner took
  // yet, means it was already run again. A job the runner never named is this runner's only job
  // in the run, or none: with two, an earlier one that failed on its own could be taken for it.
  const SpotRunJob* found = nullptr;
  const SpotRunJob* same_name = nullptr;
  int by_runner = 0;
  for (const auto& j : run->jobs) {
    if (r.spot_job != "-" && j.name != r.spot_job) continue;
    if (!same_name) same_name = &j;
    if (j.runner_name != runner_name) continue;
    ++by_runner;
    if (!found || j.id > found->id) found = &j;
  }
  if (r.spot_job == "-" && by_runner > 1) {
    return spot_verdict(SpotVerdict::kNoRerun, "the job in hand was never named, and " + runner_name + " ran " +
                                              std::to_string(by_runner) + " jobs of the run: which one is unknown");
  }
  const bool run_over = std::all_of(run->jobs.begin(), run->jobs.end(), [](const auto& j) { return j.status == "completed"; });
  const std::string where = " of run " + std::to_string(run->run_id) + " in " + run->repository;
  if (!found) {
    if (same_name && r.spot_job != "-") {
      return spot_verdict(SpotVerdict::kNoRerun, job + where + " was already run again (attempt " +
                                                std::to_string(same_name->run_attempt) + ")");
    }
    if (!run_over) return spot_verdict(SpotVerdict::kWait, "GitHub lists no " + job + " run by " + runner_name + " yet");
    return spot_verdict(SpotVerdict::kNoRerun, "GitHub lists no " + job + " run by " + runner_name + where);
  }
  const std::string named = "job '" + found->name + "' (" + std::to_string(found->id) + ")" + where;
  if (found->status != "completed") return spot_verdict(SpotVerdict::kWait, named + " is " + found->status);
  if (spot_concluded_well(found->conclusion)) {
    return spot_verdict(SpotVerdict::kNoRerun, named + " ended in " + found->conclusion);
  }
  if (!run_over) return spot_verdict(SpotVerdict::kWait, named + " ended in " + found->conclusion + "; its run is still going");
  return spot_verdict(SpotVerdict::kRerun, named + " ended in " + found->conclusion + " after a spot interruption", found->id);
}

std::string spot_mark_requested(int64_t job_id) { return "requested " + std::to_string(job_id); }
std::string spot_mark_done(int64_t job_id) { return "rerun " + std::to_string(job_id); }
std::string spot_mark_refused(int64_t job_id, const std::string& why) {
  return "refused " + std::to_string(job_id) + ": " + why.substr(0, 200);
}
std::string spot_mark_none(const std::string& why) { return "none: " + why.substr(0, 200); }

}  // namespace runpool::pool
