#include "controller/release.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>

#include "common/json.h"
#include "controller/label.h"
#include "controller/metrics_events.h"
#include "controller/rerun.h"
#include "controller/spot_rerun.h"

namespace runpool::controller {

ReleaseResult release_label(Context& ctx, const std::string& label, std::optional<Duration> wait) {
  DrainOptions options;
  // Not waiting: one look at the records just written (a drain a previous release started may be
  // done already, and is finished then), nothing terminated: the rest is the agents' and then the
  // next provision's or refresh's.
  options.wait = wait.value_or(Duration{0});
  options.terminate_stragglers = wait.has_value();
  options.stop_on_cancel = true;

  DrainOutcome total;
  std::vector<std::string> spot_jobs;
  std::set<std::string> seen;
  bool failed = false;
  // The label index is eventually consistent: look again after a pass, until it shows nothing new.
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<pool::InstanceRecord> todo;
    try {
      for (auto& r : ctx.table.by_label(label)) {
        if (r.pool == ctx.settings.pool && seen.insert(r.instance_id).second) todo.push_back(std::move(r));
      }
    } catch (const std::exception& e) {
      total.errors.push_back(std::string("reading the label index: ") + e.what());
      failed = true;
      break;
    }
    if (todo.empty()) break;
    spdlog::info("release {}: {} instance(s)", label, todo.size());
    for (auto& line : note_spot_runs(ctx, todo)) spot_jobs.push_back(std::move(line));  // while they have the label
    DrainOutcome d;
    try {
      d = drain_to_pool(ctx, todo, [&] { return ctx.github.remove_token(); }, options);
    } catch (const std::exception& e) {
      total.errors.push_back(e.what());
      failed = true;
      break;
    }
    using Part = std::vector<std::string> DrainOutcome::*;
    for (Part part : {&DrainOutcome::returned, &DrainOutcome::terminated, &DrainOutcome::retired, &DrainOutcome::left,
                      &DrainOutcome::gone, &DrainOutcome::errors}) {
      (total.*part).insert((total.*part).end(), (d.*part).begin(), (d.*part).end());
    }
    total.runners.insert(d.runners.begin(), d.runners.end());
    total.retired_reasons.insert(d.retired_reasons.begin(), d.retired_reasons.end());
    if (ctx.cancelled.load()) break;
  }
  failed = failed || !total.errors.empty() || (wait && !total.left.empty());
  return {std::move(total), failed, std::move(spot_jobs)};
}

int run_release(Context& ctx, const ReleaseOptions& o) {
  if (std::string problem = label_problem(o.label); !problem.empty()) throw UsageError("--label: " + problem);
  const auto start = ctx.clock.steady_now();
  // The workflow run is done with the label: from now on a re-run of its jobs is refresh's to serve.
  end_run(ctx, o.label);
  std::optional<Duration> wait;
  if (o.wait) wait = o.timeout.value_or(ctx.settings.release_timeout);
  auto [total, failed, spot_jobs] = release_label(ctx, o.label, wait);
  const auto elapsed = std::chrono::duration_cast<Duration>(ctx.clock.steady_now() - start).count();
  ctx.metrics.emit(release_event(ctx.settings, ctx.now_ms(), o.label, total, failed, elapsed));
  if (o.json) {
    Json::Value v = release_json(o.label, total, o.wait);
    v["ok"] = !failed;
    v["spot_jobs"] = Json::Value(Json::arrayValue);
    for (const auto& line : spot_jobs) v["spot_jobs"].append(line);
    ctx.out << write_json(v) << "\n";
  } else {
    ctx.out << release_text(o.label, total, o.wait);
    for (const auto& line : spot_jobs) ctx.out << "  spot: " << line << "\n";
  }
  if (!o.actions.summary.empty()) {
    try {
      std::string summary = release_summary(o.label, total, o.wait, failed);
      for (const auto& line : spot_jobs) summary += "- spot interruption: " + markdown_code(line) + "\n";
      append_to_file(o.actions.summary, summary);
    } catch (const std::exception& e) {
      spdlog::error("could not write the step summary: {}", e.what());
    }
  }
  return failed ? kExitFailed : kExitOk;
}

namespace {

// Where an instance still draining goes from here.
const char* still_draining_note(bool waited) {
  return waited ? "refresh finishes or terminates them"
                : "their agents finish the drains; the next provision of their class or refresh returns them to the "
                  "pool";
}

}  // namespace

std::string release_text(const std::string& label, const DrainOutcome& d, bool waited) {
  size_t n = d.returned.size() + d.terminated.size() + d.retired.size() + d.left.size() + d.gone.size();
  if (n == 0 && d.errors.empty()) return fmt::format("release {}: nothing assigned to this label\n", label);
  std::string out = fmt::format("release {}: {} returned to the pool, {} terminated (not drained in time), {} already "
                                "gone, {} still draining{}\n",
                                label, d.returned.size(), d.terminated.size(), d.gone.size(), d.left.size(),
                                d.left.empty() ? "" : std::string(" (") + still_draining_note(waited) + ")");
  auto list = [&](const char* what, const std::vector<std::string>& ids) {
    if (!ids.empty()) out += fmt::format("  {}: {}\n", what, fmt::join(ids, " "));
  };
  list("returned", d.returned);
  list("terminated", d.terminated);
  for (const auto& id : d.retired) {
    auto why = d.retired_reasons.find(id);
    out += fmt::format("  retired ({}): {}\n", why == d.retired_reasons.end() ? "outdated" : why->second, id);
  }
  list("gone", d.gone);
  list("still draining", d.left);
  for (const auto& [id, r] : d.runners) {
    if (r.fate != pool::RunnerFate::kDeregisteredByAgent) out += fmt::format("  runner of {}: {}\n", id, r.detail);
  }
  for (const auto& e : d.errors) out += "  error: " + e + "\n";
  return out;
}

Json::Value release_json(const std::string& label, const DrainOutcome& d, bool waited) {
  Json::Value v(Json::objectValue);
  v["label"] = label;
  v["waited"] = waited;  // false: `draining` is the expected end, the agents finish them
  auto arr = [](const std::vector<std::string>& ids) {
    Json::Value a(Json::arrayValue);
    for (const auto& id : ids) a.append(id);
    return a;
  };
  v["returned"] = arr(d.returned);
  v["terminated"] = arr(d.terminated);
  v["retired"] = arr(d.retired);
  // instance → why it was terminated rather than returned: outdated, reuse-never or reuse-no-scope.
  Json::Value reasons(Json::objectValue);
  for (const auto& id : d.retired) {
    auto why = d.retired_reasons.find(id);
    reasons[id] = why == d.retired_reasons.end() ? "outdated" : why->second;
  }
  v["retired_reasons"] = reasons;
  v["gone"] = arr(d.gone);
  v["draining"] = arr(d.left);
  v["errors"] = arr(d.errors);
  // instance → {fate, detail}: whether its runner was deregistered by its agent, deleted by
  // runpoolctl, already gone, or left registered.
  Json::Value runners(Json::objectValue);
  for (const auto& [id, r] : d.runners) {
    Json::Value j(Json::objectValue);
    j["fate"] = std::string(pool::runner_fate_name(r.fate));
    j["detail"] = r.detail;
    runners[id] = j;
  }
  v["runners"] = runners;
  return v;
}

std::string release_summary(const std::string& label, const DrainOutcome& d, bool waited, bool failed) {
  std::string out = "### runpool release `" + markdown_cell(label) + "`\n\n";
  if (failed) out += "**Failed.**\n\n";
  out += fmt::format("{} returned to the pool, {} still draining, {} terminated, {} retired, {} already gone.\n\n",
                     d.returned.size(), d.left.size(), d.terminated.size(), d.retired.size(), d.gone.size());
  if (!d.left.empty()) {
    out += std::string("Still draining (") + still_draining_note(waited) + "):\n\n";
    for (const auto& id : d.left) out += "- " + markdown_cell(id) + "\n";
    out += "\n";
  }
  for (const auto& e : d.errors) out += "- error: " + markdown_code(e) + "\n";
  if (!d.errors.empty()) out += "\n";
  return out;
}

}  // namespace runpool::controller
