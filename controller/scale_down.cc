// runpoolctl scale-down, the imperative shell around pool::plan_scale_down: scan the table, then
// list GitHub's runners once per owner (after the scan, so every runner registered before it is
// listed), look up marked orphans by runner id, take each class's quota from the schedule, plan,
// and carry the plan out decision by decision. One failure never stops the others.
#include "controller/scale_down.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/json.h"
#include "common/log.h"
#include "common/pool/record_update.h"
#include "common/pool/scale_down_plan.h"
#include "common/pool/transitions.h"
#include "controller/drain.h"
#include "controller/metrics_events.h"
#include "controller/pass_report.h"

namespace runpool::controller {
namespace {

using pool::ScaleDownDecision;
using pool::ScaleDownKind;

// TerminateInstances takes up to 1000 ids; stay well inside it.
constexpr size_t kTerminateBatch = 200;

pool::RunnerView runner_view(const github::Runner& r) { return {r.id, r.name, r.busy, r.online()}; }

using Outcome = ActionOutcome;

struct DecisionResult {
  ScaleDownDecision decision;
  Outcome outcome;
};

// What this pass asked of GitHub, reported with the result (the budget docs/design.md states): HTTP
// requests actually sent, each retry and redirect hop included, as the GitHub caller counts them.
struct GithubCalls {
  int lists = 0, gets = 0, remove_tokens = 0, deletes = 0, total = 0;
};

GithubCalls github_calls(Runners& github) {
  auto n = [&](const char* operation) { return static_cast<int>(github.requests_sent(operation)); };
  return {n("ListRunners"), n("GetRunner"), n("CreateRemoveToken"), n("DeleteRunner"), n("")};
}

class ScaleDown {
 public:
  ScaleDown(Context& ctx, const ScaleDownOptions& o) : ctx_(ctx), s_(ctx.settings), o_(o) {}

  int run() {
    calls_before_ = github_calls(ctx_.github);
    pool::ScaleDownSnapshot snap;
    snap.pool = s_.pool;
    if (!scan(snap)) return finish({});
    list_owners(snap);
    look_up_orphans(snap);
    snap.now_ms = ctx_.now_ms();
    set_quotas(snap);

    pool::ScaleDownPlan plan = pool::plan_scale_down(snap, s_.scale_down);
    report_.notes.insert(report_.notes.end(), plan.notes.begin(), plan.notes.end());
    std::vector<DecisionResult> results;
    for (auto& d : plan.decisions) results.push_back({std::move(d), {}});
    fail_lookups(results, snap);
    if (!o_.dry_run) execute(results);
    return finish(results);
  }

 private:
  void error(const std::string& what, const std::string& message) {
    spdlog::error("scale-down: {}: {}", what, message);
    report_.errors.push_back({what, message});
  }

  // ---- the snapshot

  bool scan(pool::ScaleDownSnapshot& snap) {
    try {
      pool::ScanStats stats = ctx_.table.scan([&](const pool::InstanceRecord& r) { snap.records.push_back(r); });
      if (stats.skipped) spdlog::warn("scale-down: {} table items skipped (foreign or corrupted)", stats.skipped);
      return true;
    } catch (const std::exception& e) {
      error("scanning the table (nothing done)", e.what());
      return false;
    }
  }

  // One paginated list per owner. This controller's credentials speak for github_owner only: the
  // instances of any other owner (registered by a controller configured differently) are kept.
  void list_owners(pool::ScaleDownSnapshot& snap) {
    std::string mine;
    for (const auto& owner : pool::owners_to_list(snap.records, s_.pool)) {
      snap.runners[owner] = std::nullopt;
      try {
        if (mine.empty()) mine = pool::owner_scope(ctx_.github.registration_url());
        if (owner != mine) {
          report_.notes.push_back("owner " + owner + " is not github_owner (" + mine + "): its instances are kept");
          continue;
        }
        std::vector<pool::RunnerView> runners;
        for (const auto& r : ctx_.github.list()) runners.push_back(runner_view(r));
        snap.runners[owner] = std::move(runners);
      } catch (const std::exception& e) {
        error("listing the runners of " + owner + " (its instances are kept this pass)", e.what());
      }
    }
  }

  pool::RunnerLookup look_up(int64_t runner_id) {
    pool::RunnerLookup l;
    try {
      if (auto r = ctx_.github.get(runner_id)) {
        l.result = pool::RunnerLookup::Result::kFound;
        l.runner = runner_view(*r);
      } else {
        l.result = pool::RunnerLookup::Result::kNotFound;
      }
    } catch (const std::exception& e) {
      l.result = pool::RunnerLookup::Result::kFailed;
      l.error = e.what();
    }
    return l;
  }

  void look_up_orphans(pool::ScaleDownSnapshot& snap) {
    for (int64_t id : pool::orphan_lookups(snap.records, s_.pool)) snap.lookups[id] = look_up(id);
  }

  // An orphan whose runner could not be looked up is kept as it is (never terminated on a failed
  // lookup), and the pass fails: one warning with the reason, counted in `failed`, exit 1.
  void fail_lookups(std::vector<DecisionResult>& results, const pool::ScaleDownSnapshot& snap) const {
    for (auto& r : results) {
      const pool::ScaleDownDecision& d = r.decision;
      if (d.kind != ScaleDownKind::kKeep || d.rule != "orphan.lookup-failed") continue;
      // The reason names the lookup's error; the JSON's detail carries it apart too.
      auto l = snap.lookups.find(d.runner_id);
      const std::string why = l == snap.lookups.end() || l->second.error.empty() ? "not looked up" : l->second.error;
      r.outcome = {Outcome::kFailed, "runner lookup failed: " + why + "; kept as it is, retried next pass"};
      spdlog::warn("scale-down: {} — failed", pool::describe(d));
    }
  }

  void set_quotas(pool::ScaleDownSnapshot& snap) {
    std::vector<std::string> classes;
    for (const auto& c : s_.resource_classes) classes.push_back(c.name);
    for (const auto& r : snap.records) {
      if (r.pool == s_.pool && !r.resource_class.empty()) classes.push_back(r.resource_class);
    }
    for (const auto& c : classes) {
      if (snap.quotas.count(c)) continue;
      if (o_.idle) {
        snap.quotas[c] = {*o_.idle, pool::Eviction::kOldestFirst, "--idle " + std::to_string(*o_.idle)};
      } else if (s_.scale_down_schedule.empty()) {
        // No schedule is no decision to shrink the pool: removing every idle instance would be the
        // surprise. idle_ttl (refresh) still retires each one; --idle or a schedule sets a quota.
        snap.quotas[c] = {pool::IdleQuota::kKeepAll, pool::Eviction::kOldestFirst,
                          "no scale_down_schedule: every idle instance is kept until idle_ttl"};
      } else {
        snap.quotas[c] = schedule::quota_at(s_.scale_down_schedule, c, snap.now_ms);
      }
    }
    for (const auto& [c, q] : snap.quotas) {
      if (q.idle == pool::IdleQuota::kKeepAll) {
        spdlog::info("scale-down: class {}: keep every idle instance ({})", c, q.source);
        continue;  // no quota to report as a metric
      }
      quotas_[c] = q.idle;
      spdlog::info("scale-down: class {}: keep {} idle, {} ({})", c, q.idle, pool::eviction_name(q.eviction), q.source);
    }
  }

  // ---- carrying the plan out

  bool write(const std::string& id, const pool::Step& step) { return ctx_.table.transition(id, step.expect, step.change); }

  void execute(std::vector<DecisionResult>& results) {
    for (auto& r : results) {
      if (r.outcome.kind == Outcome::kFailed) continue;  // failed before it could be carried out, logged
      if (ctx_.cancelled.load()) {
        if (r.decision.kind != ScaleDownKind::kKeep) r.outcome = {Outcome::kFailed, "cancelled before it was carried out"};
        continue;
      }
      try {
        r.outcome = carry_out(r);
      } catch (const std::exception& e) {
        r.outcome = {Outcome::kFailed, e.what()};
      }
      if (r.decision.kind != ScaleDownKind::kKeep || r.outcome.kind == Outcome::kKept) log_result(r);
    }
    wait_for_drains(results);
    terminate_batch(results);
  }

  Outcome carry_out(DecisionResult& r) {
    const ScaleDownDecision& d = r.decision;
    const int64_t now = ctx_.now_ms();
    const Outcome changed{Outcome::kSkipped, "the record changed since it was read"};
    switch (d.kind) {
      case ScaleDownKind::kKeep: return {Outcome::kPlanned, ""};
      case ScaleDownKind::kMarkOrphan:
        return write(d.record.instance_id, pool::mark_orphan(d.record, now)) ? Outcome{Outcome::kDone, ""} : changed;
      case ScaleDownKind::kUnmarkOrphan:
        return write(d.record.instance_id, pool::unmark_orphan(d.record)) ? Outcome{Outcome::kDone, ""} : changed;
      case ScaleDownKind::kTerminate:
      case ScaleDownKind::kRetire: return begin_terminate(d.record, &r);
      case ScaleDownKind::kDrain: return drain(r);
    }
    return {Outcome::kFailed, "unknown decision"};
  }

  // The conditional write to terminating; the TerminateInstances calls go out in batches at the end.
  Outcome begin_terminate(const pool::InstanceRecord& record, DecisionResult* r) {
    if (!write(record.instance_id, pool::begin_terminate(record, ctx_.now_ms(), s_.timeouts))) {
      return {Outcome::kSkipped, "the record changed since it was read"};
    }
    to_terminate_.push_back(r);
    return {Outcome::kDone, ""};
  }

  // A shared runner over the quota: re-read its busy flag on GitHub right before, then hand its
  // agent the drain with a write that fails if the agent reports busy.
  Outcome drain(DecisionResult& r) {
    r.decision = pool::recheck_before_drain(r.decision, look_up(r.decision.runner_id));
    if (r.decision.kind == ScaleDownKind::kKeep) return {Outcome::kKept, r.decision.reason};
    if (!remove_token_) {
      remove_token_ = ctx_.github.remove_token();  // one per pass; a failure fails this drain (and is retried)
    }
    const pool::InstanceRecord& rec = r.decision.record;
    if (!write(rec.instance_id, pool::drain_idle_shared(rec, *remove_token_, ctx_.now_ms(), s_.timeouts))) {
      return {Outcome::kSkipped, "the record changed, or its agent reports busy"};
    }
    make_unmatchable(ctx_, rec, r.decision.runner_id);  // matched by its name in the plan
    // A shared instance has no wake-up queue (launch makes none for it): its agent polls its record.
    if (!rec.shared) wake_agents(ctx_.queue, {rec.instance_id});
    draining_.push_back(&r);
    return {Outcome::kLeft, "draining"};
  }

  // Terminates each drained instance — after its agent deregistered the runner, which `drained`
  // says — and leaves the rest draining for a later pass.
  void wait_for_drains(std::vector<DecisionResult>&) {
    if (draining_.empty()) return;
    const auto until = ctx_.clock.steady_now() + s_.scale_down_drain_wait;
    spdlog::info("scale-down: waiting up to {} for {} drain(s)", format_duration(s_.scale_down_drain_wait),
                 draining_.size());
    while (!draining_.empty() && !ctx_.cancelled.load()) {
      // One batch read of every draining record per pass; a failed read settles nothing this pass.
      std::vector<std::string> ids;
      for (const DecisionResult* r : draining_) ids.push_back(r->decision.record.instance_id);
      std::map<std::string, pool::InstanceRecord> now;
      bool read = false;
      try {
        now = ctx_.table.get_many(ids);
        read = true;
      } catch (const std::exception& e) {
        spdlog::warn("scale-down: reading {} draining record(s): {}", ids.size(), e.what());
      }
      if (read) {
        std::erase_if(draining_, [&](DecisionResult* r) {
          auto found = now.find(r->decision.record.instance_id);
          return drain_settled(*r, found == now.end() ? nullptr : &found->second);
        });
      }
      if (draining_.empty() || ctx_.clock.steady_now() >= until) break;
      ctx_.clock.sleep_for(s_.poll_interval);
    }
    for (DecisionResult* r : draining_) {
      r->outcome = {Outcome::kLeft, "not drained within scale_down_drain_wait: finished by a later pass"};
      log_result(*r);
    }
  }

  // `now`: the record as just read (null: no item).
  bool drain_settled(DecisionResult& r, const pool::InstanceRecord* now) {
    if (!now || now->state != pool::State::kDraining || now->generation != r.decision.record.generation) {
      r.outcome = {Outcome::kSkipped, "the record moved on while draining"};
      log_result(r);
      return true;
    }
    const bool drained = pool::agent_reported(*now, pool::AgentSignal::kDrained);
    const bool failed = pool::agent_reported(*now, pool::AgentSignal::kFailed);
    if (!drained && !failed) {
      if (pool::wants_remove_token(*now)) {
        try {
          hand_fresh_remove_token(ctx_, *now, [&] {
            ++calls_.remove_tokens;
            return ctx_.github.remove_token();
          });
        } catch (const std::exception& e) {
          spdlog::warn("scale-down: a fresh remove token for {}: {}", now->instance_id, e.what());
        }
      }
      return false;
    }
    // Terminated only with its runner gone from GitHub: deregistered by the agent, else deleted
    // here; when neither, the instance stays draining for a later pass (or refresh).
    pool::RunnerFateDecision fate =
        settle_runner(ctx_, *now, failed || pool::runner_left_registered(*now), false, [&] { ++calls_.deletes; });
    if (!fate.proceed) {
      r.outcome = {Outcome::kLeft, fate.detail, std::string(pool::runner_fate_name(fate.fate))};
      log_result(r);
      return true;
    }
    r.outcome = begin_terminate(*now, &r);
    if (r.outcome.kind == Outcome::kDone) {
      r.outcome.detail = fate.fate == pool::RunnerFate::kDeregisteredByAgent && !failed
                             ? "drained and deregistered"
                             : (failed ? "its agent failed while draining; " : "drained; ") + fate.detail;
      r.outcome.runner_fate = std::string(pool::runner_fate_name(fate.fate));
    }
    log_result(r);
    return true;
  }

  void terminate_batch(std::vector<DecisionResult>&) {
    for (size_t i = 0; i < to_terminate_.size(); i += kTerminateBatch) {
      std::vector<DecisionResult*> batch(to_terminate_.begin() + i,
                                 to_terminate_.begin() + std::min(to_terminate_.size(), i + kTerminateBatch));
      std::vector<std::string> ids;
      for (DecisionResult* r : batch) ids.push_back(r->decision.record.instance_id);
      try {
        ctx_.compute.terminate(ids);
      } catch (const TerminateError& e) {
        // The others were terminated: only the instances EC2 refused failed.
        for (DecisionResult* r : batch) {
          auto why = e.not_terminated().find(r->decision.record.instance_id);
          if (why == e.not_terminated().end()) {
            delete_runner_of_orphan(*r);
            continue;
          }
          r->outcome = {Outcome::kFailed, "not terminated (refresh retries): " + why->second};
          log_result(*r);
        }
        continue;
      } catch (const std::exception& e) {
        for (DecisionResult* r : batch) {
          r->outcome = {Outcome::kFailed, std::string("TerminateInstances (refresh retries): ") + e.what()};
          log_result(*r);
        }
        continue;
      }
      for (DecisionResult* r : batch) delete_runner_of_orphan(*r);
    }
  }

  // An orphan GitHub lists as offline and busy is a ghost of a runner that died mid-job: its
  // instance is gone now, so remove the runner too.
  void delete_runner_of_orphan(DecisionResult& r) {
    if (r.decision.rule != "orphan.offline-busy" || r.decision.runner_id == 0) return;
    try {
      switch (ctx_.github.remove(r.decision.runner_id)) {
        case github::DeleteOutcome::kDeleted:
        case github::DeleteOutcome::kAlreadyGone: break;
        case github::DeleteOutcome::kBusy: r.outcome.detail = "runner still listed busy: refresh's ghost sweep removes it";
      }
    } catch (const std::exception& e) {
      r.outcome.detail = std::string("runner not deleted (refresh's ghost sweep will): ") + e.what();
    }
  }

  void log_result(const DecisionResult& r) {
    const std::string line = pool::describe(r.decision);
    switch (r.outcome.kind) {
      case Outcome::kFailed: spdlog::error("scale-down: {} — failed: {}", line, r.outcome.detail); break;
      case Outcome::kKept: spdlog::warn("scale-down: {} — kept: {}", line, r.outcome.detail); break;
      default:
        spdlog::info("scale-down: {}{}", line,
                     r.outcome.detail.empty() ? std::string() : " — " + std::string(outcome_name(r.outcome.kind)) +
                                                                    ": " + r.outcome.detail);
    }
  }

  // ---- the report

  int finish(const std::vector<DecisionResult>& results) {
    report_.failed = static_cast<int>(report_.errors.size());
    for (const auto& r : results) {
      if (r.outcome.kind == Outcome::kFailed) ++report_.failed;
      ++report_.summary[std::string(pool::scale_down_kind_name(r.decision.kind))];
    }
    const GithubCalls now = github_calls(ctx_.github);
    calls_ = {now.lists - calls_before_.lists, now.gets - calls_before_.gets,
              now.remove_tokens - calls_before_.remove_tokens, now.deletes - calls_before_.deletes,
              now.total - calls_before_.total};
    emit_metrics(results, report_.failed);
    if (o_.json) {
      print_json(results);
    } else {
      print_text(results);
    }
    return report_.failed ? kExitFailed : kExitOk;
  }

  void emit_metrics(const std::vector<DecisionResult>& results, int failed) {
    ScaleDownDone d;
    d.failed = failed;
    d.idle_quota = quotas_;
    for (const auto& r : results) {
      const bool done = r.outcome.kind == Outcome::kDone;
      switch (r.decision.kind) {
        case ScaleDownKind::kMarkOrphan: d.orphans_marked += done; break;
        case ScaleDownKind::kUnmarkOrphan: d.orphans_unmarked += done; break;
        case ScaleDownKind::kRetire: d.retired += done; break;
        case ScaleDownKind::kTerminate: (r.decision.phase == 1 ? d.orphans_terminated : d.drained_terminated) += done; break;
        case ScaleDownKind::kDrain:
          if (done || r.outcome.kind == Outcome::kLeft) ++d.drains_started;
          d.drained_terminated += done;
          break;
        case ScaleDownKind::kKeep: break;
      }
    }
    for (const auto& e : scale_down_events(s_, ctx_.now_ms(), d, o_.dry_run)) ctx_.metrics.emit(e);
  }

  void print_json(const std::vector<DecisionResult>& results) {
    Json::Value doc(Json::objectValue);
    doc["pool"] = s_.pool;
    doc["dry_run"] = o_.dry_run;
    doc["decisions"] = Json::Value(Json::arrayValue);
    for (const auto& r : results) {
      const ScaleDownDecision& d = r.decision;
      Json::Value j(Json::objectValue);
      j["instance_id"] = d.record.instance_id;
      j["decision"] = std::string(pool::scale_down_kind_name(d.kind));
      j["phase"] = d.phase;
      j["rule"] = d.rule;
      j["reason"] = d.reason;
      j["state"] = std::string(pool::state_name(d.record.state));
      j["resource_class"] = d.record.resource_class;
      j["shared"] = d.record.shared;
      if (!d.owner.empty()) j["owner"] = d.owner;
      if (d.runner_id) j["runner_id"] = Json::Int64(d.runner_id);
      j["outcome"] = outcome_name(r.outcome.kind);
      if (!r.outcome.detail.empty()) j["detail"] = r.outcome.detail;
      if (!r.outcome.runner_fate.empty()) j["runner_fate"] = r.outcome.runner_fate;
      doc["decisions"].append(j);
    }
    Json::Value calls(Json::objectValue);
    calls["list_runners"] = calls_.lists;
    calls["get_runner"] = calls_.gets;
    calls["remove_token"] = calls_.remove_tokens;
    calls["delete_runner"] = calls_.deletes;
    calls["total"] = calls_.total;
    doc["github_calls"] = calls;
    report_.add_to_json(doc);
    ctx_.out << write_json(doc) << "\n";
  }

  void print_text(const std::vector<DecisionResult>& results) {
    for (const auto& r : results) {
      std::string line = pool::describe(r.decision);
      if (o_.dry_run || r.outcome.kind == Outcome::kPlanned || r.outcome.kind == Outcome::kDone) {
        ctx_.out << (o_.dry_run && r.decision.kind != ScaleDownKind::kKeep ? "would " : "") << line << "\n";
      } else {
        ctx_.out << outcome_name(r.outcome.kind) << ": " << line << " (" << r.outcome.detail << ")\n";
      }
    }
    report_.print_text_tail(ctx_.out, "scale-down", s_.pool, o_.dry_run, "no instances",
                            fmt::format("; GitHub requests: {} list, {} get, {} remove-token, {} delete, {} in all",
                                        calls_.lists, calls_.gets, calls_.remove_tokens, calls_.deletes, calls_.total));
  }

  Context& ctx_;
  const Settings& s_;
  ScaleDownOptions o_;
  std::optional<Secret> remove_token_;
  std::vector<DecisionResult*> draining_;      // drains started this pass, waiting for `drained`
  std::vector<DecisionResult*> to_terminate_;  // written terminating, TerminateInstances still to go
  GithubCalls calls_before_, calls_;  // the caller's counts when the pass began; this pass's
  std::map<std::string, int> quotas_;  // the idle quota applied, by class
  PassReport report_;
};

}  // namespace

int run_scale_down(Context& ctx, const ScaleDownOptions& options) { return ScaleDown(ctx, options).run(); }

int run_bypass_removal(Context& ctx, const std::vector<std::string>& instance_ids, bool on, bool json) {
  // Ids from the command line: anything but "i-" and letters or digits is refused before any
  // lookup (and never echoed raw).
  for (const auto& id : instance_ids) {
    bool ok = id.size() > 2 && id.size() <= 64 && id.rfind("i-", 0) == 0 &&
              std::all_of(id.begin() + 2, id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
    if (!ok) throw UsageError("bypass-removal: '" + printable(id, 40) + "' is not an instance id (i-…)");
  }
  int failed = 0;
  Json::Value doc(Json::arrayValue);
  for (const auto& id : instance_ids) {
    std::string outcome;
    try {
      auto r = ctx.table.get(id);
      if (!r) {
        outcome = "no record";
      } else {
        pool::Step step = pool::set_bypass_removal(*r, on);
        outcome = ctx.table.transition(id, step.expect, step.change) ? (on ? "marked" : "cleared") : "no record";
      }
    } catch (const std::exception& e) {
      outcome = std::string("failed: ") + e.what();
    }
    if (outcome != "marked" && outcome != "cleared") ++failed;
    if (json) {
      Json::Value j(Json::objectValue);
      j["instance_id"] = id;
      j["bypass_removal"] = on;
      j["outcome"] = outcome;
      doc.append(j);
    } else {
      ctx.out << id << ": bypass-removal " << (on ? "on" : "off") << ": " << outcome << "\n";
    }
  }
  if (json) ctx.out << write_json(doc) << "\n";
  return failed ? kExitFailed : kExitOk;
}

}  // namespace runpool::controller
