// Jobs lost to a spot interruption, run again (the decision: common/pool/spot_rerun.h). release and
// each refresh pass note the workflow run of a record's lost job while the record still has its
// label; each refresh pass then decides, and once the run is over asks GitHub to re-run the job:
// the mark first (written where absent), then the call, then its outcome over the mark. GitHub
// queues the job again in a new attempt of the run, on the label its provision chose, and the
// same pass's re-run serving (controller/rerun.h) provisions for it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <json/json.h>

#include "common/pool/instance_record.h"
#include "common/pool/spot_rerun.h"
#include "controller/context.h"
#include "controller/pass_report.h"

namespace runpool::controller {

struct SpotRerunResult {
  std::string instance_id;
  std::string spot_job;
  pool::SpotDecision decision;
  ActionOutcome outcome;
};

// "owner/name <run id>" and back (nullopt: not one).
std::string spot_run_text(const std::string& repository, int64_t run_id);
std::optional<std::pair<std::string, int64_t>> parse_spot_run(const std::string& text);

// Notes, on each of `records` with a lost job and no noted run, the run kept for its label
// (controller/rerun.h's keep_run). Returns one line per lost job noted, for release's report.
std::vector<std::string> note_spot_runs(Context& ctx, const std::vector<pool::InstanceRecord>& records);

// serve's part: notes, on each of a scale set's `records` with a lost job and no noted run, the run
// of the job its runner started as the set's message session told it (SessionDemand::runs, by
// runner name). refresh then decides and re-runs as for step mode; GitHub queues the job again
// for the scale set. Returns how many it noted.
int note_session_spot_runs(Context& ctx, const std::vector<pool::InstanceRecord>& records,
                           const std::map<std::string, std::string>& runs_by_runner);

// One refresh pass over the scan: notes runs, decides, and unless `dry_run` re-runs. Errors reading
// GitHub go to `errors`; the pass goes on with the other records.
std::vector<SpotRerunResult> spot_reruns(Context& ctx, const std::vector<pool::InstanceRecord>& records, bool dry_run,
                                         std::vector<std::pair<std::string, std::string>>& errors);

// refresh's report of them: the summary's counts ("spot-rerun", "spot-no-rerun"), failures, the
// JSON array "spot_reruns" and text lines. Records left waiting are counted nowhere.
void count_spot_reruns(const std::vector<SpotRerunResult>& results, bool dry_run, std::map<std::string, int>& done,
                       std::map<std::string, int>& planned, int& failed);
Json::Value spot_reruns_json(const std::vector<SpotRerunResult>& results);
std::string spot_reruns_text(const std::vector<SpotRerunResult>& results, bool dry_run);

}  // namespace runpool::controller
