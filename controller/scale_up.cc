// scale-up's shell: one scan, each class's shortfall (pool::scale_up_shortfall), one registration
// token for the whole run, the launches (controller/launch.h, records marked shared), then the wait
// for `registered` and the created → running write — which refresh also makes should this
// process be gone before the agents register.
#include "controller/scale_up.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/json.h"
#include "common/pool/scale_down_plan.h"
#include "common/pool/transitions.h"
#include "controller/await_agents.h"
#include "controller/label.h"
#include "controller/launch.h"
#include "controller/warm_up.h"
#include "controller/launch_plan.h"

namespace runpool::controller {
namespace {

struct ClassResult {
  std::string resource_class;
  pool::IdleQuota quota;
  int shortfall = 0;
  std::vector<pool::InstanceRecord> launched;
  std::vector<std::string> problems;
};

// Waits until each launched record is running (marking it so once its agent registered); returns
// the instances that will not get there in time, each with why (a failed agent, an instance gone
// from EC2, the deadline).
std::vector<std::pair<std::string, std::string>> wait_running(Context& ctx,
                                                              const std::vector<pool::InstanceRecord>& launched,
                                                              Duration timeout) {
  std::vector<AwaitItem> items;
  for (const auto& r : launched) items.push_back(AwaitItem{r, false});
  AwaitOptions o;
  o.awaited = pool::Awaited::kRegistered;
  o.deadline = ctx.clock.steady_now() + timeout;
  std::vector<std::pair<std::string, std::string>> failed;
  AwaitResult res = await_agents(ctx, std::move(items), o,
                                 [&](const pool::HandshakeFacts& f, const pool::HandshakeDecision& d) {
    const std::string& id = f.written->instance_id;
    const pool::InstanceRecord* r = f.current;
    switch (d.verdict) {
      case pool::Verdict::kDone:
        return AwaitAction::kResolve;
      case pool::Verdict::kWrite: {
        pool::Step step = pool::mark_running(*r, ctx.now_ms(), ctx.settings.timeouts);
        if (ctx.table.transition(id, step.expect, step.change)) {
          spdlog::info("instance {} registered as a shared runner ({})", id, r->label);
        }
        return AwaitAction::kKeep;  // the next look confirms running
      }
      case pool::Verdict::kWait:
        return AwaitAction::kKeep;
      case pool::Verdict::kMovedOn:
        return AwaitAction::kResolve;  // not ours to wait for
      case pool::Verdict::kGone:
        if (!r) return AwaitAction::kResolve;  // its record closed by another runpoolctl
        [[fallthrough]];
      case pool::Verdict::kFail:
        spdlog::warn("{}: it will not register (refresh settles it)", pool::handshake_problem(id, d));
        failed.emplace_back(id, d.reason);
        return AwaitAction::kResolve;
    }
    return AwaitAction::kKeep;
  });
  for (const auto& i : res.pending) {
    failed.emplace_back(i.written.instance_id, ctx.cancelled.load() ? "cancelled" : "not registered in time");
  }
  return failed;
}

}  // namespace

int run_scale_up(Context& ctx, const ScaleUpOptions& o) {
  const Settings& s = ctx.settings;
  if (o.to && (*o.to < 0 || *o.to > s.max_count)) {
    throw UsageError(fmt::format("--to must be between 0 and {} (max_count)", s.max_count));
  }
  std::vector<const ResourceClass*> classes;
  if (!o.resource_class.empty()) {
    const ResourceClass* rc = s.find_class(o.resource_class);
    if (!rc) throw UsageError("--resource-class: '" + o.resource_class + "' is not one of resource_classes");
    classes.push_back(rc);
  } else {
    for (const auto& rc : s.resource_classes) classes.push_back(&rc);
  }
  if (!s.shared) {
    if (!o.wait) throw UsageError("--no-wait: a run-scoped pool's warm-up waits for its instances to enter the pool");
    return run_warm_up(ctx, o, classes);
  }

  std::vector<pool::InstanceRecord> records;
  ctx.table.scan([&](const pool::InstanceRecord& r) { records.push_back(r); });
  const int64_t now = ctx.now_ms();
  std::vector<ClassResult> results;
  int total = 0;
  for (const ResourceClass* rc : classes) {
    ClassResult c;
    c.resource_class = rc->name;
    c.quota = o.to ? pool::IdleQuota{*o.to, pool::Eviction::kOldestFirst, "--to " + std::to_string(*o.to)}
                   : schedule::quota_at(s.scale_down_schedule, rc->name, now);
    c.shortfall = std::min(s.max_count, pool::scale_up_shortfall(records, s.pool, rc->name, c.quota));
    total += c.shortfall;
    results.push_back(std::move(c));
  }

  bool ok = true;
  std::vector<pool::InstanceRecord> launched;
  if (total > 0) {
    Secret token = ctx.github.registration_token();
    std::string url = ctx.github.registration_url();
    const auto deadline = ctx.clock.steady_now() + o.timeout.value_or(s.provision_timeout);
    for (auto& c : results) {
      if (c.shortfall == 0) continue;
      const ResourceClass& rc = *s.find_class(c.resource_class);
      LaunchOrder order;
      order.resource_class = rc.name;
      order.types = launch_types(rc, s.allowed_instance_types);
      order.usage = s.usage_class;
      order.on_demand_fallback = s.on_demand_fallback;
      order.count = c.shortfall;
      order.label = s.shared_label_list(rc.name);
      order.shared = true;
      order.token_seed = order.label + "-" + random_hex16();
      order.reg_token = token;
      order.reg_url = url;
      order.deadline = deadline;
      LaunchOutcome out;
      try {
        launch_instances(ctx, order, out);
      } catch (const std::exception& e) {
        c.problems.push_back(e.what());
      }
      c.launched = out.records;
      c.problems.insert(c.problems.end(), out.problems.begin(), out.problems.end());
      if (static_cast<int>(c.launched.size()) < c.shortfall) ok = false;
      launched.insert(launched.end(), c.launched.begin(), c.launched.end());
      spdlog::info("scale-up {}: quota {} ({}), launched {} of {}", rc.name, c.quota.idle, c.quota.source,
                   c.launched.size(), c.shortfall);
    }
  }
  std::vector<std::pair<std::string, std::string>> unregistered;
  if (o.wait && !launched.empty()) {
    unregistered = wait_running(ctx, launched, o.timeout.value_or(s.provision_timeout));
    if (!unregistered.empty()) ok = false;
  }

  if (o.json) {
    Json::Value doc(Json::objectValue);
    doc["pool"] = s.pool;
    doc["classes"] = Json::Value(Json::arrayValue);
    for (const auto& c : results) {
      Json::Value j(Json::objectValue);
      j["resource_class"] = c.resource_class;
      j["quota"] = c.quota.idle;
      j["quota_source"] = c.quota.source;
      j["shortfall"] = c.shortfall;
      j["labels"] = s.shared_label_list(c.resource_class);
      j["launched"] = Json::Value(Json::arrayValue);
      for (const auto& r : c.launched) j["launched"].append(r.instance_id);
      j["problems"] = Json::Value(Json::arrayValue);
      for (const auto& p : c.problems) j["problems"].append(p);
      doc["classes"].append(j);
    }
    doc["unregistered"] = Json::Value(Json::arrayValue);
    doc["unregistered_reasons"] = Json::Value(Json::objectValue);
    for (const auto& [id, why] : unregistered) {
      doc["unregistered"].append(id);
      doc["unregistered_reasons"][id] = why;
    }
    doc["ok"] = ok;
    ctx.out << write_json(doc) << "\n";
  } else {
    for (const auto& c : results) {
      ctx.out << c.resource_class << ": quota " << c.quota.idle << " (" << c.quota.source << "), launched "
              << c.launched.size() << " of " << c.shortfall << " short";
      for (const auto& p : c.problems) ctx.out << "; " << p;
      ctx.out << "\n";
    }
    for (const auto& [id, why] : unregistered) ctx.out << "not registered: " << id << ": " << why << " (refresh settles it)\n";
  }
  return ok ? kExitOk : kExitFailed;
}

}  // namespace runpool::controller
