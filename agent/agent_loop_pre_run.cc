// The loop's part in the pre-run script (pre_run.h runs it, before the first tick): its result
// goes to the record once, and a failure keeps every assignment of this boot from being served.
#include <spdlog/spdlog.h>

#include "agent/agent_loop.h"

namespace runpool::agent {

void AgentLoop::set_pre_run(pool::PreRun status, const std::string& detail) {
  pre_run_.status = status;
  pre_run_.detail = detail;
  pre_run_.reported = false;
  const bool failed = status == pool::PreRun::kFailed || status == pool::PreRun::kTimeout;
  pre_run_.failure = failed ? "pre-run script failed: " + detail : "";
  st_.pre_run_failure = pre_run_.failure;
}

void AgentLoop::report_pre_run() {
  if (pre_run_.status == pool::PreRun::kNone || pre_run_.reported || !reachable_ || !record_) return;
  pool::AgentReport r;
  r.pre_run = pre_run_.status;
  r.pre_run_detail = pre_run_.detail;
  // Failed: retried on the next tick.
  pre_run_.reported = report(r, "pre-run") == Reported::kApplied;
}

}  // namespace runpool::agent
