// runpoolctl refresh, the imperative shell around pool::plan_refresh: gather one snapshot (GitHub's
// runners, then EC2, then the table, then the pool queues — the order refresh_plan.h explains; a
// pass between full listings asks for the runners its records name after the scan instead,
// controller/runner_listing.h),
// plan, and carry the plan out. No failure of one action stops the others; each is reported and
// the next pass retries it, and the exit code is 1 if anything failed.
#include "controller/refresh.h"

#include <algorithm>
#include <map>
#include <set>

#include <spdlog/spdlog.h>

#include "common/json.h"
#include "common/pool/keep_failed.h"
#include "common/pool/pool_message.h"
#include "common/pool/record_update.h"
#include "common/pool/refresh_plan.h"
#include "common/pool/wake_queue.h"
#include "controller/drain.h"
#include "controller/metrics_events.h"
#include "controller/pass_report.h"
#include "controller/rerun.h"
#include "controller/runner_listing.h"
#include "controller/spot_rerun.h"

namespace runpool::controller {
namespace {

using pool::Action;
using pool::ActionKind;

// A sweep takes at most this many receives (10 messages each) beyond what the depth suggests.
constexpr int kSweepSpareRounds = 3;
constexpr int kSweepMaxRounds = 50;
// Each receive long-polls briefly: a zero wait samples only some SQS servers and could end the
// sweep early on a queue that still holds messages.
constexpr Duration kSweepWait{std::chrono::seconds(1)};
// How long swept messages stay hidden from provisions if this process died before releasing them.
constexpr Duration kSweepVisibility{std::chrono::seconds(30)};

pool::RefreshPolicy policy_of(const Settings& s) {
  pool::RefreshPolicy p;
  p.timeouts = s.timeouts;
  p.launch_grace_ms = s.orphan_grace.count();
  p.advertise_grace_ms = s.advertise_grace.count();
  p.agent_silence_ms = s.agent_silence.count();
  p.keep_failed_ms = s.keep_failed.count();
  for (const ResourceClass& rc : s.resource_classes) {
    if (int64_t age = s.max_instance_age_ms(rc.name); age > 0) p.max_instance_age_ms[rc.name] = age;
  }
  return p;
}

pool::Ec2Instance ec2_view(const aws::Instance& i) {
  pool::Ec2Instance v;
  v.instance_id = i.instance_id;
  v.state = i.state.name;
  v.launch_ms = i.launch_time ? to_epoch_ms(*i.launch_time) : 0;
  v.pool_tag = i.tag(kTagPool).value_or("");
  v.table_tag = i.tag(kTagTable).value_or("");
  return v;
}

using Outcome = ActionOutcome;

struct ActionResult {
  Action action;
  Outcome outcome;
};

class Refresh {
 public:
  Refresh(Context& ctx, const RefreshOptions& options)
      : ctx_(ctx), s_(ctx.settings), options_(options), policy_(policy_of(ctx.settings)) {}

  int run() {
    pool::RefreshSnapshot snap;
    snap.pool = s_.pool;
    snap.table = s_.table;
    github_before_ = ctx_.github.requests_sent("");
    listing_.before_scan(snap.runners);
    describe_pool(snap);
    if (!scan(snap)) return finish({});
    listing_.after_scan(snap.records, snap.runners);
    confirm_missing(snap);
    sweep_pools(snap);
    snap.now_ms = ctx_.now_ms();

    pool::RefreshPlan plan = pool::plan_refresh(snap, policy_);
    report_.notes = plan.notes;
    std::vector<ActionResult> results;
    // Before the plan closes a record: a job lost to spot is found through the record's label.
    spot_ = spot_reruns(ctx_, snap.records, options_.dry_run, report_.errors);
    if (options_.dry_run) {
      for (auto& a : plan.actions) results.push_back({std::move(a), {}});
      release_swept();  // a dry run hands every swept message back untouched
      sweep_wake_queues(snap);
      reruns_ = serve_reruns(ctx_, snap.records, true, report_.errors);
      return finish(results);
    }
    execute(plan.actions, results);
    sweep_wake_queues(snap);
    // Last: serving a re-run provisions and waits, and must not hold up the pool's own upkeep.
    reruns_ = serve_reruns(ctx_, snap.records, false, report_.errors);
    return finish(results);
  }

 private:
  void error(const std::string& what, const std::string& message) {
    spdlog::error("refresh: {}: {}", what, message);
    report_.errors.push_back({what, message});
  }

  // ---- the snapshot

  void describe_pool(pool::RefreshSnapshot& snap) {
    try {
      std::vector<pool::Ec2Instance> instances;
      for (const auto& i : ctx_.compute.pool_instances()) instances.push_back(ec2_view(i));
      snap.ec2 = std::move(instances);
    } catch (const std::exception& e) {
      error("describing the pool's instances (EC2 reconciliation skipped)", e.what());
    }
  }

  bool scan(pool::RefreshSnapshot& snap) {
    try {
      pool::ScanStats stats = ctx_.table.scan([&](const pool::InstanceRecord& r) { snap.records.push_back(r); });
      if (stats.skipped) spdlog::warn("refresh: {} table items skipped (foreign or corrupted)", stats.skipped);
      return true;
    } catch (const std::exception& e) {
      error("scanning the table (nothing done)", e.what());
      return false;
    }
  }

  // A live record whose instance the tag filter did not return is looked up by id before it is
  // called gone: a missing tag must not make a running instance look terminated.
  void confirm_missing(pool::RefreshSnapshot& snap) {
    if (!snap.ec2) return;
    std::set<std::string> seen;
    for (const auto& i : *snap.ec2) seen.insert(i.instance_id);
    std::vector<std::string> missing;
    for (const auto& r : snap.records) {
      if (r.pool == s_.pool && r.state != pool::State::kTerminated && !seen.count(r.instance_id)) {
        missing.push_back(r.instance_id);
      }
    }
    if (missing.empty()) return;
    try {
      for (const auto& i : ctx_.compute.describe(missing)) snap.ec2->push_back(ec2_view(i));
    } catch (const std::exception& e) {
      error("describing instances of live records (EC2 reconciliation skipped)", e.what());
      snap.ec2.reset();
    }
  }

  void sweep_pools(pool::RefreshSnapshot& snap) {
    std::set<std::string> classes;
    for (const auto& c : s_.resource_classes) classes.insert(c.name);
    for (const auto& r : snap.records) {
      if (r.pool == s_.pool && r.state == pool::State::kIdle) classes.insert(r.resource_class);
    }
    for (const auto& c : classes) {
      try {
        sweep_class(snap, c);
      } catch (const std::exception& e) {
        error("pool " + s_.queue_name(c), e.what());
      }
    }
  }

  void sweep_class(pool::RefreshSnapshot& snap, const std::string& resource_class) {
    std::vector<pool::InstanceRecord> idle = pool::idle_records(snap.records, s_.pool, resource_class);
    QueueDepth depth = ctx_.queue.depth(resource_class);
    const int64_t queued = depth.visible + depth.in_flight;
    depths_.push_back({resource_class, static_cast<int64_t>(idle.size()), queued});
    if (!pool::needs_sweep(queued, static_cast<int64_t>(idle.size()))) return;
    spdlog::info("refresh: pool {} holds ~{} messages for {} idle records; sweeping", s_.queue_name(resource_class),
                 queued, idle.size());

    pool::PoolView view;
    view.pool = s_.pool;
    view.resource_class = resource_class;
    const int64_t rounds = std::min<int64_t>(kSweepMaxRounds, queued / 10 + kSweepSpareRounds);
    for (int64_t i = 0; i < rounds; ++i) {
      std::vector<QueuedMessage> batch = ctx_.queue.receive(resource_class, 10, kSweepWait, kSweepVisibility);
      if (batch.empty()) {
        // Messages another receiver held when the sweep began were not seen: their records are
        // not known to be missing from the pool.
        view.complete = depth.in_flight == 0;
        if (!view.complete) spdlog::info("refresh: {} messages of {} in flight elsewhere; nothing re-advertised",
                                         depth.in_flight, s_.queue_name(resource_class));
        break;
      }
      for (auto& m : batch) {
        swept_.push_back({resource_class, m.receipt});
        view.messages.push_back({m.message_id, m.receipt, m.body});
      }
    }
    // Decide on records read now, after the receive, not on the older scan.
    std::set<std::string> ids;
    for (const auto& r : idle) ids.insert(r.instance_id);
    for (const auto& m : view.messages) {
      if (auto parsed = pool::parse_pool_message(m.body)) ids.insert(parsed->instance_id);
    }
    // One batch read (BatchGetItem, 100 a request): the swept messages stay hidden until the plan's
    // message actions run, so the sweep's own reads are kept short.
    try {
      std::map<std::string, pool::InstanceRecord> got =
          ctx_.table.get_many(std::vector<std::string>(ids.begin(), ids.end()));
      for (const auto& id : ids) {
        auto it = got.find(id);
        view.fresh[id] = it == got.end() ? std::nullopt : std::optional<pool::InstanceRecord>(it->second);
      }
    } catch (const std::exception& e) {
      error("re-reading the records of " + s_.queue_name(resource_class) + " (its pool messages are left alone)",
            e.what());
    }
    snap.pools.push_back(std::move(view));
  }

  void release_swept() {
    for (const auto& [resource_class, receipt] : swept_) {
      try {
        ctx_.queue.make_visible(resource_class, receipt);
      } catch (const std::exception& e) {
        error("releasing a swept message of " + s_.queue_name(resource_class), e.what());
      }
    }
  }

  // ---- carrying the plan out

  bool write(const std::string& id, const pool::Step& step) {
    return ctx_.table.transition(id, step.expect, step.change);
  }

  void execute(std::vector<Action>& actions, std::vector<ActionResult>& results) {
    // One remove token per pass, and only when some drain needs it (fetched at the first).
    std::optional<Secret> remove_token;
    std::string token_error;
    bool token_asked = false;
    std::vector<pool::InstanceRecord> terminated;  // records whose instance was just terminated
    // The plan lists the swept pool messages' actions first (they are hidden from every provision
    // until released or deleted): nothing, not even the remove token, is fetched before them.
    for (auto& a : actions) {
      ActionResult r{std::move(a), {}};
      if (ctx_.cancelled.load()) {
        r.outcome = {Outcome::kFailed, "cancelled before it was carried out"};
        results.push_back(std::move(r));
        continue;
      }
      if (r.action.kind == ActionKind::kDrain && !token_asked) {
        token_asked = true;
        try {
          remove_token = ctx_.github.remove_token();
        } catch (const std::exception& e) {
          token_error = std::string("no remove token: ") + e.what();
        }
      }
      try {
        r.outcome = carry_out(r.action, remove_token, token_error, terminated);
      } catch (const std::exception& e) {
        r.outcome = {Outcome::kFailed, e.what()};
      }
      log_result(r);
      results.push_back(std::move(r));
    }
    if (!ctx_.cancelled.load()) confirm_terminations(terminated, results);
  }

  Outcome carry_out(const Action& a, const std::optional<Secret>& remove_token, const std::string& token_error,
                    std::vector<pool::InstanceRecord>& terminated) {
    const int64_t now = ctx_.now_ms();
    const pool::Timeouts& t = s_.timeouts;
    const Outcome changed{Outcome::kSkipped, "the record changed since it was read"};
    // → terminating, then TerminateInstances; false when the record changed meanwhile.
    auto terminate_record = [&]() {
      pool::Step step = pool::begin_terminate(*a.record, now, t);
      if (!write(a.instance_id, step)) return false;
      pool::InstanceRecord terminating = *a.record;
      pool::apply(terminating, step.change);
      ctx_.compute.terminate({a.instance_id});
      terminated.push_back(terminating);
      return true;
    };
    switch (a.kind) {
      case ActionKind::kDeleteMessage:
        ctx_.queue.remove(a.resource_class, a.message.receipt_handle);
        return {Outcome::kDone, ""};
      case ActionKind::kReleaseMessage:
        ctx_.queue.make_visible(a.resource_class, a.message.receipt_handle);
        return {Outcome::kDone, ""};
      case ActionKind::kTerminate:
        return terminate_record() ? Outcome{Outcome::kDone, ""} : changed;
      case ActionKind::kRetryTerminate:
        ctx_.compute.terminate({a.instance_id});
        terminated.push_back(*a.record);
        return {Outcome::kDone, ""};
      case ActionKind::kTerminateUntracked:
        ctx_.compute.terminate({a.instance_id});
        return {Outcome::kDone, ""};
      case ActionKind::kClose:
        return write(a.instance_id, pool::close_record(*a.record, now, t)) ? Outcome{Outcome::kDone, ""} : changed;
      case ActionKind::kDrain:
        if (!remove_token) return {Outcome::kFailed, token_error};
        return write(a.instance_id, pool::start_drain(*a.record, *remove_token, now, t)) ? Outcome{Outcome::kDone, ""}
                                                                                         : changed;
      case ActionKind::kReturnToPool: {
        // As a provision or release finishes a drain (settle_drained): its runner confirmed gone on
        // GitHub by name, then back to the pool (perhaps kept for its scope) or retired, as its
        // class's reuse policy or an operator's retire mark says.
        SettledDrain settled = settle_drained(ctx_, *a.record, true);
        const std::string fate{pool::runner_fate_name(settled.runner.fate)};
        switch (settled.end) {
          case DrainedEnd::kReturned: return {Outcome::kDone, "", fate};
          case DrainedEnd::kRetired: return {Outcome::kDone, "terminated, not returned: " + settled.retired_why, fate};
          case DrainedEnd::kRunnerLeft: return {Outcome::kKept, settled.runner.detail, fate};
          case DrainedEnd::kMoved: return changed;
        }
        return changed;
      }
      case ActionKind::kAdvertise: {
        // Re-read first: a record claimed since it was read must not be advertised again.
        auto current = ctx_.table.get(a.instance_id);
        if (!current || current->state != pool::State::kIdle || current->generation != a.record->generation) {
          return changed;
        }
        advertise(*current);
        return {Outcome::kDone, ""};
      }
      case ActionKind::kMarkRunning:
        return write(a.instance_id, pool::mark_running(*a.record, now, t)) ? Outcome{Outcome::kDone, ""} : changed;
      case ActionKind::kKeep:
        return write(a.instance_id, pool::keep_for_inspection(*a.record, now, s_.keep_failed.count()))
                   ? Outcome{Outcome::kDone, ""}
                   : changed;
      case ActionKind::kMarkAdvertised:
        return write(a.instance_id, pool::advertised(*a.record)) ? Outcome{Outcome::kDone, ""} : changed;
      case ActionKind::kDeleteRecord: {
        pool::Expect still;
        still.states = {pool::State::kTerminated};
        still.generation = a.record->generation;
        return ctx_.table.remove(a.instance_id, still) ? Outcome{Outcome::kDone, ""} : changed;
      }
      case ActionKind::kDeleteRunner:
        switch (ctx_.github.remove(a.runner_id)) {
          case github::DeleteOutcome::kDeleted: return {Outcome::kDone, ""};
          case github::DeleteOutcome::kAlreadyGone: return {Outcome::kDone, "already gone"};
          case github::DeleteOutcome::kBusy: return {Outcome::kKept, "GitHub says it is running a job"};
        }
        return {Outcome::kFailed, "unexpected delete outcome"};
    }
    return {Outcome::kFailed, "unknown action"};
  }

  // SendMessage, then clear advertise_pending. A failure of the second leaves the flag set and a
  // message in the queue; the next sweep sees the message and clears the flag.
  void advertise(const pool::InstanceRecord& idle) {
    ctx_.queue.advertise(idle.resource_class, {idle.instance_id, idle.generation});
    pool::Step step = pool::advertised(idle);
    if (!write(idle.instance_id, step)) {
      spdlog::info("refresh: {} changed after its pool message was sent; the message is stale", idle.instance_id);
    }
  }

  // Closes the records of instances EC2 already reports shutting-down or terminated; the others
  // are closed by a later pass.
  void confirm_terminations(const std::vector<pool::InstanceRecord>& terminated, std::vector<ActionResult>& results) {
    if (terminated.empty()) return;
    std::vector<std::string> ids;
    for (const auto& r : terminated) ids.push_back(r.instance_id);
    std::map<std::string, std::string> states;
    try {
      for (const auto& i : ctx_.compute.describe(ids)) states[i.instance_id] = i.state.name;
    } catch (const std::exception& e) {
      error("confirming terminations (closed on a later pass)", e.what());
      return;
    }
    for (const auto& r : terminated) {
      auto it = states.find(r.instance_id);
      if (it == states.end() || !aws::instance_gone(it->second)) continue;
      ActionResult res;
      res.action.kind = ActionKind::kClose;
      res.action.rule = "terminate.confirmed";
      res.action.reason = "EC2 reports the instance " + it->second;
      res.action.instance_id = r.instance_id;
      res.action.record = r;
      res.action.resource_class = r.resource_class;
      try {
        bool ok = write(r.instance_id, pool::close_record(r, ctx_.now_ms(), s_.timeouts));
        res.outcome = ok ? Outcome{Outcome::kDone, ""} : Outcome{Outcome::kSkipped, "the record changed"};
      } catch (const std::exception& e) {
        res.outcome = {Outcome::kFailed, e.what()};
      }
      log_result(res);
      results.push_back(std::move(res));
    }
  }

  void log_result(const ActionResult& r) {
    const std::string line = pool::describe(r.action);
    switch (r.outcome.kind) {
      case Outcome::kFailed: spdlog::error("refresh: {} — failed: {}", line, r.outcome.detail); break;
      case Outcome::kKept: spdlog::warn("refresh: {} — kept: {}", line, r.outcome.detail); break;
      default:
        if (r.action.warn) {
          spdlog::warn("refresh: {}", line);
        } else {
          spdlog::info("refresh: {}{}", line, r.outcome.kind == Outcome::kSkipped ? " — skipped: " + r.outcome.detail
                                                                                  : std::string());
        }
    }
  }

  // ---- the agents' wake-up queues

  // Deletes the wake-up queues whose instance has neither a live record nor a live EC2 instance
  // (an instance that just booted has its record already; one refresh retires is caught on the
  // next pass). Without a view of EC2 nothing is deleted.
  void sweep_wake_queues(const pool::RefreshSnapshot& snap) {
    if (!snap.ec2) return;
    std::set<std::string> live;
    for (const auto& r : snap.records) {
      if (r.pool == s_.pool && r.state != pool::State::kTerminated) live.insert(r.instance_id);
    }
    for (const auto& i : *snap.ec2) {
      if (!aws::instance_gone(i.state)) live.insert(i.instance_id);
    }
    std::vector<std::string> stale;
    try {
      stale = pool::stale_wake_queues(s_.pool, ctx_.queue.wake_queue_urls(), live);
    } catch (const std::exception& e) {
      error("listing the agents' wake-up queues", e.what());
      return;
    }
    if (stale.empty()) return;
    if (options_.dry_run) {
      report_.notes.push_back("would delete " + std::to_string(stale.size()) + " wake-up queue(s) of instances that are gone");
      return;
    }
    int deleted = 0;
    for (const auto& url : stale) {
      try {
        ctx_.queue.delete_queue(url);
        ++deleted;
      } catch (const std::exception& e) {
        error("deleting the wake-up queue " + url, e.what());
      }
    }
    report_.notes.push_back("deleted " + std::to_string(deleted) + " wake-up queue(s) of instances that are gone");
  }

  // ---- the report

  int finish(const std::vector<ActionResult>& results) {
    report_.failed = static_cast<int>(report_.errors.size());
    std::map<std::string, int> done, planned;
    for (const auto& r : results) {
      if (r.outcome.kind == Outcome::kFailed) ++report_.failed;
      if (r.outcome.kind == Outcome::kDone) ++done[std::string(pool::action_name(r.action.kind))];
      ++planned[std::string(pool::action_name(r.action.kind))];
    }
    for (const auto& r : reruns_) {
      const std::string name(pool::rerun_action_name(r.action.kind));
      if (r.outcome.kind == Outcome::kFailed) ++report_.failed;
      if (r.outcome.kind == Outcome::kDone) ++done[name];
      ++planned[name];
    }
    count_spot_reruns(spot_, options_.dry_run, done, planned, report_.failed);
    report_.summary = options_.dry_run ? planned : done;
    emit_metrics(results, report_.failed);
    if (options_.json) {
      print_json(results);
    } else {
      print_text(results);
    }
    return report_.failed ? kExitFailed : kExitOk;
  }

  void emit_metrics(const std::vector<ActionResult>& results, int failed) {
    std::vector<RefreshDone> done;
    for (const auto& r : results) {
      if (r.outcome.kind != Outcome::kDone) continue;
      std::optional<pool::State> state;
      if (r.action.record) state = r.action.record->state;
      done.push_back({r.action.kind, r.action.rule, state, r.outcome.detail});
    }
    for (const auto& e : refresh_events(s_, ctx_.now_ms(), done, failed, depths_, options_.dry_run)) {
      ctx_.metrics.emit(e);
    }
  }

  void print_json(const std::vector<ActionResult>& results) {
    Json::Value doc(Json::objectValue);
    doc["pool"] = s_.pool;
    doc["table"] = s_.table;
    doc["dry_run"] = options_.dry_run;
    doc["actions"] = Json::Value(Json::arrayValue);
    for (const auto& r : results) {
      const Action& a = r.action;
      Json::Value j(Json::objectValue);
      j["action"] = std::string(pool::action_name(a.kind));
      j["rule"] = a.rule;
      j["reason"] = a.reason;
      j["outcome"] = outcome_name(r.outcome.kind);
      if (!r.outcome.detail.empty()) j["detail"] = r.outcome.detail;
      if (!a.instance_id.empty()) j["instance_id"] = a.instance_id;
      if (a.record) j["state"] = std::string(pool::state_name(a.record->state));
      if (!a.resource_class.empty()) j["resource_class"] = a.resource_class;
      if (a.runner_id) j["runner_id"] = Json::Int64(a.runner_id);
      if (!a.runner_name.empty()) j["runner_name"] = a.runner_name;
      if (!a.message.message_id.empty()) j["message_id"] = a.message.message_id;
      doc["actions"].append(j);
    }
    doc["reruns"] = Json::Value(Json::arrayValue);
    for (const auto& r : reruns_) {
      const pool::RerunAction& a = r.action;
      Json::Value j(Json::objectValue);
      j["action"] = std::string(pool::rerun_action_name(a.kind));
      j["label"] = a.assignment.label;
      j["repository"] = a.assignment.repository;
      j["run_id"] = Json::Int64(a.assignment.run_id);
      if (a.kind == pool::RerunActionKind::kServe) {
        j["attempt"] = Json::Int64(a.attempt);
        j["count"] = a.count;
      }
      j["reason"] = a.reason;
      j["outcome"] = outcome_name(r.outcome.kind);
      if (!r.outcome.detail.empty()) j["detail"] = r.outcome.detail;
      doc["reruns"].append(j);
    }
    doc["spot_reruns"] = spot_reruns_json(spot_);
    doc["runner_listing"] = listing_.mode();
    doc["runner_listing_why"] = listing_.why();
    doc["runners_looked_up"] = listing_.looked_up();
    doc["github_requests"] = Json::Int64(ctx_.github.requests_sent("") - github_before_);
    report_.add_to_json(doc);
    ctx_.out << write_json(doc) << "\n";
  }

  void print_text(const std::vector<ActionResult>& results) {
    for (const auto& r : results) {
      std::string line = pool::describe(r.action);
      if (options_.dry_run) {
        ctx_.out << "would " << line << "\n";
      } else if (r.outcome.kind != Outcome::kDone) {
        ctx_.out << outcome_name(r.outcome.kind) << ": " << line << " (" << r.outcome.detail << ")\n";
      } else {
        ctx_.out << line << "\n";
      }
    }
    for (const auto& r : reruns_) {
      std::string line = describe(r.action);
      if (options_.dry_run) {
        ctx_.out << "would " << line << "\n";
      } else if (r.outcome.kind != Outcome::kDone) {
        ctx_.out << outcome_name(r.outcome.kind) << ": " << line << " (" << r.outcome.detail << ")\n";
      } else {
        ctx_.out << line << (r.outcome.detail.empty() ? "" : ": " + r.outcome.detail) << "\n";
      }
    }
    ctx_.out << spot_reruns_text(spot_, options_.dry_run);
    report_.print_text_tail(ctx_.out, "refresh", s_.pool, options_.dry_run, "nothing to do");
  }

  Context& ctx_;
  const Settings& s_;
  RefreshOptions options_;
  pool::RefreshPolicy policy_;
  std::vector<std::pair<std::string, std::string>> swept_;  // (class, receipt) of every received message
  std::vector<PoolDepthSample> depths_;  // per class, as the sweep check saw it
  std::vector<RerunResult> reruns_;      // re-runs served and assignments forgotten
  std::vector<SpotRerunResult> spot_;    // jobs lost to spot: re-run, decided not to, or waiting
  PassReport report_;
  RunnerListing listing_{ctx_, options_.listing_marker, options_.dry_run,
                         [this](const std::string& what, const std::string& m) { error(what, m); }};
  long github_before_ = 0;
};

}  // namespace

int run_refresh(Context& ctx, const RefreshOptions& options) { return Refresh(ctx, options).run(); }

}  // namespace runpool::controller
