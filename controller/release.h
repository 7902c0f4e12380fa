// runpoolctl release --label L: every instance of the label drains (its agent deregisters the
// runner with a remove token handed through its record), then goes back to the pool — idle, a
// fresh deadline, a pool message. An instance whose agent does not confirm `drained` in time is
// terminated. Idempotent and safe to run concurrently: every step is a conditional write, so a
// second release finds nothing left to do or loses each race harmlessly.
#pragma once

#include <optional>
#include <string>

#include <json/json.h>

#include "controller/context.h"
#include "controller/drain.h"

namespace runpool::controller {

struct ReleaseOptions {
  std::string label;
  std::optional<Duration> timeout;  // nullopt: settings.release_timeout
  bool json = false;
};

int run_release(Context& ctx, const ReleaseOptions& options);

// The work of release, without its report: every instance on `label` drained back to the pool
// (waiting up to `wait`), or terminated. `failed`: something went wrong or is still draining.
struct ReleaseResult {
  DrainOutcome outcome;
  bool failed = false;
};
ReleaseResult release_label(Context& ctx, const std::string& label, Duration wait);

std::string release_text(const std::string& label, const DrainOutcome& d);
Json::Value release_json(const std::string& label, const DrainOutcome& d);

}  // namespace runpool::controller
