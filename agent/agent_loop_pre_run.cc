// The loop's part in the pre-run script (pre_run.h runs it, before the first tick): its result
// goes to the record once, and a failure keeps every assignment of this boot from being served.
#include <spdlog/spdlog.h>

#include "agent/agent_loop.h"

namespace runpool::agent {

void AgentLoop::set_pre_run(pool::PreRun status, const std::string& detail) {
  pre_run_ = status;
  pre_run_detail_ = detail;
  pre_run_reported_ = false;
  const bool failed = status == pool::PreRun::kFailed || status == pool::PreRun::kTimeout;
  pre_run_failure_ = failed ? "pre-run script failed: " + detail : "";
  st_.pre_run_failure = pre_run_failure_;
}

void AgentLoop::report_pre_run() {
  if (pre_run_ == pool::PreRun::kNone || pre_run_reported_ || !reachable_ || !record_) return;
  pool::AgentReport r;
  r.pre_run = pre_run_;
  r.pre_run_detail = pre_run_detail_;
  // Failed: retried on the next tick.
  pre_run_reported_ = report(r, "pre-run") == Reported::kApplied;
}

}  // namespace runpool::agent
