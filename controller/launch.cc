#include "controller/launch.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <stdexcept>

#include "common/aws/aws_error.h"
#include "common/pool/runner_name.h"
#include "common/pool/transitions.h"

namespace runpool::controller {
namespace {

// Writes the record of a fresh instance. An existing record is ours when it carries our label and
// generation 1 (a replayed fleet answer); anything else means the instance is not ours to use.
bool write_record(Context& ctx, const LaunchOrder& order, const LaunchedInstance& li, const std::optional<Secret>& jit,
                  pool::InstanceRecord* out) {
  pool::InstanceRecord r = pool::launched_record(li.instance_id, ctx.settings.pool, order.label, order.resource_class,
                                                 li.usage, li.instance_type, order.reg_token, order.reg_url,
                                                 ctx.now_ms(), ctx.settings.timeouts);
  r.shared = order.shared;
  r.os = ctx.settings.os;
  r.ami_id = launch_image(ctx.settings, order.resource_class);
  r.job_privileges = pool::job_privileges_name(ctx.settings.reuse_policy_for(order.resource_class).job_privileges);
  if (jit) r.jit_config = *jit;
  pool::give_seal_keys(r, pool::make_seal_keys());
  if (ctx.table.create(r)) {
    *out = r;
    return true;
  }
  auto existing = ctx.table.get(li.instance_id);
  if (existing && existing->label == order.label && existing->generation == 1 &&
      existing->state == pool::State::kCreated) {
    *out = *existing;
    return true;
  }
  return false;
}

}  // namespace

// The agent's wake-up queue (common/pool/wake_queue.h). Without it the agent still works, reading
// its record every assignment_poll_interval: a failure is only logged. Shared runners are never
// claimed, so they go without.
void make_wake_queue(Context& ctx, const std::string& instance_id) {
  try {
    ctx.queue.create_wake_queue(instance_id);
  } catch (const std::exception& e) {
    spdlog::warn("instance {}: no wake-up queue ({}); its agent polls its record instead", instance_id, e.what());
  }
}

void launch_instances(Context& ctx, const LaunchOrder& order, LaunchOutcome& out) {
  std::set<std::string> known = order.known;
  int need = order.count;
  for (pool::UsageClass usage : launch_usages(order.usage, order.on_demand_fallback)) {
    for (int round = 1; round <= ctx.settings.fleet_rounds && need > 0; ++round) {
      if (ctx.cancelled.load() || ctx.clock.steady_now() >= order.deadline) return;
      std::string token = fleet_client_token(ctx.settings.pool, order.token_seed.empty() ? order.label : order.token_seed,
                                             usage, round, need);
      aws::CreateFleetRequest request =
          fleet_request(ctx.settings, order.resource_class, order.types, usage, need, order.label, token);
      aws::CreateFleetResult result;
      ++out.fleet_calls;
      try {
        result = ctx.compute.create_fleet(request);
      } catch (const aws::AwsError& e) {
        if (!is_capacity_error(e.code())) throw;
        spdlog::warn("no {} capacity for {} ({}): {}", pool::usage_class_name(usage), order.resource_class, e.code(),
                     e.message());
        out.problems.push_back(std::string(pool::usage_class_name(usage)) + ": " + e.code());
        break;
      }
      for (const auto& err : result.errors) {
        spdlog::warn("fleet: {} {} {}: {} {}", err.lifecycle, err.instance_type, err.subnet_id, err.code, err.message);
        out.problems.push_back(std::string(pool::usage_class_name(usage)) + " " + err.instance_type + ": " + err.code);
      }
      size_t launched = 0;
      std::vector<std::string> surplus, unrecorded;
      std::vector<LaunchedInstance> fresh;
      for (const LaunchedInstance& li : fleet_instances(result, usage)) {
        if (!known.insert(li.instance_id).second) continue;  // seen already
        if (static_cast<int>(fresh.size()) == need) {
          surplus.push_back(li.instance_id);
        } else {
          fresh.push_back(li);
        }
      }
      // A scale set's runners: every fresh instance's configuration, made side by side.
      std::vector<MintedJit> jits(fresh.size());
      if (order.jit_configs && !fresh.empty()) {
        std::vector<std::string> names;
        for (const LaunchedInstance& li : fresh) names.push_back(pool::runner_name(ctx.settings.pool, li.instance_id, 1));
        try {
          jits = order.jit_configs(names);
          if (jits.size() != fresh.size()) throw std::logic_error("one runner configuration per name expected");
        } catch (const std::exception& e) {  // none made: these instances are terminated below
          jits.assign(fresh.size(), MintedJit{std::nullopt, e.what()});
        }
      }
      for (size_t i = 0; i < fresh.size(); ++i) {
        const LaunchedInstance& li = fresh[i];
        if (order.jit_configs && !jits[i].config) {
          spdlog::error("instance {}: no runner configuration: {}", li.instance_id, jits[i].error);
          unrecorded.push_back(li.instance_id);
          continue;
        }
        pool::InstanceRecord record;
        bool ok = false;
        try {
          ok = write_record(ctx, order, li, jits[i].config, &record);
        } catch (const std::exception& e) {
          spdlog::error("instance {}: its record could not be written: {}", li.instance_id, e.what());
        }
        if (!ok) {
          unrecorded.push_back(li.instance_id);
          continue;
        }
        spdlog::info("launched {} ({}, {})", li.instance_id, li.instance_type, pool::usage_class_name(li.usage));
        out.records.push_back(record);
        if (!order.shared) make_wake_queue(ctx, li.instance_id);
        --need;
        ++launched;
      }
      // Instances without a record of ours must not run: terminate them now (refresh would find
      // them by their tags otherwise).
      std::vector<std::string> drop = surplus;
      drop.insert(drop.end(), unrecorded.begin(), unrecorded.end());
      if (!drop.empty()) {
        try {
          ctx.compute.terminate(drop);
          spdlog::warn("terminated {} instance(s) this provision cannot use", drop.size());
        } catch (const std::exception& e) {
          spdlog::error("could not terminate unrecorded instances ({}); refresh will: {}", e.what(), drop.size());
        }
      }
      if (!retry_same_usage(launched, need)) break;
    }
    if (need == 0) break;
  }
}

}  // namespace runpool::controller
