#include "controller/retire.h"

#include <spdlog/spdlog.h>

#include "common/pool/keep_failed.h"
#include "common/pool/record_update.h"
#include "common/pool/transitions.h"

namespace runpool::controller {

namespace {

// keep_failed: whether `r` (as read now) is kept instead of terminated; keeps it if it should be.
bool kept(Context& ctx, const pool::InstanceRecord& r, RetireCause cause, const std::string& why) {
  const int64_t keep_ms = ctx.settings.keep_failed.count();
  switch (pool::keep_verdict(r, ctx.now_ms(), keep_ms, cause == RetireCause::kUnregistered)) {
    case pool::KeepVerdict::kNotKept:
    case pool::KeepVerdict::kKeepOver: return false;
    case pool::KeepVerdict::kKept: return true;
    case pool::KeepVerdict::kKeep: break;
  }
  pool::Step step = pool::keep_for_inspection(r, ctx.now_ms(), keep_ms);
  if (!ctx.table.transition(r.instance_id, step.expect, step.change)) return false;  // it moved: judged afresh
  pool::InstanceRecord now = r;
  pool::apply(now, step.change);
  // `why` may name the instance already ("instance i-…: its agent failed to register: …").
  std::string reason = why;
  if (const std::string named = "instance " + r.instance_id + ": "; reason.rfind(named, 0) == 0) {
    reason = reason.substr(named.size());
  }
  spdlog::warn("instance {}: {}, not terminated: {}", r.instance_id, pool::kept_description(now), reason);
  return true;
}

}  // namespace

RetireOutcome retire(Context& ctx, const std::vector<pool::InstanceRecord>& records, const std::string& why,
                     RetireCause cause) {
  RetireOutcome out;
  std::vector<pool::InstanceRecord> terminating;
  for (const auto& original : records) {
    std::optional<pool::InstanceRecord> r = original;
    // What the record says now decides a keep: the caller's copy may predate the agent's report.
    if (ctx.settings.keep_failed.count() > 0 || original.kept_until_ms != 0) {
      try {
        r = ctx.table.get(original.instance_id);
        if (r && r->generation == original.generation && kept(ctx, *r, cause, why)) {
          out.kept.push_back(original.instance_id);
          continue;
        }
      } catch (const std::exception& e) {
        spdlog::error("instance {}: keep_failed: could not read or keep its record ({}); terminating it as usual",
                      original.instance_id, e.what());
        r = original;
      }
      if (!r) r = original;
    }
    bool done = false;
    for (int attempt = 0; attempt < 4 && r && !done; ++attempt) {
      // Someone else finished it, returned it to the pool, or it moved on to a new assignment.
      if (r->generation != original.generation || r->state == pool::State::kTerminated ||
          r->state == pool::State::kIdle) {
        break;
      }
      if (r->state == pool::State::kTerminating) {
        terminating.push_back(*r);
        done = true;
        break;
      }
      pool::Step step = pool::begin_terminate(*r, ctx.now_ms(), ctx.settings.timeouts);
      try {
        if (ctx.table.transition(r->instance_id, step.expect, step.change)) {
          pool::apply(*r, step.change);
          terminating.push_back(*r);
          done = true;
          break;
        }
        r = ctx.table.get(r->instance_id);
      } catch (const std::exception& e) {
        spdlog::error("instance {}: could not mark it terminating: {}", original.instance_id, e.what());
        break;
      }
    }
    if (!done) out.skipped.push_back(original.instance_id);
  }
  if (terminating.empty()) return out;

  std::vector<std::string> ids;
  for (const auto& r : terminating) ids.push_back(r.instance_id);
  try {
    ctx.compute.terminate(ids);
  } catch (const std::exception& e) {
    spdlog::error("TerminateInstances failed ({}); refresh retries: {}", why, e.what());
    for (const auto& id : ids) out.pending.push_back(id);
    return out;
  }
  for (const auto& r : terminating) {
    pool::Step step = pool::close_record(r, ctx.now_ms(), ctx.settings.timeouts);
    try {
      if (!ctx.table.transition(r.instance_id, step.expect, step.change)) {
        spdlog::warn("instance {}: terminated, but its record had moved on; refresh closes it", r.instance_id);
      }
    } catch (const std::exception& e) {
      spdlog::warn("instance {}: terminated, but closing its record failed ({}); refresh closes it", r.instance_id,
                   e.what());
    }
    spdlog::info("instance {} terminated ({})", r.instance_id, why);
    out.terminated.push_back(r.instance_id);
  }
  return out;
}

}  // namespace runpool::controller
