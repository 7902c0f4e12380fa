// What a provision was for, kept past its release so that a re-run can be served: GitHub's "re-run
// failed jobs" re-queues the failed jobs (and those that need them) of a run, but not the
// provision job that succeeded, so the re-run jobs wait on the label that provision chose in an
// earlier attempt, whose runners release already returned. refresh finds such jobs through the
// run's repository and id kept here, and provisions for the label again (common/pool/rerun_plan.h).
//
// Stored in the pool's state table under the key "run/<label>" (run_assignment_store.h): never an
// instance's key, so no instance can reach it, and the record readers pass it over.
#pragma once

#include <cstdint>
#include <string>

namespace runpool::pool {

struct RunAssignment {
  std::string label;
  std::string repository;  // "owner/name", the run's (GITHUB_REPOSITORY)
  int64_t run_id = 0;      // GITHUB_RUN_ID
  int64_t attempt = 0;     // the run attempt it last served: provision's own, then each re-run served
  // What the provision asked for, to ask for the same again: "" means the pool's setting.
  std::string resource_class;
  std::string usage_class;    // "spot", "on-demand" or ""
  std::string allowed_types;  // space-separated globs, or ""
  int count = 1;
  int64_t created_ms = 0;
  int64_t ended_ms = 0;  // when its release (or a failed provision) ended it; 0 while it serves

  bool operator==(const RunAssignment&) const = default;
};

inline constexpr const char* kRunAssignmentKeyPrefix = "run/";

}  // namespace runpool::pool
