#include "controller/warm_up.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "common/json.h"
#include "common/pool/scale_down_plan.h"
#include "common/schedule/idle_schedule.h"
#include "controller/label.h"
#include "controller/provision.h"
#include "controller/release.h"

namespace runpool::controller {
namespace {

struct Warmed {
  std::string resource_class;
  pool::IdleQuota quota;
  int shortfall = 0;
  std::string label;
  int running = 0;   // provisioned and running before the release
  int returned = 0;  // back in the pool, idle
  std::string problem;
};

}  // namespace

std::string warm_up_prefix(const std::string& pool) { return pool + "-warm-"; }

int run_warm_up(Context& ctx, const ScaleUpOptions& o, const std::vector<const ResourceClass*>& classes) {
  const Settings& s = ctx.settings;
  std::vector<pool::InstanceRecord> records;
  ctx.table.scan([&](const pool::InstanceRecord& r) { records.push_back(r); });
  // A warm-up that died between its provision and its release left its runners running under its
  // label: they are released now (whoever warmed them, entering the pool is what they are for).
  std::set<std::string> leftover;
  for (const auto& r : records) {
    if (r.pool == s.pool && r.state == pool::State::kRunning && r.label.rfind(warm_up_prefix(s.pool), 0) == 0) {
      leftover.insert(r.label);
    }
  }
  for (const auto& label : leftover) {
    spdlog::info("releasing {}, left running by an earlier warm-up", label);
    ReleaseResult r = release_label(ctx, label, s.release_timeout);
    if (r.failed) spdlog::warn("releasing {} did not finish; refresh settles what is left", label);
  }
  if (!leftover.empty()) {
    records.clear();
    ctx.table.scan([&](const pool::InstanceRecord& r) { records.push_back(r); });
  }
  const int64_t now = ctx.now_ms();
  std::vector<Warmed> results;
  for (const ResourceClass* rc : classes) {
    Warmed w;
    w.resource_class = rc->name;
    w.quota = o.to ? pool::IdleQuota{*o.to, pool::Eviction::kOldestFirst, "--to " + std::to_string(*o.to)}
                   : schedule::quota_at(s.scale_down_schedule, rc->name, now);
    w.shortfall = std::min(s.max_count, pool::warm_up_shortfall(records, s.pool, rc->name, w.quota, warm_up_prefix(s.pool)));
    if (w.shortfall > 0 && s.reuse_policy_for(rc->name).reuse != pool::Reuse::kAlways) {
      w.problem = "not warmed: its reuse is not always, so a released instance that served no run is terminated";
      w.shortfall = 0;
    }
    results.push_back(std::move(w));
  }

  bool ok = true;
  for (auto& w : results) {
    if (w.problem.empty() && w.shortfall == 0) continue;
    if (!w.problem.empty()) {
      spdlog::warn("scale-up {}: {}", w.resource_class, w.problem);
      continue;
    }
    if (ctx.cancelled.load()) break;
    w.label = warm_up_prefix(s.pool) + random_hex16();
    spdlog::info("scale-up {}: quota {} ({}), warming {} under {}", w.resource_class, w.quota.idle, w.quota.source,
                 w.shortfall, w.label);
    ProvisionOptions po;
    po.count = w.shortfall;
    po.min_count = 1;  // what registers is warmed; the rest is let go
    po.resource_class = w.resource_class;
    po.label = w.label;
    po.timeout = o.timeout;
    po.claim_warm = false;
    po.getenv = [](const char*) -> const char* { return nullptr; };
    po.random = random_hex16;
    ProvisionReport p;
    try {
      p = provision(ctx, po);
    } catch (const std::exception& e) {
      p.error = e.what();
    }
    w.running = p.ok ? static_cast<int>(p.instances.size()) : 0;
    if (!p.ok) w.problem = p.error;
    else if (w.running < w.shortfall) w.problem = fmt::format("{} of {} registered", w.running, w.shortfall);
    // Released whatever happened: a failed provision has cleaned up already, and then this finds nothing.
    ReleaseResult r = release_label(ctx, w.label, s.release_timeout);
    w.returned = static_cast<int>(r.outcome.returned.size());
    if (r.failed || w.returned < w.running) {
      std::string why = fmt::format("{} of {} returned to the pool", w.returned, w.running);
      for (const auto& e : r.outcome.errors) why += "; " + e;
      w.problem += (w.problem.empty() ? "" : "; ") + why;
    }
    if (!w.problem.empty()) ok = false;
    spdlog::info("scale-up {}: {} warmed into the pool", w.resource_class, w.returned);
  }

  if (o.json) {
    Json::Value doc(Json::objectValue);
    doc["pool"] = s.pool;
    doc["mode"] = "warm-up";
    doc["classes"] = Json::Value(Json::arrayValue);
    for (const auto& w : results) {
      Json::Value j(Json::objectValue);
      j["resource_class"] = w.resource_class;
      j["quota"] = w.quota.idle;
      j["quota_source"] = w.quota.source;
      j["shortfall"] = w.shortfall;
      j["label"] = w.label;
      j["returned"] = w.returned;
      if (!w.problem.empty()) j["problem"] = w.problem;
      doc["classes"].append(j);
    }
    doc["ok"] = ok;
    ctx.out << write_json(doc) << "\n";
  } else {
    for (const auto& w : results) {
      ctx.out << fmt::format("{}: quota {} ({}), {} short, {} warmed into the pool{}\n", w.resource_class, w.quota.idle,
                             w.quota.source, w.shortfall, w.returned, w.problem.empty() ? "" : "; " + w.problem);
    }
  }
  return ok ? kExitOk : kExitFailed;
}

}  // namespace runpool::controller
