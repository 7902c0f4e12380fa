#include "controller/spot_rerun.h"

#include <map>

#include <spdlog/spdlog.h>

#include "common/github/github_error.h"
#include "common/pool/agent_text.h"
#include "common/pool/runner_name.h"
#include "controller/metrics_events.h"

namespace runpool::controller {
namespace {

using pool::SpotVerdict;

const char* spot_verdict_name(SpotVerdict v) {
  switch (v) {
    case SpotVerdict::kNothing: return "nothing";
    case SpotVerdict::kWait: return "wait";
    case SpotVerdict::kRerun: return "spot-rerun";
    case SpotVerdict::kNoRerun: return "spot-no-rerun";
  }
  return "?";
}

// The job as the agent named it, made safe to quote (it is the agent's word).
std::string spot_job_text(const pool::InstanceRecord& r) {
  return r.spot_job == "-" ? "the job in hand" : "job '" + pool::agent_text(r.spot_job) + "'";
}

// Writes the mark where the record still holds `expect` ("": none); false when it did not.
bool write_spot_mark(Context& ctx, const std::string& id, const std::string& expect, const std::string& text) {
  pool::Expect e;
  e.spot_rerun = expect;
  pool::LifecycleChange c;
  c.spot_rerun = text;
  return ctx.table.transition(id, e, c);
}

// Re-runs one job: the mark first, so that a crash after it never re-runs twice (at most once,
// by design: a crash between the mark and the call leaves "requested" and no re-run).
// Whether GitHub lists the job replaced by a newer execution of its name: re-run after all (a
// retried POST whose first answer was lost finds the run going again and is refused).
bool rerun_seen_on_github(Context& ctx, const pool::SpotRun& run, int64_t job_id) {
  std::string name;
  for (const auto& j : run.jobs) {
    if (j.id == job_id) name = j.name;
  }
  try {
    for (const auto& j : ctx.github.run_jobs(run.repository, run.run_id)) {
      if (j.name == name && j.id != job_id && j.run_attempt > 1) return true;
    }
  } catch (const std::exception& e) {
    spdlog::warn("spot re-run of job {}: could not read the run again: {}", job_id, e.what());
  }
  return false;
}

ActionOutcome rerun_lost_job(Context& ctx, const pool::InstanceRecord& r, const pool::SpotRun& run, int64_t job_id) {
  const std::string& repository = run.repository;
  const std::string requested = pool::spot_mark_requested(job_id);
  if (!write_spot_mark(ctx, r.instance_id, "", requested)) return {ActionOutcome::kSkipped, "decided by another pass", ""};
  ActionOutcome out;
  std::string result;
  try {
    ctx.github.rerun_job(repository, job_id);
    result = pool::spot_mark_done(job_id);
    out = {ActionOutcome::kDone, "GitHub queued job " + std::to_string(job_id) + " of " + repository + " again", ""};
  } catch (const github::GithubError& e) {
    if (rerun_seen_on_github(ctx, run, job_id)) {
      result = pool::spot_mark_done(job_id);
      out = {ActionOutcome::kDone, "GitHub queued job " + std::to_string(job_id) + " again (its answer: " + e.what() + ")", ""};
    } else {
      result = pool::spot_mark_refused(job_id, e.message().empty() ? e.what() : e.message());
      out = {ActionOutcome::kFailed, e.what(), ""};
    }
  } catch (const std::exception& e) {
    result = pool::spot_mark_refused(job_id, e.what());
    out = {ActionOutcome::kFailed, e.what(), ""};
  }
  try {
    if (!write_spot_mark(ctx, r.instance_id, requested, result)) spdlog::warn("spot re-run of {}: the mark changed", r.instance_id);
  } catch (const std::exception& e) {
    spdlog::warn("spot re-run of {}: the outcome '{}' was not written: {}", r.instance_id, result, e.what());
  }
  return out;
}

}  // namespace

std::string spot_run_text(const std::string& repository, int64_t run_id) {
  return repository + " " + std::to_string(run_id);
}

std::optional<std::pair<std::string, int64_t>> parse_spot_run(const std::string& text) {
  const size_t sp = text.rfind(' ');
  if (sp == std::string::npos || sp == 0 || sp + 1 == text.size() || sp + 19 < text.size()) return std::nullopt;
  int64_t id = 0;
  for (size_t i = sp + 1; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    id = id * 10 + (text[i] - '0');
  }
  if (id <= 0) return std::nullopt;
  return std::make_pair(text.substr(0, sp), id);
}

std::vector<std::string> note_spot_runs(Context& ctx, const std::vector<pool::InstanceRecord>& records) {
  std::vector<std::string> lines;
  for (const auto& r : records) {
    if (r.pool != ctx.settings.pool || !pool::spot_rerun_pending(r) || !r.spot_run.empty() || r.label.empty()) continue;
    try {
      auto a = ctx.runs ? ctx.runs->get(r.label) : std::nullopt;
      if (!a) continue;  // no kept run: the decision says so
      pool::Expect e;
      e.generation = r.generation;
      e.label = r.label;
      pool::LifecycleChange c;
      c.spot_run = spot_run_text(a->repository, a->run_id);
      if (!ctx.table.transition(r.instance_id, e, c)) continue;
      lines.push_back(r.instance_id + ": " + spot_job_text(r) + " of run " + std::to_string(a->run_id) + " in " +
                      a->repository + " was in hand at a spot interruption notice; refresh runs it again once the " +
                      "run is over, unless it completed");
      spdlog::warn("{}", lines.back());
    } catch (const std::exception& e) {
      spdlog::warn("noting the run of {}'s job lost to spot: {}", r.instance_id, e.what());
    }
  }
  return lines;
}

int note_session_spot_runs(Context& ctx, const std::vector<pool::InstanceRecord>& records,
                           const std::map<std::string, std::string>& runs_by_runner) {
  int noted = 0;
  for (const auto& r : records) {
    // Only the current assignment's runner: an earlier generation's run is another tenant's.
    if (r.pool != ctx.settings.pool || !pool::spot_rerun_pending(r) || !r.spot_run.empty() ||
        r.spot_generation != r.generation) {
      continue;
    }
    auto it = runs_by_runner.find(pool::runner_name(r.pool, r.instance_id, r.spot_generation));
    if (it == runs_by_runner.end() || !parse_spot_run(it->second)) continue;
    try {
      pool::Expect e;
      e.generation = r.generation;
      pool::LifecycleChange c;
      c.spot_run = it->second;
      if (!ctx.table.transition(r.instance_id, e, c)) continue;
      ++noted;
      spdlog::warn("{}: {} of run {} was in hand at a spot interruption notice; refresh runs it again once the run "
                   "is over, unless it completed", r.instance_id, spot_job_text(r), it->second);
    } catch (const std::exception& e) {
      spdlog::warn("noting the run of {}'s job lost to spot: {}", r.instance_id, e.what());
    }
  }
  return noted;
}

std::vector<SpotRerunResult> spot_reruns(Context& ctx, const std::vector<pool::InstanceRecord>& records, bool dry_run,
                                         std::vector<std::pair<std::string, std::string>>& errors) {
  std::vector<SpotRerunResult> results;
  if (!dry_run) note_spot_runs(ctx, records);
  std::map<std::string, std::optional<pool::SpotRun>> runs;  // by spot_run, read once a pass
  for (pool::InstanceRecord r : records) {
    if (r.pool != ctx.settings.pool || !pool::spot_rerun_pending(r)) continue;
    if (r.spot_run.empty()) {
      if (auto fresh = ctx.table.get(r.instance_id)) r = *fresh;  // noted above, or by a release meanwhile
      if (!pool::spot_rerun_pending(r)) continue;
    }
    std::optional<pool::SpotRun> run;
    if (auto parsed = parse_spot_run(r.spot_run)) {
      auto it = runs.find(r.spot_run);
      if (it == runs.end()) {
        std::optional<pool::SpotRun> got;
        try {
          pool::SpotRun s{parsed->first, parsed->second, {}};
          for (const auto& j : ctx.github.run_jobs(s.repository, s.run_id)) {
            s.jobs.push_back({j.id, j.run_attempt, j.name, j.status, j.conclusion, j.runner_name});
          }
          got = std::move(s);
        } catch (const std::exception& e) {
          errors.push_back({"listing the jobs of run " + r.spot_run + " (a job lost to spot waits)", e.what()});
        }
        it = runs.emplace(r.spot_run, std::move(got)).first;
      }
      if (!it->second) continue;  // unreadable this pass
      run = it->second;
    } else if (!r.spot_run.empty()) {
      continue;  // a mark this controller cannot read: left alone
    }
    const std::string runner = pool::runner_name(r.pool, r.instance_id, r.spot_generation);
    SpotRerunResult res{r.instance_id, r.spot_job, pool::decide_spot_rerun(r, runner, run), {}};
    if (res.decision.verdict == SpotVerdict::kNothing) continue;
    if (!dry_run && !ctx.cancelled.load()) {
      try {
        if (res.decision.verdict == SpotVerdict::kRerun) {
          res.outcome = rerun_lost_job(ctx, r, *run, res.decision.job_id);
        } else if (res.decision.verdict == SpotVerdict::kNoRerun) {
          res.outcome = write_spot_mark(ctx, r.instance_id, "", pool::spot_mark_none(res.decision.reason))
                            ? ActionOutcome{ActionOutcome::kDone, "", ""}
                            : ActionOutcome{ActionOutcome::kSkipped, "decided by another pass", ""};
        } else {
          res.outcome = {ActionOutcome::kLeft, res.decision.reason, ""};
        }
      } catch (const std::exception& e) {
        res.outcome = {ActionOutcome::kFailed, e.what(), ""};
      }
      if (res.decision.verdict == SpotVerdict::kRerun && res.outcome.kind == ActionOutcome::kDone) {
        ctx.metrics.emit(pool_event(ctx.settings, ctx.now_ms()).add("SpotReruns", 1).property(
            "Job", Json::Int64(res.decision.job_id)));
      }
    }
    results.push_back(std::move(res));
  }
  return results;
}

void count_spot_reruns(const std::vector<SpotRerunResult>& results, bool dry_run, std::map<std::string, int>& done,
                       std::map<std::string, int>& planned, int& failed) {
  for (const auto& r : results) {
    if (r.decision.verdict == SpotVerdict::kWait) continue;
    const std::string name = spot_verdict_name(r.decision.verdict);
    if (!dry_run && r.outcome.kind == ActionOutcome::kFailed) ++failed;
    if (r.outcome.kind == ActionOutcome::kDone) ++done[name];
    ++planned[name];
  }
}

Json::Value spot_reruns_json(const std::vector<SpotRerunResult>& results) {
  Json::Value out(Json::arrayValue);
  for (const auto& r : results) {
    Json::Value j(Json::objectValue);
    j["instance_id"] = r.instance_id;
    j["job"] = pool::agent_text(r.spot_job);
    j["decision"] = spot_verdict_name(r.decision.verdict);
    if (r.decision.job_id) j["job_id"] = Json::Int64(r.decision.job_id);
    j["reason"] = r.decision.reason;
    j["outcome"] = outcome_name(r.outcome.kind);
    if (!r.outcome.detail.empty()) j["detail"] = r.outcome.detail;
    out.append(j);
  }
  return out;
}

std::string spot_reruns_text(const std::vector<SpotRerunResult>& results, bool dry_run) {
  std::string out;
  for (const auto& r : results) {
    std::string line = r.instance_id + ": " + spot_verdict_name(r.decision.verdict) + " [" + r.decision.reason + "]";
    if (dry_run) {
      out += "would " + line + "\n";
    } else if (r.outcome.kind == ActionOutcome::kDone) {
      out += line + (r.outcome.detail.empty() ? "" : ": " + r.outcome.detail) + "\n";
    } else {
      out += std::string(outcome_name(r.outcome.kind)) + ": " + line +
             (r.outcome.detail.empty() || r.outcome.detail == r.decision.reason ? "" : " (" + r.outcome.detail + ")") +
             "\n";
    }
  }
  return out;
}

}  // namespace runpool::controller
