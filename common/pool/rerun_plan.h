// refresh's re-run check as a pure decision. GitHub's "re-run failed jobs" (and "re-run this job")
// re-queues the failed jobs and those that need them in a new attempt of the same run, but not a
// provision job that succeeded: the re-run jobs ask again for the label that provision chose in an
// earlier attempt, whose runners its release returned. Nothing would ever serve them, and GitHub
// would give up on them a day later. So refresh keeps each provision's run (run_assignment.h) and,
// for those that ended within the window, looks for queued jobs of a newer attempt that ask for
// the label; it provisions for them again, as many runners as such jobs are queued (at most the
// first provision's count).
//
// The shell (controller/rerun.cc) gathers in three steps, each narrowing the next:
// rerun_repositories() → GitHub's active runs of each → runs_to_inspect() → their latest jobs →
// plan_reruns().
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/pool/run_assignment.h"

namespace runpool::pool {

struct RerunPolicy {
  // How long after its end an assignment is watched for re-runs, and then forgotten. 0: no
  // re-run is served and every kept assignment is forgotten.
  int64_t window_ms = 3 * 24 * 3'600'000LL;
};

// A run as GitHub lists it among a repository's queued or in-progress runs.
struct ActiveRun {
  std::string repository;
  int64_t run_id = 0;
  int64_t attempt = 1;
};

// One of a run's latest jobs.
struct RunJob {
  int64_t run_attempt = 1;
  std::string status;  // GitHub's: "queued", "in_progress", "completed", "waiting", …
  std::vector<std::string> labels;
};

// Watched: ended (its release ran, or its provision failed), within the window, and no instance
// serves its label now.
bool watched(const RunAssignment& a, int64_t now_ms, const RerunPolicy& policy, const std::set<std::string>& live_labels);

// The repositories of the watched assignments, each once, in order.
std::vector<std::string> rerun_repositories(const std::vector<RunAssignment>& assignments, int64_t now_ms,
                                            const RerunPolicy& policy, const std::set<std::string>& live_labels);

// The active runs to read the jobs of: those of a watched assignment, in a newer attempt than the
// one it served. Each (repository, run id) once, in order.
std::vector<std::pair<std::string, int64_t>> runs_to_inspect(const std::vector<RunAssignment>& assignments,
                                                             const std::vector<ActiveRun>& runs, int64_t now_ms,
                                                             const RerunPolicy& policy,
                                                             const std::set<std::string>& live_labels);

struct RerunSnapshot {
  int64_t now_ms = 0;
  std::vector<RunAssignment> assignments;
  std::set<std::string> live_labels;  // labels a non-terminal record carries (case as stored)
  std::vector<ActiveRun> runs;
  std::map<std::pair<std::string, int64_t>, std::vector<RunJob>> jobs;  // of runs_to_inspect()
};

enum class RerunActionKind {
  kServe,   // move the assignment to `attempt` (conditional on the attempt read), provision `count`
  kForget,  // remove the assignment (conditional on the ended_ms read): past the window
};

// "serve-rerun" / "forget-run": the action's name in refresh's report.
std::string_view rerun_action_name(RerunActionKind kind);

struct RerunAction {
  RerunActionKind kind = RerunActionKind::kServe;
  RunAssignment assignment;  // as read
  int64_t attempt = 0;       // kServe: the run attempt served
  int count = 0;             // kServe: runners to provision
  std::string reason;
};

std::vector<RerunAction> plan_reruns(const RerunSnapshot& snapshot, const RerunPolicy& policy);

}  // namespace runpool::pool
