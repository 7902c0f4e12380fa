#include "controller/session_demand.h"

#include <algorithm>

namespace runpool::controller {

Absorbed absorb(SessionDemand& demand, const github::ScaleSetMessage& message, WallTime now) {
  Absorbed out;
  if (message.statistics) demand.assigned_jobs = message.statistics->total_assigned_jobs;
  for (const github::JobMessage& j : message.jobs) {
    switch (j.type) {
      case github::JobMessageType::kJobAvailable:
        if (std::find(out.to_acquire.begin(), out.to_acquire.end(), j.runner_request_id) == out.to_acquire.end()) {
          out.to_acquire.push_back(j.runner_request_id);
        }
        break;
      case github::JobMessageType::kJobAssigned:
        break;  // the statistics carry the demand it adds
      case github::JobMessageType::kJobStarted: {
        ++demand.jobs_started;
        JobStart s{j.job_id, j.runner_name, std::nullopt};
        if (j.queue_time) {
          const WallTime started = j.runner_assign_time.value_or(now);
          s.queued_to_started_ms = std::max<int64_t>(0, to_epoch_ms(started) - to_epoch_ms(*j.queue_time));
        }
        out.started.push_back(std::move(s));
        if (!j.runner_name.empty() && !j.owner_name.empty() && !j.repository_name.empty() && j.workflow_run_id > 0) {
          if (demand.runs.count(j.runner_name) == 0) demand.runs_order.push_back(j.runner_name);
          demand.runs[j.runner_name] = j.owner_name + "/" + j.repository_name + " " + std::to_string(j.workflow_run_id);
          while (demand.runs_order.size() > SessionDemand::kRunsKept) {
            demand.runs.erase(demand.runs_order.front());
            demand.runs_order.erase(demand.runs_order.begin());
          }
        }
        break;
      }
      case github::JobMessageType::kJobCompleted:
        ++demand.jobs_completed;
        if (!j.runner_name.empty()) demand.finished.insert(j.runner_name);
        break;
    }
  }
  return out;
}

}  // namespace runpool::controller
