#include "common/pool/rerun_plan.h"

#include <algorithm>

#include "common/text.h"

namespace runpool::pool {
namespace {

bool asks_for(const RunJob& job, const std::string& label) {
  const std::string want = text::lower(label);
  return std::any_of(job.labels.begin(), job.labels.end(), [&](const std::string& l) { return text::lower(l) == want; });
}

const ActiveRun* run_of(const std::vector<ActiveRun>& runs, const RunAssignment& a) {
  for (const ActiveRun& r : runs) {
    if (r.run_id == a.run_id && text::lower(r.repository) == text::lower(a.repository)) return &r;
  }
  return nullptr;
}

bool live(const RunAssignment& a, const std::set<std::string>& live_labels) {
  for (const std::string& l : live_labels) {
    if (text::lower(l) == text::lower(a.label)) return true;
  }
  return false;
}

}  // namespace

std::string_view rerun_action_name(RerunActionKind kind) {
  return kind == RerunActionKind::kServe ? "serve-rerun" : "forget-run";
}

bool watched(const RunAssignment& a, int64_t now_ms, const RerunPolicy& policy, const std::set<std::string>& live_labels) {
  return policy.window_ms > 0 && a.ended_ms != 0 && now_ms - a.ended_ms <= policy.window_ms && !live(a, live_labels);
}

std::vector<std::string> rerun_repositories(const std::vector<RunAssignment>& assignments, int64_t now_ms,
                                            const RerunPolicy& policy, const std::set<std::string>& live_labels) {
  std::vector<std::string> out;
  for (const RunAssignment& a : assignments) {
    if (!watched(a, now_ms, policy, live_labels)) continue;
    bool seen = std::any_of(out.begin(), out.end(), [&](const std::string& r) { return text::lower(r) == text::lower(a.repository); });
    if (!seen) out.push_back(a.repository);
  }
  return out;
}

std::vector<std::pair<std::string, int64_t>> runs_to_inspect(const std::vector<RunAssignment>& assignments,
                                                             const std::vector<ActiveRun>& runs, int64_t now_ms,
                                                             const RerunPolicy& policy,
                                                             const std::set<std::string>& live_labels) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const RunAssignment& a : assignments) {
    if (!watched(a, now_ms, policy, live_labels)) continue;
    const ActiveRun* r = run_of(runs, a);
    if (!r || r->attempt <= a.attempt) continue;
    std::pair<std::string, int64_t> key{r->repository, r->run_id};
    if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
  }
  return out;
}

std::vector<RerunAction> plan_reruns(const RerunSnapshot& s, const RerunPolicy& policy) {
  std::vector<RerunAction> out;
  for (const RunAssignment& a : s.assignments) {
    // Past the window (from its end, or from its start for one whose release never came): forgotten.
    const int64_t last = std::max(a.created_ms, a.ended_ms);
    if (s.now_ms - last > policy.window_ms && !live(a, s.live_labels)) {
      out.push_back({RerunActionKind::kForget, a, 0, 0, "kept past the re-run window"});
      continue;
    }
    if (!watched(a, s.now_ms, policy, s.live_labels)) continue;
    const ActiveRun* r = run_of(s.runs, a);
    if (!r || r->attempt <= a.attempt) continue;
    auto jobs = s.jobs.find({r->repository, r->run_id});
    if (jobs == s.jobs.end()) continue;
    int queued = 0;
    for (const RunJob& j : jobs->second) {
      // Only the newer attempt's own jobs: one carried over from the attempt served is not waiting.
      if (j.status == "queued" && j.run_attempt > a.attempt && asks_for(j, a.label)) ++queued;
    }
    if (queued == 0) continue;
    const int count = std::min(queued, std::max(a.count, 1));
    out.push_back({RerunActionKind::kServe, a, r->attempt, count,
                   "attempt " + std::to_string(r->attempt) + " of run " + std::to_string(a.run_id) + " queued " +
                       std::to_string(queued) + " job(s) for the label"});
  }
  return out;
}

}  // namespace runpool::pool
