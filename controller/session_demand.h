// What a scale set's message session has told `runpoolctl serve`: the demand (totalAssignedJobs
// of the latest statistics), the jobs offered that are to be acquired, and the runners whose job
// completed (their instances are drained and cleaned next). Pure: one envelope at a time, in the
// order the queue delivers them; the session's thread absorbs, the serving loop reads a copy.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/github/scaleset_types.h"

namespace runpool::controller {

// One job's time from queued to started, from its JobStarted (for the log and the metrics).
struct JobStart {
  std::string job_id;
  std::string runner_name;
  std::optional<int64_t> queued_to_started_ms;  // nullopt: the service gave no queue time
};

struct SessionDemand {
  std::optional<int64_t> assigned_jobs;  // nullopt until the first statistics
  std::set<std::string> finished;        // runner names whose job completed
  int64_t jobs_completed = 0;
  int64_t jobs_started = 0;
  // The workflow run of the job each runner started ("owner/name <run id>"), by runner name: what
  // a job lost to spot is re-run through (controller/spot_rerun.h). The newest kRunsKept only.
  std::map<std::string, std::string> runs;
  std::vector<std::string> runs_order;  // runner names, oldest first
  static constexpr size_t kRunsKept = 1000;
};

struct Absorbed {
  std::vector<int64_t> to_acquire;  // JobAvailable runner request ids, in order, once each
  std::vector<JobStart> started;
};

// Folds one envelope into `demand`. `now` is when it arrived: a JobStarted without a runner
// assign time is timed to it.
Absorbed absorb(SessionDemand& demand, const github::ScaleSetMessage& message, WallTime now);

// Keeps only the finished names `still_live` says are still to be acted on (the rest were drained).
template <class Pred>
void forget_finished(SessionDemand& demand, Pred still_live) {
  for (auto it = demand.finished.begin(); it != demand.finished.end();) {
    it = still_live(*it) ? std::next(it) : demand.finished.erase(it);
  }
}

}  // namespace runpool::controller
