#include "controller/serve.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "common/github/message_session.h"
#include "common/github/scaleset_errors.h"
#include "common/pool/demand_plan.h"
#include "common/pool/lease.h"
#include "common/pool/reuse_policy.h"
#include "common/pool/runner_identity.h"
#include "common/pool/runner_name.h"
#include "common/pool/scale_set_upkeep.h"
#include "common/pool/transitions.h"
#include "controller/claim_pool.h"
#include "controller/drain.h"
#include "controller/jit_mint.h"
#include "controller/label.h"
#include "controller/launch.h"
#include "controller/launch_plan.h"
#include "controller/metrics_events.h"
#include "controller/retire.h"
#include "controller/serve_lease.h"
#include "controller/session_demand.h"
#include "controller/session_fault.h"

namespace runpool::controller {

std::string serve_lease_prefix(const std::string& pool) { return "scaleset/" + pool + "/"; }
std::string serve_lease_name(const Settings& s) { return serve_lease_prefix(s.pool) + s.scale_set(); }

namespace {

using Steady = std::chrono::steady_clock::time_point;

// How long a claim may go without claiming an instance before the shortfall is launched instead:
// at most 10 s, and well inside the lease's margin (a sixth of its time): a claim asks the fence
// before each write, but a batch's runner configurations are made before its writes.
Duration claim_budget(const Settings& s) { return std::min<Duration>(std::chrono::seconds(10), s.serve_lease_ttl / 6); }
// How often the scale set's metrics are emitted (and a CloudWatch Logs sink flushed).
constexpr auto kMetricsEvery = std::chrono::seconds(60);
// A record claimed or launched this recently is counted even if the label index does not show it
// yet (the index is eventually consistent): otherwise the next pass would add it twice.
constexpr int64_t kRecentMs = 60'000;

class Server {
 public:
  Server(Context& ctx, ServeDeps& deps)
      : ctx_(ctx),
        s_(ctx.settings),
        deps_(deps),
        set_name_(s_.scale_set()),
        lease_(ctx, deps.leases, serve_lease_name(s_), deps.holder, [this] { wake(); }) {}

  int run() {
    spdlog::info("serving scale set '{}' of pool {} from class {} as {} (min armed {}, max runners {})", set_name_,
                 s_.pool, s_.scale_set_class(), deps_.holder, s_.scale_set_min_armed, s_.scale_set_max_runners);
    lease_.start();
    while (!ctx_.cancelled.load()) {
      if (!fenced()) {
        pause(std::chrono::milliseconds(200));
        continue;
      }
      try {
        serve_held();
      } catch (const std::exception& e) {
        // Looking the set up, creating it or opening its session failed.
        const SessionVerdict v = failed(e);
        spdlog::error("serving scale set '{}': {} ({})", set_name_, e.what(), v.why);
        after_session(v);
      }
    }
    if (served_) emit_metrics();
    lease_.stop();
    spdlog::info("serve stopped");
    return kExitOk;
  }

 private:
  bool fenced() const { return lease_.fenced(); }

  // Sleeps up to `d`; false when a cancellation came. A message wakes it early.
  bool pause(Duration d) {
    std::unique_lock<std::mutex> lock(mu_);
    const Steady end = std::chrono::steady_clock::now() + d;
    while (!ctx_.cancelled.load() && !woken_ && std::chrono::steady_clock::now() < end) {
      cv_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(end - std::chrono::steady_clock::now(),
                                                                      std::chrono::milliseconds(200)));
    }
    woken_ = false;
    return !ctx_.cancelled.load();
  }
  void wake() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      woken_ = true;
    }
    cv_.notify_all();
  }

  // ---- The session's failures (session_fault.h decides), counted across the session's thread and
  // the serving loop until a good answer.

  SessionVerdict failed(const std::exception& e) {
    SessionFault fault;
    fault.message = e.what();
    if (auto* as = dynamic_cast<const github::ActionsServiceError*>(&e)) fault.type_name = as->type_name();
    if (auto* gh = dynamic_cast<const github::GithubError*>(&e)) {
      fault.status = gh->status();
      fault.message = gh->message();
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++failures_in_a_row_;
    return decide_session_fault(fault, {failures_in_a_row_, ctx_.now_ms() - last_good_ms_});
  }
  // A good answer; `fresh_start`: serving (re)starts, counted from now unless failures run on.
  void answered(bool fresh_start = false) {
    std::lock_guard<std::mutex> lock(mu_);
    if (fresh_start && failures_in_a_row_ > 0) return;
    failures_in_a_row_ = 0;
    last_good_ms_ = ctx_.now_ms();
  }

  // What the serving loop does once a session ended, or could not be opened.
  void after_session(const SessionVerdict& v) {
    switch (v.move) {
      case SessionMove::kRetry: pause(s_.serve_retry_wait); break;
      case SessionMove::kReopen: {
        // At once the first time; paced when new sessions keep failing.
        std::unique_lock<std::mutex> lock(mu_);
        const bool again = failures_in_a_row_ > 1;
        lock.unlock();
        if (again) pause(s_.serve_retry_wait);
        break;
      }
      case SessionMove::kStepBack:
        // Holding the lease while unable to serve would keep a standby out for good.
        spdlog::warn("scale set '{}': cannot serve ({}); giving the lease up for {} so that a standby serves",
                     set_name_, v.why, format_duration(s_.serve_lease_ttl));
        lease_.step_back(s_.serve_lease_ttl);
        {
          std::lock_guard<std::mutex> lock(mu_);
          failures_in_a_row_ = 0;
        }
        break;
    }
  }

  // ---- The scale set and its session

  github::ScaleSet ensure_scale_set() {
    int64_t group_id = 1;  // the Default group
    if (!s_.github_runner_group.empty()) {
      auto group = deps_.scale_sets.get_runner_group(s_.github_runner_group);
      if (!group) throw std::runtime_error("runner group '" + s_.github_runner_group + "' does not exist");
      group_id = group->id;
    }
    if (auto set = deps_.scale_sets.get_scale_set(group_id, set_name_)) return *set;
    github::ScaleSetSpec spec;
    spec.name = set_name_;
    spec.runner_group_id = group_id;
    spec.labels = {{"System", set_name_}};
    try {
      github::ScaleSet set = deps_.scale_sets.create_scale_set(spec);
      spdlog::info("created scale set '{}' (id {})", set_name_, set.id);
      return set;
    } catch (const github::ScaleSetExistsError&) {
      // Created by another controller between our look and our create.
      if (auto set = deps_.scale_sets.get_scale_set(group_id, set_name_)) return *set;
      throw;
    }
  }

  // Opens the set's session, waiting out one another listener still holds (after a restart the
  // old session lingers until the service lets it lapse). Null when the wait ended: cancelled or
  // the lease lost.
  std::unique_ptr<github::MessageSession> open_session(int64_t set_id) {
    bool told = false;
    while (fenced()) {
      try {
        return std::make_unique<github::MessageSession>(deps_.scale_sets, set_id, deps_.holder, &deps_.queue_caller);
      } catch (const github::SessionConflictError&) {
        if (!told) spdlog::info("scale set '{}' has another live session; waiting for it to lapse", set_name_);
        told = true;
      }
      if (!pause(s_.serve_retry_wait)) break;
    }
    return nullptr;
  }

  void serve_held() {
    answered(/*fresh_start=*/true);
    github::ScaleSet set = ensure_scale_set();
    set_id_ = set.id;
    served_ = true;
    std::unique_ptr<github::MessageSession> session = open_session(set.id);
    if (!session) return;
    spdlog::info("listening to scale set '{}' (id {})", set_name_, set.id);
    {
      std::lock_guard<std::mutex> lock(mu_);
      demand_ = SessionDemand{};
      if (auto st = session->info().statistics) demand_.assigned_jobs = st->total_assigned_jobs;
      session_end_.reset();
      last_good_ms_ = ctx_.now_ms();  // not a good answer yet: failures in a row run on
    }
    find_finished_runners();
    deps_.stop_queue.store(false);
    stop_listening_.store(false);
    std::thread listener([&] { listen(*session); });
    while (!ctx_.cancelled.load() && fenced()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (session_end_) break;
      }
      try {
        reconcile();
      } catch (const std::exception& e) {
        spdlog::error("scale set '{}': {}", set_name_, e.what());
      }
      if (std::chrono::steady_clock::now() >= next_metrics_) emit_metrics();
      pause(s_.serve_reconcile_interval);
    }
    std::optional<SessionVerdict> end;
    {
      std::lock_guard<std::mutex> lock(mu_);
      end = session_end_;
    }
    // The lease first: closing may take the caller's retries, and no action waits for it.
    if (end && end->move == SessionMove::kStepBack) after_session(*end);
    stop_listening_.store(true);
    deps_.stop_queue.store(true);
    listener.join();
    deps_.stop_queue.store(false);
    try {
      session->close();
    } catch (const std::exception& e) {
      spdlog::warn("could not close the session ({}); it lapses on its own", e.what());
    }
    if (end && end->move != SessionMove::kStepBack) after_session(*end);
  }

  // The session's thread: long poll, acquire what is offered, note the rest, acknowledge.
  void listen(github::MessageSession& session) {
    int64_t last = 0;
    while (!stop_listening_.load()) {
      try {
        std::optional<github::ScaleSetMessage> m = session.get_message(last, s_.scale_set_max_runners);
        if (!m) {
          answered();
          continue;
        }
        // Unacknowledged, it comes again: to this holder's next poll, or to a successor's.
        if (!fenced()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          continue;
        }
        Absorbed a;
        {
          std::lock_guard<std::mutex> lock(mu_);
          a = absorb(demand_, *m, system_clock().now());
        }
        if (!a.to_acquire.empty()) {
          std::vector<int64_t> got = session.acquire_jobs(a.to_acquire);
          spdlog::info("acquired {} of {} job(s) offered", got.size(), a.to_acquire.size());
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          for (const JobStart& j : a.started) {
            if (j.queued_to_started_ms) started_ms_.push_back(*j.queued_to_started_ms);
          }
        }
        for (const JobStart& j : a.started) {
          spdlog::info("job {} started on {}{}", j.job_id, j.runner_name,
                       j.queued_to_started_ms ? fmt::format(": queued → started {} ms", *j.queued_to_started_ms) : "");
        }
        session.delete_message(m->message_id);
        answered();  // only now: a poll that works beside an acknowledgement that fails is no good answer
        last = m->message_id;
        wake();
      } catch (const std::exception& e) {
        if (stop_listening_.load()) return;
        const SessionVerdict v = failed(e);
        if (v.move != SessionMove::kRetry) return ended(e.what(), v);
        spdlog::warn("scale set '{}': the message poll failed ({}; {}); again in {}", set_name_, e.what(), v.why,
                     format_duration(s_.serve_retry_wait));
        const Steady end = std::chrono::steady_clock::now() + s_.serve_retry_wait;
        while (!stop_listening_.load() && std::chrono::steady_clock::now() < end) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      }
    }
  }

  void ended(const std::string& what, const SessionVerdict& v) {
    spdlog::warn("scale set '{}': the session ended: {} ({}; {})", set_name_, what, v.why,
                 v.move == SessionMove::kReopen ? "looking the set up again for a new one" : "stepping back");
    {
      std::lock_guard<std::mutex> lock(mu_);
      session_end_ = v;
    }
    wake();
  }

  // The scale set as the last pass saw it, and the jobs started since the last emission.
  void emit_metrics() {
    next_metrics_ = std::chrono::steady_clock::now() + kMetricsEvery;
    sample_.scale_set = set_name_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sample_.queued_to_started_ms.swap(started_ms_);
      started_ms_.clear();
    }
    try {
      for (const metrics::Event& e : scale_set_events(s_, ctx_.now_ms(), sample_)) ctx_.metrics.emit(e);
      ctx_.metrics.flush();
    } catch (const std::exception& e) {
      spdlog::warn("scale set '{}': metrics not emitted: {}", set_name_, e.what());
    }
    sample_.queued_to_started_ms.clear();
  }

  // ---- The set's instances

  std::vector<pool::InstanceRecord> set_records() {
    std::vector<pool::InstanceRecord> records = ctx_.table.by_label(set_name_);
    const int64_t now = ctx_.now_ms();
    for (auto it = recent_.begin(); it != recent_.end();) {
      bool listed = std::any_of(records.begin(), records.end(),
                                [&](const pool::InstanceRecord& r) { return r.instance_id == it->first; });
      if (listed || now - it->second.state_since_ms > kRecentMs) {
        it = recent_.erase(it);
      } else {
        records.push_back(it->second);
        ++it;
      }
    }
    return records;
  }

  // After taking over: a runner whose job completed while nobody listened is gone from GitHub
  // (an ephemeral runner is removed after its job). Its instance is drained like the others.
  void find_finished_runners() {
    std::vector<pool::InstanceRecord> records = set_records();
    std::set<std::string> gone;
    for (const pool::ScaleSetRunner& r : pool::scale_set_runners(records, s_.pool, set_name_, {}, ctx_.now_ms())) {
      if (r.phase != pool::RunnerPhase::kArmed) continue;
      auto it = std::find_if(records.begin(), records.end(),
                             [&](const pool::InstanceRecord& x) { return x.instance_id == r.instance_id; });
      if (it == records.end() || it->runner_id <= 0) continue;
      try {
        // By the assignment's runner name: the record's runner_id is the agent's (forgeable) word.
        const std::string name = pool::runner_name(s_.pool, it->instance_id, it->generation);
        if (!deps_.scale_sets.get_runner_by_name(name)) gone.insert(name);
      } catch (const std::exception& e) {
        spdlog::warn("instance {}: could not look its runner up ({})", it->instance_id, e.what());
      }
    }
    if (gone.empty()) return;
    spdlog::info("{} runner(s) of scale set '{}' finished while nobody listened: draining them", gone.size(), set_name_);
    std::lock_guard<std::mutex> lock(mu_);
    demand_.finished.insert(gone.begin(), gone.end());
  }

  void reconcile() {
    std::vector<pool::InstanceRecord> records = set_records();
    SessionDemand demand;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // A finished runner's name matters until its instance left the assignment.
      forget_finished(demand_, [&](const std::string& name) {
        auto parts = pool::parse_runner_name(s_.pool, name);
        return parts && std::any_of(records.begin(), records.end(), [&](const pool::InstanceRecord& r) {
                 return r.instance_id == parts->instance_id && r.generation == parts->generation &&
                        (r.state == pool::State::kCreated || r.state == pool::State::kClaimed ||
                         r.state == pool::State::kRunning);
               });
      });
      demand = demand_;
    }
    for (const pool::Upkeep& u : pool::plan_upkeep(records, s_.pool, set_name_, demand.finished)) {
      if (!fenced()) return;
      upkeep(u);
    }
    pool::DemandFacts f;
    f.now_ms = ctx_.now_ms();
    f.min_armed = s_.scale_set_min_armed;
    f.max_runners = s_.scale_set_max_runners;
    f.assigned_jobs = demand.assigned_jobs;
    f.runners = pool::scale_set_runners(records, s_.pool, set_name_, demand.finished, f.now_ms);
    // Cleaned instances come back to the pool unless the class never reuses one.
    if (s_.reuse_policy_for(s_.scale_set_class()).reuse != pool::Reuse::kNever) {
      f.return_wait_ms = s_.scale_set_return_wait.count();
    }
    f.arm_grace_ms = s_.scale_set_arm_grace.count();
    pool::DemandPlan plan = pool::plan_demand(f);
    if (plan.current < plan.desired) {
      // Growing: how many the warm pool holds (SQS's approximate count) splits claims from
      // instances awaited from cleaning and launches; a claim that falls short is launched all
      // the same. Read whenever runners are short, even if all could be awaited: an instance idle
      // now serves at once, one being cleaned only once back.
      f.claimable = pool_depth();
      plan = pool::plan_demand(f);
    }
    sample_.assigned_jobs = demand.assigned_jobs;
    sample_.desired = plan.desired;
    sample_.runners = f.runners;
    if (plan.why != last_why_) {
      spdlog::info("scale set '{}' [{}]: {}", set_name_, pool::demand_rule_name(plan.rule), plan.why);
      last_why_ = plan.why;
    }
    if (plan.claim + plan.launch > 0 && fenced()) add_runners(plan.claim, plan.launch);
    for (const std::string& id : plan.remove) {
      if (!fenced()) return;
      auto it = std::find_if(records.begin(), records.end(),
                             [&](const pool::InstanceRecord& r) { return r.instance_id == id; });
      if (it != records.end()) remove_armed(*it);
    }
  }

  void upkeep(const pool::Upkeep& u) {
    const pool::InstanceRecord& r = u.record;
    try {
      switch (u.kind) {
        case pool::UpkeepKind::kMarkRunning: {
          pool::Step step = pool::mark_running(r, ctx_.now_ms(), s_.timeouts);
          if (ctx_.table.transition(r.instance_id, step.expect, step.change)) {
            spdlog::info("instance {}: runner listening for scale set '{}' (generation {})", r.instance_id, set_name_,
                         r.generation);
          }
          break;
        }
        case pool::UpkeepKind::kDrainFinished: {
          pool::Step step = pool::start_drain(r, Secret(), ctx_.now_ms(), s_.timeouts);
          if (ctx_.table.transition(r.instance_id, step.expect, step.change)) {
            spdlog::info("instance {}: {}; cleaning it", r.instance_id, u.why);
            wake_agents(ctx_.queue, {r.instance_id});
          }
          break;
        }
        case pool::UpkeepKind::kSettle: {
          SettledDrain settled = settle_drained(ctx_, r);
          switch (settled.end) {
            case DrainedEnd::kReturned: spdlog::info("instance {}: clean, back in the pool", r.instance_id); break;
            case DrainedEnd::kRetired: spdlog::info("instance {}: retired ({})", r.instance_id, settled.retired_why); break;
            case DrainedEnd::kRunnerLeft:
            case DrainedEnd::kMoved: break;  // looked at again next pass
          }
          break;
        }
        case pool::UpkeepKind::kRetireFailed: {
          spdlog::warn("instance {}: {}", r.instance_id, u.why);
          pool::RunnerFateDecision fate = settle_runner(ctx_, r, true, false);
          if (fate.proceed) retire(ctx_, {r}, "agent failed");
          break;
        }
      }
    } catch (const std::exception& e) {
      spdlog::warn("instance {}: {} failed: {}", r.instance_id, pool::upkeep_kind_name(u.kind), e.what());
    }
  }

  // Many runners' configurations at once: the admin client and each lane's side by side.
  std::vector<MintedJit> make_jits(const std::vector<std::string>& names) {
    std::vector<JitLane> lanes = {
        [this](const std::string& name) { return make_jit(deps_.scale_sets, set_id_, name); }};
    for (github::ScaleSetClient* c : deps_.jit_lanes) {
      lanes.push_back([this, c](const std::string& name) { return make_jit(*c, set_id_, name); });
    }
    return mint_jit_configs(lanes, names);
  }

  int pool_depth() {
    try {
      return static_cast<int>(std::min<int64_t>(ctx_.queue.depth(s_.scale_set_class()).visible, 1'000'000));
    } catch (const std::exception& e) {
      spdlog::warn("could not read the {} pool's depth ({}); claiming first all the same", s_.scale_set_class(), e.what());
      return std::numeric_limits<int>::max();
    }
  }

  // `claim` from the warm pool, then `launch` more plus whatever the claims fell short by.
  void add_runners(int claim, int launch) {
    const std::string class_name = s_.scale_set_class();
    const ResourceClass* rc = s_.find_class(class_name);
    if (!rc) throw ConfigError("scale_set_resource_class: no resource class '" + class_name + "'");
    const std::string url = ctx_.github.registration_url();
    ClaimPlan cp;
    cp.resource_class = class_name;
    cp.count = claim;
    cp.label = set_name_;
    cp.reg_url = url;
    // The budget bounds a claim that finds nothing; one that keeps claiming goes on (a burst of
    // hundreds from a full pool), each write while the lease holds.
    cp.deadline = ctx_.clock.steady_now() + claim_budget(s_);
    cp.extend_per_claim = std::chrono::duration_cast<std::chrono::milliseconds>(claim_budget(s_));
    cp.keep_going = [this] { return fenced(); };
    cp.jit_configs = [this](const std::vector<std::string>& names) { return make_jits(names); };
    cp.jit_discard = [this](const std::string& name) { discard_jit(deps_.scale_sets, name); };
    int rest = launch;
    if (claim > 0) {
      ClaimOutcome claimed = claim_from_pool(ctx_, cp);
      for (const pool::InstanceRecord& r : claimed.claimed) recent_[r.instance_id] = r;
      rest += claim - static_cast<int>(claimed.claimed.size());
    }
    if (rest <= 0 || !fenced()) return;
    LaunchOrder order;
    order.resource_class = class_name;
    order.types = launch_types(*rc, s_.allowed_instance_types);
    order.usage = s_.usage_class;
    order.on_demand_fallback = s_.on_demand_fallback;
    order.count = rest;
    order.label = set_name_;
    order.token_seed = set_name_ + "-" + random_hex16();  // the label repeats; each launch is new
    order.reg_url = url;
    order.deadline = ctx_.clock.steady_now() + s_.provision_timeout;
    order.jit_configs = [this](const std::vector<std::string>& names) { return make_jits(names); };
    LaunchOutcome launched;
    try {
      launch_instances(ctx_, order, launched);
    } catch (const std::exception& e) {
      spdlog::error("scale set '{}': launching {} instance(s) failed: {}", set_name_, rest, e.what());
    }
    for (const pool::InstanceRecord& r : launched.records) recent_[r.instance_id] = r;
    if (static_cast<int>(launched.records.size()) < rest) {
      spdlog::warn("scale set '{}': {} of {} instance(s) launched{}", set_name_, launched.records.size(), rest,
                   launched.problems.empty() ? "" : " (" + launched.problems.front() + ")");
    }
  }

  // An armed runner beyond the demand: GitHub deletes it only while no job is on its way to it
  // (a runner with a job answers busy, and is kept); then its instance is cleaned.
  void remove_armed(const pool::InstanceRecord& r) {
    if (r.runner_id <= 0) return;
    try {
      // The runner GitHub names as this assignment's, never the record's runner_id alone: a forged
      // id would delete another's runner (common/pool/runner_identity.h).
      auto own = deps_.scale_sets.get_runner_by_name(pool::runner_name(s_.pool, r.instance_id, r.generation));
      if (own && !pool::is_records_runner(r, own->name)) own.reset();
      if (own && deps_.scale_sets.delete_runner(own->id) == github::DeleteOutcome::kBusy) {
        spdlog::info("instance {}: its runner has a job on its way; kept", r.instance_id);
        return;
      }
      pool::Step step = pool::start_drain(r, Secret(), ctx_.now_ms(), s_.timeouts);
      if (ctx_.table.transition(r.instance_id, step.expect, step.change)) {
        spdlog::info("instance {}: armed beyond the demand; its runner removed, cleaning it", r.instance_id);
        wake_agents(ctx_.queue, {r.instance_id});
      }
    } catch (const std::exception& e) {
      spdlog::warn("instance {}: could not remove its armed runner ({})", r.instance_id, e.what());
    }
  }

  Context& ctx_;
  const Settings& s_;
  ServeDeps& deps_;
  const std::string set_name_;
  int64_t set_id_ = 0;
  bool served_ = false;
  std::map<std::string, pool::InstanceRecord> recent_;
  std::string last_why_;
  ScaleSetSample sample_;
  Steady next_metrics_ = std::chrono::steady_clock::now() + kMetricsEvery;

  std::mutex mu_;  // guards the fields below, shared with the session's thread
  std::condition_variable cv_;
  bool woken_ = false;
  std::optional<SessionVerdict> session_end_;  // set by the session's thread: why the session ended
  int failures_in_a_row_ = 0;                  // the session's failures since its last good answer
  int64_t last_good_ms_ = 0;
  SessionDemand demand_;
  std::vector<int64_t> started_ms_;  // queued → started of each job started since the last emission
  std::atomic<bool> stop_listening_{false};
  ServeLease lease_;  // last: its thread wakes the serving loop through the fields above
};

}  // namespace

int run_serve(Context& ctx, ServeDeps& deps) { return Server(ctx, deps).run(); }

}  // namespace runpool::controller
