// Jobs lost to a spot interruption, run again: the decision, pure. When a spot interruption notice
// reaches an instance with a job in hand, its agent writes the job on its own record (spot_job,
// spot_generation, and spot_job_result if the job still ends there). The controller, which alone
// holds GitHub credentials, reads the job's fate from GitHub (the run's latest jobs: the one of that
// name, run by that generation's runner) and asks GitHub to re-run it once its run is over: GitHub
// re-runs a job only then ("Re-run a job and its dependent jobs in a workflow run", 403 before).
//
// Once, never twice: the controller marks the record (spot_rerun) with a conditional write that
// requires no mark BEFORE it calls GitHub, then writes the outcome over its own mark. A crash
// between the two leaves "requested" and no re-run: at most once, by choice, since marking after
// the call would re-run twice if the controller died between them. Two controllers race on the
// first write; one wins and calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/pool/instance_record.h"

namespace runpool::pool {

// One of a run's latest jobs, as GitHub lists it.
struct SpotRunJob {
  int64_t id = 0;
  int64_t run_attempt = 1;
  std::string name;
  std::string status;       // "queued", "in_progress", "completed", …
  std::string conclusion;   // "success", "failure", "cancelled", …; "" until completed
  std::string runner_name;  // "" until a runner took it
};

// The workflow run the interrupted job belongs to, when the controller knows it.
struct SpotRun {
  std::string repository;  // owner/name
  int64_t run_id = 0;
  std::vector<SpotRunJob> jobs;  // the latest execution of each job name
};

enum class SpotVerdict {
  kNothing,  // no job lost to spot on this record, or already decided: no GitHub call, no write
  kWait,     // not yet: the job or its run has not ended on GitHub
  kRerun,    // re-run job_id
  kNoRerun,  // decided: never re-run (the reason says why); the mark records it
};

struct SpotDecision {
  SpotVerdict verdict = SpotVerdict::kNothing;
  int64_t job_id = 0;
  std::string reason;
};

// Whether the record holds a job lost to spot that is not decided yet (worth a GitHub look).
bool spot_rerun_pending(const InstanceRecord& r);

// The decision for a record, given its run (nullopt: none noted; final once the record is terminated).
// `runner_name` is the name the runner of spot_generation registered under.
SpotDecision decide_spot_rerun(const InstanceRecord& r, const std::string& runner_name, const std::optional<SpotRun>& run);

// The marks written on the record, in order: before the call, then its outcome.
std::string spot_mark_requested(int64_t job_id);
std::string spot_mark_done(int64_t job_id);
std::string spot_mark_refused(int64_t job_id, const std::string& why);
std::string spot_mark_none(const std::string& why);

}  // namespace runpool::pool
