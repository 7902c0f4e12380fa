#include "controller/provision.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/json.h"
#include "common/pool/transitions.h"
#include "controller/await_agents.h"
#include "controller/claim_pool.h"
#include "controller/drain.h"
#include "controller/label.h"
#include "controller/launch.h"
#include "controller/launch_plan.h"
#include "controller/metrics_events.h"
#include "controller/rerun.h"
#include "controller/retire.h"
#include "controller/take_draining.h"

namespace runpool::controller {
namespace {

using pool::State;
using Steady = std::chrono::steady_clock::time_point;

struct Tracked {
  pool::InstanceRecord record;  // as we last wrote or read it
  bool warm = false;            // claimed from the pool (else launched by this label)
  bool running = false;
  int64_t running_after_ms = 0;
};

enum class WaitEnd { kAllRunning, kEnough, kFailed, kTimedOut, kCancelled };
struct WaitResult {
  WaitEnd end = WaitEnd::kAllRunning;
  std::string instance_id;  // kFailed: the instance that cannot get to running
  std::string problem;
};

std::string seconds(int64_t ms) { return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0); }

class Provision {
 public:
  Provision(Context& ctx, ProvisionReport& report) : ctx_(ctx), report_(report), start_(ctx.clock.steady_now()) {}

  int64_t elapsed_ms() const {
    return std::chrono::duration_cast<Duration>(ctx_.clock.steady_now() - start_).count();
  }

  // A re-run provision with the same label takes over what the first one left assigned to it.
  void adopt() {
    for (const auto& r : ctx_.table.by_label(report_.label)) {
      if (r.pool != ctx_.settings.pool) continue;
      if (r.state != State::kCreated && r.state != State::kClaimed && r.state != State::kRunning) continue;
      if (static_cast<int>(tracked_.size()) >= report_.requested) break;
      auto fresh = ctx_.table.get(r.instance_id);  // the index is eventually consistent
      if (!fresh || fresh->label != report_.label || fresh->state == State::kDraining ||
          fresh->state == State::kIdle || fresh->state == State::kTerminating || fresh->state == State::kTerminated) {
        continue;
      }
      spdlog::info("instance {} is already assigned to {} ({}): keeping it", fresh->instance_id, report_.label,
                   pool::state_name(fresh->state));
      tracked_.push_back(Tracked{*fresh, fresh->generation > 1, false, 0});
    }
  }

  // Instances an earlier attempt of this provision launched and died before recording (killed
  // between CreateFleet's answer and its record writes): EC2 knows them by their label tag. Their
  // records are written now, before any claim, so a retry runs on them rather than claiming or
  // launching others (a retry whose pool changed meanwhile needs a different count, hence another
  // ClientToken: a second fleet).
  void adopt_unrecorded(const ResourceClass& rc, const Secret& token, const std::string& url) {
    if (static_cast<int>(tracked_.size()) >= report_.requested) return;
    std::vector<aws::Instance> found;
    try {
      found = ctx_.compute.label_instances(report_.label);
    } catch (const std::exception& e) {
      spdlog::warn("could not look for instances launched earlier for {} ({}); going on", report_.label, e.what());
      return;
    }
    for (const auto& i : found) {
      if (static_cast<int>(tracked_.size()) >= report_.requested) break;
      if (i.tag(kTagResourceClass) != rc.name) continue;
      if (std::any_of(tracked_.begin(), tracked_.end(),
                      [&](const Tracked& t) { return t.record.instance_id == i.instance_id; }) ||
          ctx_.table.get(i.instance_id)) {
        continue;  // recorded: adopt() had its say
      }
      const pool::UsageClass usage =
          i.lifecycle == aws::kLifecycleSpot ? pool::UsageClass::kSpot : pool::UsageClass::kOnDemand;
      pool::InstanceRecord r =
          pool::launched_record(i.instance_id, ctx_.settings.pool, report_.label, rc.name, usage, i.instance_type,
                                token, url, ctx_.now_ms(), ctx_.settings.timeouts);
      r.os = ctx_.settings.os;
      r.ami_id = i.image_id.empty() ? launch_image(ctx_.settings, rc.name) : i.image_id;  // EC2's word first
      r.job_privileges = pool::job_privileges_name(ctx_.settings.reuse_policy_for(rc.name).job_privileges);
      pool::give_seal_keys(r, pool::make_seal_keys());
      if (!ctx_.table.create(r)) continue;  // another attempt recorded it first
      spdlog::info("instance {} was launched for {} by an earlier attempt that left no record: keeping it",
                   i.instance_id, report_.label);
      make_wake_queue(ctx_, i.instance_id);  // the dead attempt may not have made it
      tracked_.push_back(Tracked{r, false, false, 0});
    }
  }

  // Claims from the class's pool queue; `plan` is filled in for take_draining.
  void claim(const ResourceClass& rc, std::optional<pool::UsageClass> usage, const std::vector<std::string>& globs,
             const Secret& token, const std::string& url, Steady deadline, ClaimPlan& plan) {
    int need = report_.requested - static_cast<int>(tracked_.size());
    plan.resource_class = rc.name;
    plan.usage = usage;
    plan.type_globs = globs;
    plan.count = need;
    plan.label = report_.label;
    plan.reg_token = token;
    plan.reg_url = url;
    plan.deadline = deadline;
    if (need <= 0) return;
    ClaimOutcome c = claim_from_pool(ctx_, plan);
    for (const auto& r : c.claimed) tracked_.push_back(Tracked{r, true, false, 0});
    spdlog::info("pool {}: claimed {} of {} (examined {}, dropped {} stale, left {} for others)", rc.name,
                 c.claimed.size(), need, c.examined, c.dropped, c.released);
  }

  // What is draining in the class, when the queue fell short (controller/take_draining.h): the
  // drained instances finished and claimed now; `launch_first(reserve)` launches what no draining
  // instance can cover before the wait for the others, so its boot runs meanwhile. True when
  // launch_first was called.
  bool take_draining(const ClaimPlan& base, const std::function<void(int reserve)>& launch_first) {
    ClaimPlan plan = base;
    plan.count = report_.requested - static_cast<int>(tracked_.size());
    if (plan.count <= 0 || ctx_.cancelled.load()) return false;
    DrainingTakeover t(ctx_, plan);
    t.finish_drained();
    size_t kept = 0;
    auto keep = [&] {
      for (; kept < t.claimed.size(); ++kept) tracked_.push_back(Tracked{t.claimed[kept], true, false, 0});
    };
    keep();
    const int reserve = std::min(t.awaitable(), plan.count - static_cast<int>(t.claimed.size()));
    if (reserve <= 0) return false;
    launch_first(reserve);
    t.await_drains();
    keep();
    spdlog::info("pool {}: {} taken from draining instances", plan.resource_class, t.claimed.size());
    return true;
  }

  // Launches what is still needed but `reserve`. "" when it all launched, else what fell short and
  // why. `token_seed`: see LaunchOrder ("": the label); a replacement's differs, or its CreateFleet
  // would replay the first one's answer.
  std::string launch(const ResourceClass& rc, const std::vector<std::string>& types, pool::UsageClass usage,
                     const Secret& token, const std::string& url, Steady deadline, const std::string& token_seed,
                     int reserve = 0) {
    int need = report_.requested - static_cast<int>(tracked_.size()) - reserve;
    if (need <= 0 || ctx_.cancelled.load()) return "";
    LaunchOrder order;
    order.resource_class = rc.name;
    order.types = types;
    order.usage = usage;
    order.on_demand_fallback = ctx_.settings.on_demand_fallback;
    order.count = need;
    order.label = report_.label;
    order.token_seed = token_seed;
    order.reg_token = token;
    order.reg_url = url;
    for (const auto& t : tracked_) order.known.insert(t.record.instance_id);
    order.deadline = deadline;
    LaunchOutcome out;
    try {
      launch_instances(ctx_, order, out);
    } catch (...) {
      for (const auto& r : out.records) tracked_.push_back(Tracked{r, false, false, 0});
      throw;
    }
    for (const auto& r : out.records) tracked_.push_back(Tracked{r, false, false, 0});
    if (static_cast<int>(out.records.size()) < need && !ctx_.cancelled.load()) {
      std::string why;
      for (const auto& p : out.problems) why += (why.empty() ? "" : "; ") + p;
      return fmt::format("launched {} of the {} instance(s) needed{}", out.records.size(), need,
                         why.empty() ? "" : " (" + why + ")");
    }
    return "";
  }

  // Waits until every instance not yet running has its agent's `registered` for its generation,
  // marking each running as it does. Ends early when `enough` are running (0: never) or when one
  // instance cannot get there (controller/await_agents.h: a failed agent, a takeover, gone from
  // EC2): the caller replaces it.
  WaitResult wait_running(Steady deadline, int enough) {
    std::vector<AwaitItem> items;
    for (const Tracked& t : tracked_) {
      if (!t.running) items.push_back(AwaitItem{t.record, t.warm});
    }
    if (items.empty()) return {WaitEnd::kAllRunning, "", ""};
    AwaitOptions o;
    o.awaited = pool::Awaited::kRegistered;
    o.deadline = deadline;
    o.retry_failed_reads = false;  // a failed read fails the wait, as a GetItem's did
    o.look_at_ec2_first = true;    // a launch that died at birth is known at once
    o.ec2_look_interval = kEc2LookInterval;
    WaitResult result{WaitEnd::kAllRunning, "", ""};
    auto marked = [&](Tracked& t, const pool::InstanceRecord& r) {
      mark(t, r);
      if (enough > 0 && running() >= enough && running() < static_cast<int>(tracked_.size())) {
        result.end = WaitEnd::kEnough;
        return AwaitAction::kStop;
      }
      return AwaitAction::kResolve;
    };
    AwaitResult res = await_agents(ctx_, std::move(items), o,
                                   [&](const pool::HandshakeFacts& f, const pool::HandshakeDecision& d) {
      Tracked& t = find_tracked(f.written->instance_id);
      switch (d.verdict) {
        case pool::Verdict::kDone:
          return marked(t, *f.current);
        case pool::Verdict::kWrite: {
          pool::Step step = pool::mark_running(*f.current, ctx_.now_ms(), ctx_.settings.timeouts);
          if (!ctx_.table.transition(f.current->instance_id, step.expect, step.change)) {
            return AwaitAction::kKeep;  // it moved: the next look tells
          }
          return marked(t, *f.current);
        }
        case pool::Verdict::kWait:
          return AwaitAction::kKeep;
        case pool::Verdict::kFail:
        case pool::Verdict::kGone:
        case pool::Verdict::kMovedOn:
          result = {WaitEnd::kFailed, f.written->instance_id, pool::handshake_problem(f.written->instance_id, d)};
          return AwaitAction::kStop;
      }
      return AwaitAction::kKeep;
    });
    switch (res.end) {
      case AwaitEnd::kAllResolved: return {WaitEnd::kAllRunning, "", ""};
      case AwaitEnd::kStopped: return result;
      case AwaitEnd::kCancelled: return {WaitEnd::kCancelled, "", "cancelled"};
      case AwaitEnd::kTimedOut: break;
    }
    std::vector<std::string> waiting;
    for (const auto& i : res.pending) waiting.push_back(i.written.instance_id);
    return {WaitEnd::kTimedOut, "",
            fmt::format("timed out after {} waiting for {} instance(s) to register: {}", seconds(elapsed_ms()),
                        waiting.size(), fmt::join(waiting, ", "))};
  }

  int running() const {
    return static_cast<int>(std::count_if(tracked_.begin(), tracked_.end(), [](const Tracked& t) { return t.running; }));
  }

  // An instance that cannot get to running is let go (launched: terminated; claimed: drained back
  // without waiting) and no longer counts; the provision tops up in its place.
  void drop(const std::string& instance_id, const std::string& problem) {
    auto it = std::find_if(tracked_.begin(), tracked_.end(),
                           [&](const Tracked& t) { return t.record.instance_id == instance_id; });
    if (it == tracked_.end()) return;
    Tracked t = *it;
    tracked_.erase(it);
    report_.dropped.push_back(DroppedInstance{instance_id, t.warm, problem});
    spdlog::warn("{}: letting it go and replacing it", problem);
    mark_kept(let_go({t}, Duration{0}, problem));
  }

  // Instances not running when the provision ends with enough: let go like a failed provision's.
  void let_go_of_stragglers() {
    std::vector<Tracked> stragglers;
    for (auto it = tracked_.begin(); it != tracked_.end();) {
      if (it->running) {
        ++it;
        continue;
      }
      report_.dropped.push_back(DroppedInstance{it->record.instance_id, it->warm, "not running in time"});
      stragglers.push_back(*it);
      it = tracked_.erase(it);
    }
    if (stragglers.empty()) return;
    spdlog::info("{} instance(s) not running in time: letting them go", stragglers.size());
    mark_kept(let_go(stragglers, ctx_.settings.cancel_drain_wait, "not running in time for provision " + report_.label,
                     RetireCause::kUnregistered));
  }

  void mark_kept(const std::vector<std::string>& kept) {
    for (auto& d : report_.dropped) {
      if (std::find(kept.begin(), kept.end(), d.instance_id) != kept.end()) d.kept = true;
    }
  }

  // Nothing stays assigned to a failed provision: launched instances are terminated, claimed ones
  // drain back to the pool (their agents deregister), waiting a bounded time for them. `timed_out`:
  // it failed waiting for registrations (keep_failed keeps the unregistered launched instances).
  void abandon(bool timed_out) {
    let_go(tracked_, ctx_.settings.cancel_drain_wait, "provision " + report_.label + " failed",
           timed_out ? RetireCause::kUnregistered : RetireCause::kOther);
  }

  std::vector<Tracked>& tracked() { return tracked_; }

 private:
  static constexpr Duration kEc2LookInterval{std::chrono::seconds(5)};

  // Launched instances are terminated; claimed ones drain back to the pool, waiting up to `wait`
  // for them (the rest finish under refresh). Returns the failed ones kept instead (keep_failed).
  std::vector<std::string> let_go(const std::vector<Tracked>& which, Duration wait, const std::string& why,
                                  RetireCause cause = RetireCause::kOther) {
    std::vector<pool::InstanceRecord> launched, claimed;
    for (const auto& t : which) (t.warm ? claimed : launched).push_back(t.record);
    std::vector<std::string> kept;
    if (!launched.empty()) kept = retire(ctx_, launched, why, cause).kept;
    if (claimed.empty()) return kept;
    DrainOptions options;
    options.wait = wait;
    options.terminate_stragglers = false;  // refresh finishes them (drain deadline)
    options.stop_on_cancel = false;
    DrainOutcome d;
    try {
      d = drain_to_pool(ctx_, claimed, [&] { return ctx_.github.remove_token(); }, options);
    } catch (const std::exception& e) {
      spdlog::error("could not drain the claimed instances back ({}); terminating them", e.what());
      for (const auto& id : retire(ctx_, claimed, why).kept) kept.push_back(id);
      return kept;
    }
    if (!d.errors.empty()) {
      // Without a remove token (GitHub unreachable) nothing started draining: terminate instead.
      std::vector<pool::InstanceRecord> stuck;
      for (const auto& r : claimed) {
        auto cur = ctx_.table.get(r.instance_id);
        if (cur && cur->generation == r.generation && cur->label == r.label &&
            (cur->state == State::kClaimed || cur->state == State::kRunning)) {
          stuck.push_back(*cur);
        }
      }
      if (!stuck.empty()) {
        for (const auto& id : retire(ctx_, stuck, "could not be drained back").kept) kept.push_back(id);
      }
    }
    spdlog::info("claimed instances: {} back in the pool, {} still draining (refresh finishes them)",
                 d.returned.size(), d.left.size());
    return kept;
  }

  Tracked& find_tracked(const std::string& instance_id) {
    for (Tracked& t : tracked_) {
      if (t.record.instance_id == instance_id) return t;
    }
    throw std::logic_error("not tracked: " + instance_id);
  }

  void mark(Tracked& t, const pool::InstanceRecord& r) {
    t.record = r;
    t.record.state = State::kRunning;
    t.running = true;
    t.running_after_ms = elapsed_ms();
    spdlog::info("instance {} is running for {} after {}", r.instance_id, report_.label, seconds(t.running_after_ms));
  }

  Context& ctx_;
  ProvisionReport& report_;
  Steady start_;
  std::vector<Tracked> tracked_;
};

void emit(Context& ctx, const ProvisionOptions& o, const ProvisionReport& r) {
  ctx.metrics.emit(provision_event(ctx.settings, ctx.now_ms(), r));
  if (o.json) {
    ctx.out << write_json(provision_json(r)) << "\n";
  } else {
    ctx.out << provision_text(r);
  }
  if (!o.actions.active()) return;
  try {
    if (r.ok) append_to_file(o.actions.output, github_output_text(provision_outputs(r), o.random));
    if (!o.actions.summary.empty()) append_to_file(o.actions.summary, provision_summary(r));
  } catch (const std::exception& e) {
    spdlog::error("could not write the step's outputs: {}", e.what());
  }
}

}  // namespace

ProvisionReport provision(Context& ctx, const ProvisionOptions& o) {
  const Settings& s = ctx.settings;
  if (o.count < 1 || o.count > s.max_count) {
    throw UsageError(fmt::format("--count must be between 1 and {} (max_count)", s.max_count));
  }
  std::string class_name = o.resource_class.empty() ? s.default_resource_class : o.resource_class;
  const ResourceClass* rc = s.find_class(class_name);
  if (!rc) throw UsageError("--resource-class: '" + class_name + "' is not one of resource_classes");
  std::vector<std::string> globs = o.allowed_types.value_or(s.allowed_instance_types);
  std::vector<std::string> types = launch_types(*rc, globs);
  if (types.empty()) {
    throw UsageError("--allowed-instance-types: no instance type of class " + rc->name + " (" +
                     format_resource_classes({*rc}) + ") matches");
  }
  pool::UsageClass usage = o.usage.value_or(s.usage_class);
  ProvisionReport report;
  report.label = o.label.empty() ? derive_label(s.pool, o.getenv, o.random, o.check_run_id) : o.label;
  if (std::string problem = label_problem(report.label); !problem.empty()) throw UsageError("--label: " + problem);
  report.resource_class = rc->name;
  report.requested = o.count;
  report.min_count = o.min_count == 0 ? o.count : o.min_count;
  if (report.min_count < 1 || report.min_count > o.count) {
    throw UsageError(fmt::format("--min-count must be between 1 and --count ({})", o.count));
  }
  Duration timeout = o.timeout.value_or(s.provision_timeout);
  Duration straggler_wait = o.straggler_wait.value_or(s.provision_straggler_wait);
  std::optional<pool::RunAssignment> kept = o.keep_run ? workflow_run_from_env(o.getenv) : std::nullopt;
  if (kept) {
    kept->label = report.label;
    kept->resource_class = rc->name;
    kept->usage_class = std::string(pool::usage_class_name(usage));
    if (o.allowed_types) kept->allowed_types = fmt::format("{}", fmt::join(*o.allowed_types, " "));
    kept->count = o.count;
    kept->created_ms = ctx.now_ms();
    keep_run(ctx, *kept);
  }

  Provision p(ctx, report);
  const Steady deadline = ctx.clock.steady_now() + timeout;
  spdlog::info("provision {}: {} x {} ({}{}){}", report.label, o.count, rc->name, pool::usage_class_name(usage),
               usage == pool::UsageClass::kSpot && s.on_demand_fallback ? ", on-demand fallback" : "",
               report.min_count < o.count ? fmt::format(", at least {}", report.min_count) : "");
  std::string error;
  bool timed_out = false;  // the wait for registrations ran out (keep_failed: the unregistered count as failed)
  try {
    p.adopt();
    Secret token = ctx.github.registration_token();
    std::string url = ctx.github.registration_url();
    p.adopt_unrecorded(*rc, token, url);
    // Claims from the pool, then launches what is still needed.
    int replaced = 0;
    auto acquire = [&] {
      const std::string seed = o.fleet_seed.empty() ? report.label : o.fleet_seed;
      std::string fleet_seed = replaced == 0 ? o.fleet_seed : fmt::format("{}/replacement-{}", seed, replaced);
      if (o.claim_warm) {
        ClaimPlan plan;
        p.claim(*rc, claim_usage_filter(usage, s.on_demand_fallback), globs, token, url, deadline, plan);
        const bool launched_first = p.take_draining(plan, [&](int reserve) {
          if (std::string short_by = p.launch(*rc, types, usage, token, url, deadline, fleet_seed, reserve);
              !short_by.empty()) {
            spdlog::warn("{}; the rest is launched after the wait for the draining instances", short_by);
          }
        });
        // What the drains did not cover gets a CreateFleet of its own (another ClientToken).
        if (launched_first) fleet_seed = (fleet_seed.empty() ? seed : fleet_seed) + "/after-drains";
      }
      return p.launch(*rc, types, usage, token, url, deadline, fleet_seed);
    };
    std::string short_by = acquire();
    if (!short_by.empty() && static_cast<int>(p.tracked().size()) < report.min_count) throw std::runtime_error(short_by);
    if (!short_by.empty()) spdlog::warn("{}; going on with what there is (at least {} needed)", short_by, report.min_count);
    // An instance that cannot get to running is let go and replaced, up to `count` times in all (a
    // cause that is not the instance's own, e.g. a refused registration, would fail every one).
    Steady wait_until = deadline;
    bool enough = false;
    std::string last_problem;
    for (bool more = true; more;) {
      WaitResult w = p.wait_running(wait_until, enough ? 0 : report.min_count);
      switch (w.end) {
        case WaitEnd::kAllRunning:
          more = false;
          break;
        case WaitEnd::kEnough:
          // Enough run: the others get straggler_wait, no more.
          enough = true;
          wait_until = std::min(deadline, ctx.clock.steady_now() + straggler_wait);
          spdlog::info("{} of {} running (at least {} needed): waiting up to {} for the rest", p.running(), o.count,
                       report.min_count, format_duration(straggler_wait));
          break;
        case WaitEnd::kCancelled:
          error = "cancelled";
          more = false;
          break;
        case WaitEnd::kTimedOut:
          if (p.running() < report.min_count) error = w.problem;
          timed_out = true;
          more = false;
          break;
        case WaitEnd::kFailed:
          last_problem = w.problem;
          p.drop(w.instance_id, w.problem);
          if (enough) break;  // enough run already: a replacement would only be a straggler
          if (replaced >= o.count) {
            spdlog::warn("{} instance(s) replaced already: no more replacements", replaced);
            break;
          }
          ++replaced;
          if (std::string still_short = acquire(); !still_short.empty()) spdlog::warn("replacing: {}", still_short);
          break;
      }
    }
    if (error.empty() && p.running() < report.min_count) {
      error = fmt::format("{} of {} instance(s) running, at least {} needed{}", p.running(), o.count, report.min_count,
                          last_problem.empty() ? "" : " (last problem: " + last_problem + ")");
    }
    if (error.empty() && !ctx.cancelled.load()) p.let_go_of_stragglers();
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (error.empty() && ctx.cancelled.load()) error = "cancelled";

  report.elapsed_ms = p.elapsed_ms();
  for (const auto& t : p.tracked()) {
    report.instances.push_back(ProvisionedInstance{t.record.instance_id, t.record.instance_type,
                                                   t.record.usage_class, t.warm, t.record.generation,
                                                   t.running_after_ms});
  }
  if (!error.empty()) {
    report.error = error;
    spdlog::error("provision {} failed: {}; cleaning up", report.label, error);
    p.abandon(timed_out);
    if (kept) end_run(ctx, report.label);
    report.elapsed_ms = p.elapsed_ms();
    return report;
  }
  report.ok = true;
  return report;
}

int run_provision(Context& ctx, const ProvisionOptions& o) {
  ProvisionReport report = provision(ctx, o);
  emit(ctx, o, report);
  return report.ok ? kExitOk : kExitFailed;
}

}  // namespace runpool::controller
