#include "controller/rerun.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "common/config.h"
#include "controller/provision.h"

namespace runpool::controller {
namespace {

std::optional<int64_t> positive(const char* text) {
  if (!text || !*text) return std::nullopt;
  std::string s(text);
  if (s.size() > 18 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  int64_t v = std::stoll(s);
  return v > 0 ? std::optional<int64_t>(v) : std::nullopt;
}

// The labels an instance serves now: every record not terminal and not back in the pool.
std::set<std::string> live_labels(const std::vector<pool::InstanceRecord>& records, const std::string& pool_name) {
  std::set<std::string> out;
  for (const auto& r : records) {
    if (r.pool != pool_name || r.label.empty() || pool::is_terminal(r.state) || r.state == pool::State::kIdle) continue;
    out.insert(r.label);
  }
  return out;
}

// A re-run's provision: what the first one asked for, as many as are queued, succeeding with one.
ProvisionOptions rerun_provision(const pool::RerunAction& a, int64_t now_ms) {
  ProvisionOptions o;
  o.label = a.assignment.label;
  // Its own ClientTokens: the label's first provision launched under the label's, and a pass that
  // tries again after a failed one must not get that one's answer either.
  o.fleet_seed = a.assignment.label + "/rerun-" + std::to_string(a.attempt) + "-" + std::to_string(now_ms);
  o.count = a.count;
  o.min_count = 1;
  o.resource_class = a.assignment.resource_class;
  if (!a.assignment.usage_class.empty()) o.usage = pool::parse_usage_class(a.assignment.usage_class);
  if (!a.assignment.allowed_types.empty()) o.allowed_types = split_list(a.assignment.allowed_types);
  o.getenv = [](const char*) -> const char* { return nullptr; };
  o.random = [] { return std::string("0000000000000000"); };  // unused: the label is given
  return o;
}

}  // namespace

std::optional<pool::RunAssignment> workflow_run_from_env(const std::function<const char*(const char*)>& getenv) {
  const char* repo = getenv("GITHUB_REPOSITORY");
  std::optional<int64_t> run_id = positive(getenv("GITHUB_RUN_ID"));
  if (!repo || !run_id) return std::nullopt;
  std::string repository(repo);
  size_t slash = repository.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == repository.size() ||
      repository.find('/', slash + 1) != std::string::npos || repository.size() > 200) {
    return std::nullopt;
  }
  pool::RunAssignment a;
  a.repository = repository;
  a.run_id = *run_id;
  const char* attempt = getenv("GITHUB_RUN_ATTEMPT");
  a.attempt = positive(attempt).value_or(1);
  return a;
}

void keep_run(Context& ctx, const pool::RunAssignment& a) {
  if (!ctx.runs) return;
  try {
    ctx.runs->put(a);
  } catch (const std::exception& e) {
    spdlog::warn("could not keep run {} of {} for label {} (a re-run of its failed jobs would wait for runners): {}",
                 a.run_id, a.repository, a.label, e.what());
  }
}

void end_run(Context& ctx, const std::string& label) {
  if (!ctx.runs) return;
  try {
    ctx.runs->end(label, ctx.now_ms());
  } catch (const std::exception& e) {
    spdlog::warn("could not mark label {}'s run as ended (re-runs of it are not served): {}", label, e.what());
  }
}

std::string describe(const pool::RerunAction& a) {
  if (a.kind == pool::RerunActionKind::kForget) {
    return "forget label " + a.assignment.label + " (run " + std::to_string(a.assignment.run_id) + " of " +
           a.assignment.repository + ") [" + a.reason + "]";
  }
  return "serve label " + a.assignment.label + " again: " + std::to_string(a.count) + " runner(s) for run " +
         std::to_string(a.assignment.run_id) + " of " + a.assignment.repository + " [" + a.reason + "]";
}

std::vector<RerunResult> serve_reruns(Context& ctx, const std::vector<pool::InstanceRecord>& records, bool dry_run,
                                      std::vector<std::pair<std::string, std::string>>& errors) {
  std::vector<RerunResult> results;
  if (!ctx.runs) return results;
  const pool::RerunPolicy policy{ctx.settings.rerun_window.count()};
  pool::RerunSnapshot snap;
  try {
    snap.assignments = ctx.runs->list();
  } catch (const std::exception& e) {
    errors.push_back({"reading the kept workflow runs (re-runs not served)", e.what()});
    return results;
  }
  snap.now_ms = ctx.now_ms();
  snap.live_labels = live_labels(records, ctx.settings.pool);
  // Queued and in-progress runs: a re-run whose jobs all wait is queued; one with another job
  // already going is in progress.
  for (const std::string& repo : pool::rerun_repositories(snap.assignments, snap.now_ms, policy, snap.live_labels)) {
    try {
      for (const char* status : {"queued", "in_progress"}) {
        for (const github::WorkflowRun& r : ctx.github.workflow_runs(repo, status)) {
          snap.runs.push_back({repo, r.id, r.run_attempt});
        }
      }
    } catch (const std::exception& e) {
      errors.push_back({"listing the workflow runs of " + repo + " (its re-runs not served this pass)", e.what()});
    }
  }
  for (const auto& [repo, run_id] : pool::runs_to_inspect(snap.assignments, snap.runs, snap.now_ms, policy, snap.live_labels)) {
    try {
      std::vector<pool::RunJob>& jobs = snap.jobs[{repo, run_id}];
      for (const github::WorkflowJob& j : ctx.github.run_jobs(repo, run_id)) jobs.push_back({j.run_attempt, j.status, j.labels});
    } catch (const std::exception& e) {
      snap.jobs.erase({repo, run_id});
      errors.push_back({"listing the jobs of run " + std::to_string(run_id) + " of " + repo, e.what()});
    }
  }

  for (pool::RerunAction& a : pool::plan_reruns(snap, policy)) {
    RerunResult r{a, {}};
    if (dry_run || ctx.cancelled.load()) {
      results.push_back(std::move(r));
      continue;
    }
    const pool::RunAssignment& was = a.assignment;
    try {
      if (a.kind == pool::RerunActionKind::kForget) {
        bool removed = ctx.runs->remove(was.label, was.ended_ms);
        r.outcome = removed ? ActionOutcome{ActionOutcome::kDone, ""} : ActionOutcome{ActionOutcome::kSkipped, "changed since read"};
      } else if (!ctx.runs->move_attempt(was.label, was.attempt, a.attempt, 0)) {
        r.outcome = {ActionOutcome::kSkipped, "another refresh serves it"};
      } else {
        spdlog::info("refresh: {}", describe(a));
        ProvisionReport p;
        try {
          p = provision(ctx, rerun_provision(a, ctx.now_ms()));
        } catch (const std::exception& e) {
          p.error = e.what();
        }
        if (p.ok) {
          r.outcome = {ActionOutcome::kDone, std::to_string(p.instances.size()) + " running (" + std::to_string(p.warm()) +
                                                 " warm)"};
        } else {
          // Back to the attempt before, ended: the next pass tries again.
          ctx.runs->move_attempt(was.label, a.attempt, was.attempt, ctx.now_ms());
          r.outcome = {ActionOutcome::kFailed, p.error};
        }
      }
    } catch (const std::exception& e) {
      r.outcome = {ActionOutcome::kFailed, e.what()};
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace runpool::controller
