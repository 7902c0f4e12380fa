#include "controller/status.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/json.h"
#include "common/log.h"
#include "common/pool/keep_failed.h"
#include "common/pool/scale_set_upkeep.h"
#include "common/pool/transitions.h"  // agent_reported
#include "controller/serve.h"         // serve_lease_name

namespace runpool::controller {

std::string short_age(int64_t ms) {
  if (ms < 0) return "-" + short_age(-ms);
  int64_t s = ms / 1000;
  if (s < 60) return std::to_string(s) + "s";
  int64_t m = s / 60;
  if (m < 60) return std::to_string(m) + "m" + (s % 60 ? std::to_string(s % 60) + "s" : "");
  int64_t h = m / 60;
  if (h < 24) return std::to_string(h) + "h" + (m % 60 ? std::to_string(m % 60) + "m" : "");
  return std::to_string(h / 24) + "d" + (h % 24 ? std::to_string(h % 24) + "h" : "");
}

StatusView collect_status(Context& ctx, const StatusOptions& o, pool::LeaseStore* leases) {
  StatusView v;
  v.now_ms = ctx.now_ms();
  pool::ScanStats stats = ctx.table.scan([&](const pool::InstanceRecord& r) {
    if (r.pool != ctx.settings.pool) return;
    if (r.state == pool::State::kTerminated && !o.all) return;
    v.records.push_back(r);
  });
  v.skipped = stats.skipped;
  std::stable_sort(v.records.begin(), v.records.end(), [](const auto& a, const auto& b) {
    if (a.state != b.state) return static_cast<int>(a.state) < static_cast<int>(b.state);
    return a.created_ms < b.created_ms;
  });
  // The pool's scale sets: those whose lease was ever written (serve's, never deleted) and the
  // configured one.
  std::map<std::string, ScaleSetView> sets;
  const std::string prefix = serve_lease_prefix(ctx.settings.pool);
  std::string lease_error;
  if (leases) {
    try {
      for (pool::Lease& l : leases->list(prefix)) {
        const std::string name = l.name.substr(prefix.size());
        ScaleSetView& set = sets[name];
        set.lease = std::move(l);
        set.runners = pool::scale_set_runners(v.records, ctx.settings.pool, name, {}, v.now_ms);
      }
    } catch (const std::exception& e) {
      lease_error = e.what();
    }
  }
  const std::string configured = ctx.settings.scale_set();
  if (!sets.count(configured)) {
    ScaleSetView set;
    set.error = lease_error;
    set.runners = pool::scale_set_runners(v.records, ctx.settings.pool, configured, {}, v.now_ms);
    if (!set.runners.empty() || !set.error.empty()) sets[configured] = std::move(set);
  }
  for (auto& [name, set] : sets) {
    set.name = name;
    v.scale_sets.push_back(std::move(set));
  }
  for (const auto& rc : ctx.settings.resource_classes) {
    ClassDepth c;
    c.resource_class = rc.name;
    c.queue = ctx.settings.queue_name(rc.name);
    c.idle_records = static_cast<int>(std::count_if(v.records.begin(), v.records.end(), [&](const auto& r) {
      return r.state == pool::State::kIdle && r.resource_class == rc.name;
    }));
    try {
      c.depth = ctx.queue.depth(rc.name);
    } catch (const std::exception& e) {
      c.error = e.what();
    }
    v.classes.push_back(std::move(c));
  }
  return v;
}

int run_status(Context& ctx, const StatusOptions& o, pool::LeaseStore* leases) {
  StatusView v = collect_status(ctx, o, leases);
  if (o.json) {
    ctx.out << write_json(status_json(v)) << "\n";
  } else {
    ctx.out << status_text(v);
  }
  return kExitOk;
}

std::string status_text(const StatusView& v) {
  std::string out;
  if (v.records.empty()) {
    out += "no instances\n";
  } else {
    out += fmt::format("{:<20} {:<11} {:<28} {:<8} {:<12} {:>7} {:>9} {:<4} {:>8}\n", "INSTANCE", "STATE", "LABEL",
                       "CLASS", "TYPE", "AGE", "HEARTBEAT", "BUSY", "DEADLINE");
    for (const auto& r : v.records) {
      out += fmt::format("{:<20} {:<11} {:<28} {:<8} {:<12} {:>7} {:>9} {:<4} {:>8}\n", r.instance_id,
                         // Values from the table, shown printable and short: a corrupted or hostile item
                         // must not drive the terminal or flood it.
                         pool::state_name(r.state), r.label.empty() ? "-" : printable(r.label, 100),
                         printable(r.resource_class, 40), printable(r.instance_type, 40),
                         short_age(v.now_ms - r.created_ms),
                         r.heartbeat_ms ? short_age(v.now_ms - r.heartbeat_ms) : "-", r.busy ? "yes" : "no",
                         r.deadline_ms ? short_age(r.deadline_ms - v.now_ms) : "-");
      // The operator's pre-run script is news only when it did not succeed (docs/agent.md).
      if (r.pre_run == pool::PreRun::kFailed || r.pre_run == pool::PreRun::kTimeout) {
        out += fmt::format("{:<20} pre-run {}: {}\n", "", pool::pre_run_name(r.pre_run),
                           r.pre_run_detail.empty() ? "-" : printable(r.pre_run_detail, 200));
      }
      // A job lost to a spot interruption, and what was decided for it (common/pool/spot_rerun.h).
      if (!r.spot_job.empty()) {
        out += fmt::format("{:<20} spot: job {} in hand at the interruption{}; re-run: {}\n", "", printable(r.spot_job, 100),
                           r.spot_job_result.empty() ? "" : " (ended " + printable(r.spot_job_result, 40) + ")",
                           r.spot_rerun.empty() ? "not decided yet" : printable(r.spot_rerun, 200));
      }
      // A failed agent's reason (a runner version GitHub refuses, …) and a pending retirement.
      if (pool::agent_reported(r, pool::AgentSignal::kFailed)) {
        out += fmt::format("{:<20} agent failed: {}\n", "", r.signal_detail.empty() ? "-" : printable(r.signal_detail, 200));
      }
      if (r.kept_until_ms != 0) out += fmt::format("{:<20} {}\n", "", pool::kept_description(r));
      if (r.retire_pending) out += fmt::format("{:<20} retired at its release (runpoolctl retire)\n", "");
      // same-scope reuse: only a claim of this scope takes it.
      if (!r.reuse_scope_key.empty()) out += fmt::format("{:<20} kept for {}\n", "", printable(r.reuse_scope_key, 200));
    }
  }
  out += "\nPOOL\n";
  for (const auto& c : v.classes) {
    if (c.depth) {
      out += fmt::format("  {:<12} {:>3} message(s) visible, {} in flight; {} idle record(s)  ({})\n",
                         c.resource_class, c.depth->visible, c.depth->in_flight, c.idle_records, c.queue);
    } else {
      out += fmt::format("  {:<12} depth unknown: {}\n", c.resource_class, c.error);
    }
  }
  for (const ScaleSetView& set : v.scale_sets) {
    std::map<pool::RunnerPhase, int> n;
    for (const auto& r : set.runners) ++n[r.phase];
    std::string who;
    if (!set.error.empty()) {
      who = "its lease could not be read: " + printable(set.error, 200);
    } else if (!set.lease) {
      who = "never served";
    } else if (set.lease->expires_ms > v.now_ms) {
      who = fmt::format("served by {} (lease generation {}, {} left)", printable(set.lease->holder, 100),
                        set.lease->generation, short_age(set.lease->expires_ms - v.now_ms));
    } else {
      who = fmt::format("not served: the lease of {} ended {} ago", printable(set.lease->holder, 100),
                        short_age(v.now_ms - set.lease->expires_ms));
    }
    out += fmt::format("\nSCALE SET {}\n  {} busy, {} armed, {} starting, {} cleaning; {}\n", printable(set.name, 100),
                       n[pool::RunnerPhase::kBusy], n[pool::RunnerPhase::kArmed], n[pool::RunnerPhase::kStarting],
                       n[pool::RunnerPhase::kEnding], who);
  }
  if (v.skipped) out += fmt::format("({} foreign or corrupted item(s) skipped)\n", v.skipped);
  return out;
}

Json::Value status_json(const StatusView& v) {
  Json::Value root(Json::objectValue);
  root["now_ms"] = static_cast<Json::Int64>(v.now_ms);
  root["instances"] = Json::Value(Json::arrayValue);
  for (const auto& r : v.records) {
    Json::Value j(Json::objectValue);
    j["instance_id"] = r.instance_id;
    j["state"] = std::string(pool::state_name(r.state));
    j["label"] = r.label;
    j["generation"] = static_cast<Json::Int64>(r.generation);
    j["resource_class"] = r.resource_class;
    j["usage_class"] = std::string(pool::usage_class_name(r.usage_class));
    j["instance_type"] = r.instance_type;
    j["age_ms"] = static_cast<Json::Int64>(v.now_ms - r.created_ms);
    if (r.heartbeat_ms) j["heartbeat_age_ms"] = static_cast<Json::Int64>(v.now_ms - r.heartbeat_ms);
    j["busy"] = r.busy;
    if (r.deadline_ms) j["deadline_ms"] = static_cast<Json::Int64>(r.deadline_ms);
    if (r.signal != pool::AgentSignal::kNone) {
      j["signal"] = std::string(pool::agent_signal_name(r.signal));
      j["signal_generation"] = static_cast<Json::Int64>(r.signal_generation);
      // An agent's detail is a line of its own words; a record's may be anything up to DynamoDB's
      // 400 KB: bounded, as every echo of outside input is.
      if (!r.signal_detail.empty() && r.signal_detail != "-") j["signal_detail"] = printable(r.signal_detail, 800);
    }
    // What the instance runs (runpoolctl retire compares these), "" when not reported.
    j["ami_id"] = r.ami_id;
    j["runner_version"] = r.runner_version;
    j["agent_version"] = r.agent_version;
    j["retire_pending"] = r.retire_pending;
    if (r.kept_until_ms != 0) j["kept_until_ms"] = static_cast<Json::Int64>(r.kept_until_ms);
    if (!r.reuse_scope_key.empty()) j["reuse_scope_key"] = printable(r.reuse_scope_key, 200);
    if (r.pre_run != pool::PreRun::kNone) {
      j["pre_run"] = std::string(pool::pre_run_name(r.pre_run));
      j["pre_run_detail"] = printable(r.pre_run_detail, 800);
    }
    if (!r.spot_job.empty()) {
      j["spot_job"] = printable(r.spot_job, 200);
      j["spot_job_result"] = printable(r.spot_job_result, 40);
      j["spot_run"] = printable(r.spot_run, 240);
      j["spot_rerun"] = printable(r.spot_rerun, 240);
    }
    root["instances"].append(j);
  }
  root["pool"] = Json::Value(Json::arrayValue);
  for (const auto& c : v.classes) {
    Json::Value j(Json::objectValue);
    j["resource_class"] = c.resource_class;
    j["queue"] = c.queue;
    j["idle_records"] = c.idle_records;
    if (c.depth) {
      j["visible"] = static_cast<Json::Int64>(c.depth->visible);
      j["in_flight"] = static_cast<Json::Int64>(c.depth->in_flight);
    } else {
      j["error"] = c.error;
    }
    root["pool"].append(j);
  }
  root["scale_sets"] = Json::Value(Json::arrayValue);
  for (const ScaleSetView& set : v.scale_sets) {
    std::map<pool::RunnerPhase, int> n;
    for (const auto& r : set.runners) ++n[r.phase];
    Json::Value j(Json::objectValue);
    j["name"] = printable(set.name, 100);
    j["starting"] = n[pool::RunnerPhase::kStarting];
    j["armed"] = n[pool::RunnerPhase::kArmed];
    j["busy"] = n[pool::RunnerPhase::kBusy];
    j["cleaning"] = n[pool::RunnerPhase::kEnding];
    if (set.lease) {
      j["holder"] = printable(set.lease->holder, 100);
      j["lease_generation"] = static_cast<Json::Int64>(set.lease->generation);
      j["lease_expires_ms"] = static_cast<Json::Int64>(set.lease->expires_ms);
      j["served"] = set.lease->expires_ms > v.now_ms;
    } else {
      j["served"] = false;
    }
    if (!set.error.empty()) j["error"] = printable(set.error, 200);
    root["scale_sets"].append(j);
  }
  root["skipped"] = static_cast<Json::Int64>(v.skipped);
  return root;
}

}  // namespace runpool::controller
