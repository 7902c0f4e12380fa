// Serving re-runs: provision keeps the workflow run it serves (common/pool/run_assignment.h),
// release and a failed provision end it, and each refresh pass looks for queued jobs of a newer
// attempt that ask for an ended label, and provisions for them again (common/pool/rerun_plan.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/pool/instance_record.h"
#include "common/pool/rerun_plan.h"
#include "common/pool/run_assignment.h"
#include "controller/context.h"
#include "controller/pass_report.h"

namespace runpool::controller {

// The workflow run a provision inside GitHub Actions serves: GITHUB_REPOSITORY, GITHUB_RUN_ID and
// GITHUB_RUN_ATTEMPT (1 when absent). nullopt outside GitHub Actions or on a malformed value.
std::optional<pool::RunAssignment> workflow_run_from_env(const std::function<const char*(const char*)>& getenv);

// Writes / ends the kept assignment. A failure is logged, never thrown: the provision or release
// it belongs to goes on (only a later re-run would miss its runners).
void keep_run(Context& ctx, const pool::RunAssignment& a);
void end_run(Context& ctx, const std::string& label);

struct RerunResult {
  pool::RerunAction action;
  ActionOutcome outcome;
};

// One re-run pass of refresh, from the pass's scan (`records`): gathers what rerun_plan.h needs,
// plans, and unless `dry_run` carries the plan out — each serve a provision of its own, waited
// for. Errors reading GitHub go to `errors`; the pass goes on with the other repositories.
std::vector<RerunResult> serve_reruns(Context& ctx, const std::vector<pool::InstanceRecord>& records, bool dry_run,
                                      std::vector<std::pair<std::string, std::string>>& errors);

// "serve label L (attempt 2 of run 7 in acme/app): 2 runner(s) [attempt 2 …]"
std::string describe(const pool::RerunAction& action);

}  // namespace runpool::controller
