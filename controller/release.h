// runpoolctl release --label L: every instance of the label starts draining (its record handed
// a remove token; its runner's labels removed on GitHub) and release returns: the agent deregisters
// the runner, cleans and reports `drained` on its own, and the next provision of the class
// (controller/take_draining.h) or refresh confirms the runner gone on GitHub and returns the
// instance to the pool. With --wait it waits for that and returns them itself; one whose agent
// does not confirm `drained` in time is terminated. Idempotent and safe to run concurrently:
// every step is a conditional write, so a second release finds nothing left to do or loses each
// race harmlessly, and a release killed after writing the drains loses nothing.
#pragma once

#include <optional>
#include <string>

#include <json/json.h>

#include "controller/context.h"
#include "controller/drain.h"
#include "controller/github_actions.h"

namespace runpool::controller {

struct ReleaseOptions {
  std::string label;
  bool wait = false;                // wait for the drains and return the instances (--wait)
  std::optional<Duration> timeout;  // with wait; nullopt: settings.release_timeout
  bool json = false;
  ActionsFiles actions;             // the step summary, in GitHub Actions
};

int run_release(Context& ctx, const ReleaseOptions& options);

// The work of release, without its report: every instance on `label` set draining, and with
// `wait`, drained back to the pool (waiting up to it) or terminated. `failed`: something went
// wrong, or (waiting) something is still draining; without a wait, instances still draining are
// the expected outcome, not a failure.
struct ReleaseResult {
  DrainOutcome outcome;
  bool failed = false;
  std::vector<std::string> spot_jobs;  // jobs lost to spot, noted for refresh to run again
};
ReleaseResult release_label(Context& ctx, const std::string& label, std::optional<Duration> wait);

// The report; `waited`: release waited for the drains (what still drains then did not in time).
std::string release_text(const std::string& label, const DrainOutcome& d, bool waited = true);
Json::Value release_json(const std::string& label, const DrainOutcome& d, bool waited = true);
std::string release_summary(const std::string& label, const DrainOutcome& d, bool waited, bool failed);

}  // namespace runpool::controller
