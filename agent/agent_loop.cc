#include "agent/agent_loop.h"

#include <spdlog/spdlog.h>

#include "common/config.h"
#include "common/pool/runner_fate.h"
#include "common/pool/runner_name.h"
#include "common/pool/transitions.h"

namespace runpool::agent {

using pool::AgentReport;
using pool::AgentSignal;
using pool::InstanceRecord;
using pool::State;

namespace {

std::string clip(const std::string& s, size_t n = 400) { return s.size() > n ? s.substr(0, n) + "…" : s; }

}  // namespace

LoopSettings loop_settings(const AgentSettings& a, const std::string& instance_id, const std::string& version) {
  LoopSettings s;
  s.instance_id = instance_id;
  s.pool = a.pool;
  s.agent_version = version;
  if (a.drain_capable) {
    spdlog::warn("drain_capable is ignored: the drain follows what `bin/Runner.Listener run --help` shows");
  }
  static_cast<LoopTimings&>(s) = a.loop;
  return s;
}

AgentLoop::AgentLoop(LoopSettings settings, pool::StateTable& table, RunnerHost& host, SelfTerminator& compute, Clock& clock,
                     TableHealth& health)
    : s_(std::move(settings)), table_(table), host_(host), compute_(compute), clock_(clock), health_(health) {
  started_ = clock_.steady_now();
  status_ = "starting";
}

int64_t AgentLoop::now_ms() const { return to_epoch_ms(clock_.now()); }
AgentLoop::Steady AgentLoop::steady() const { return clock_.steady_now(); }
Duration AgentLoop::since(Steady t) const { return std::chrono::duration_cast<Duration>(steady() - t); }
std::string AgentLoop::resource_class() const { return record_ ? record_->resource_class : ""; }

void AgentLoop::set_status(const std::string& s) {
  if (s == status_) return;
  status_ = s;
  spdlog::info("status: {}", s);
  if (on_status_) on_status_(s);
}

AgentLoop::Reported AgentLoop::report(const AgentReport& report, const char* what) {
  // Every write of the agent is a sign of life: a record made idle right after its `drained` must
  // not look dead to the next claim because the last heartbeat is older (or never landed).
  AgentReport r = report;
  if (!r.heartbeat_ms) r.heartbeat_ms = now_ms();
  try {
    bool ok = table_.report(s_.instance_id, r);
    health_.ok();
    if (!ok) spdlog::warn("report {} not applied: the record is gone or on another generation", what);
    return ok ? Reported::kApplied : Reported::kNotApplied;
  } catch (const std::exception& e) {
    health_.failed();
    spdlog::warn("report {} failed: {}", what, e.what());
    return Reported::kFailed;
  }
}

void AgentLoop::set_detail(AgentReport& r, int64_t generation, const std::string& detail, bool failure) {
  DetailFacts f;
  f.generation = generation;
  f.detail = detail;
  f.failure = failure;
  if (evidence_generation_ == generation && !evidence_.empty()) {
    f.evidence_generation = evidence_generation_;
    f.evidence = evidence_;
  } else if (record_ && record_->generation == generation) {
    // Written by an earlier agent (before a restart), or not yet known to this one.
    f.evidence = failure_evidence(*record_);
    if (!f.evidence.empty()) f.evidence_generation = generation;
  }
  DetailWrite w = detail_to_write(f);
  if (!w.detail && !detail.empty()) spdlog::info("keeping the failure on record (\"{}\") over \"{}\"", clip(f.evidence, 160), detail);
  if (w.detail) r.signal_detail = clip(*w.detail);
  if (w.evidence) {
    evidence_generation_ = generation;
    evidence_ = clip(*w.detail);
  }
}

void AgentLoop::read_record() {
  try {
    record_ = table_.get(s_.instance_id);
    reachable_ = true;
    health_.ok();
    if (record_) job_bound_ = job_bound_ms(*record_, s_.drain_signal_timeout);
    if (!was_reachable_) spdlog::info("the state table answers again");
    was_reachable_ = true;
  } catch (const std::exception& e) {
    reachable_ = false;
    health_.failed();
    if (was_reachable_) spdlog::warn("cannot read the record: {}", e.what());
    was_reachable_ = false;
  }
}

void AgentLoop::notice(const Notice& n) {
  std::lock_guard<std::mutex> lock(notice_mu_);
  if (!notice_) notice_ = n;
}

bool AgentLoop::settling() const {
  switch (st_.phase) {
    case Phase::kServing: return registered_reported_ != st_.generation;
    case Phase::kDraining:
    case Phase::kStopped: return true;
    default: return false;
  }
}

bool AgentLoop::tick(bool read) {
  pump_listener();
  if (read || !resumed_) read_record();
  if (st_.phase == Phase::kTerminating) return terminating_progress();
  if (!resumed_) {
    if (reachable_) {
      resume();
    } else {
      set_status("waiting for the state table");
      self_terminate();
      return true;
    }
  }
  report_pre_run();
  handle_notice();
  if (self_terminate()) return true;
  Decision d = decide(st_, reachable_ ? record_ : std::nullopt);
  std::string line = std::string(phase_name(st_.phase)) + " → " + std::string(action_name(d.action)) + ": " + d.reason;
  if (line != last_decision_) {
    spdlog::info("{}", line);
    last_decision_ = line;
  }
  try {
    act(d);
    switch (st_.phase) {
      case Phase::kServing: supervise(); break;
      case Phase::kDraining: drain_progress(); break;
      case Phase::kStopped:
        if (as_.failed && !as_.failure_reported) fail_assignment(as_.stop_detail);
        break;
      default: break;
    }
  } catch (const std::exception& e) {
    // A step that failed in an unforeseen way (a file that cannot be removed, …) is retried on
    // the next tick; the loop itself, and with it self-termination, must keep running.
    spdlog::error("{} ({}): {}", action_name(d.action), phase_name(st_.phase), e.what());
  }
  update_status();
  return true;
}

void AgentLoop::resume() {
  resumed_ = true;
  try {
    if (auto id = host_.configured()) {
      // Ours only if named for this pool and this instance; the name carries its generation.
      auto parts = pool::parse_runner_name(s_.pool, id->name);
      configured_generation_.reset();
      if (parts && parts->instance_id == s_.instance_id) configured_generation_ = parts->generation;
      if (configured_generation_) as_.identity = id;
      else configured_foreign_ = true;
    }
  } catch (const std::exception& e) {
    spdlog::warn("the runner root's configuration is unreadable ({}); it will be removed", e.what());
    configured_foreign_ = true;
  }
  st_ = initial_state(record_, configured_generation_);
  st_.pre_run_failure = pre_run_failure_;
  spdlog::info("resuming as {} (generation {}, last served {})", phase_name(st_.phase), st_.generation,
               st_.last_served);
  if (record_ && record_->generation == st_.generation) label_ = record_->label;
  if (st_.phase == Phase::kIdle) {
    // Nothing of ours is configured: whatever is in the runner root or runs as the runner is left over.
    try {
      host_.remove_local();
      host_.clean();
    } catch (const std::exception& e) {
      spdlog::error("cleaning leftovers at start failed: {}", e.what());
    }
  } else {
    // A Listener an earlier agent started (and the job it may run) carries on: this agent follows
    // it as its own. Retiring it while serving could not be made safe: its runner stays matchable,
    // so a job can reach it at the moment it is interrupted.
    try {
      listener_ = host_.adopt_listener();
    } catch (const std::exception& e) {
      spdlog::error("cannot follow the Listener an earlier agent left: {}", e.what());
    }
    if (listener_) {
      spdlog::warn("a Listener left by an earlier agent runs: following it");
      activity_.apply(RunnerEvent{RunnerEvent::kListening, "", ""});  // its start is long past
    }
    if (st_.phase == Phase::kServing) {
      as_.token_taken = !(record_ && record_->generation == st_.generation && !record_->reg_token.empty());
    } else if (st_.phase == Phase::kDraining) {
      drain_.reason = "resumed a drain after a restart";
      drain_.asked_at = steady();
      init_drain_state();
      try {
        drain_.deregistered = !host_.configured().has_value();
      } catch (const std::exception&) {
        drain_.deregistered = false;
      }
    } else if (st_.phase == Phase::kStopped) {
      as_.failed = record_ && pool::agent_reported(*record_, AgentSignal::kFailed);
      as_.failure_reported = as_.failed;
      if (listener_) {
        // A Listener of an assignment that is over (or failed): drained like any other, gracefully,
        // before the cleaning.
        st_.phase = Phase::kDraining;
        drain_.reason = "the Listener of an assignment that is over, left by an earlier agent";
        as_.stopping = true;
        init_drain_state();
      }
    }
  }
  if (record_) {
    AgentReport r;
    r.agent_version = s_.agent_version;
    if (record_->signal_generation != record_->generation || record_->signal == AgentSignal::kNone) {
      r.signal = AgentSignal::kBooted;
      r.generation = record_->generation;
    }
    report(r, "booted");
  }
}

void AgentLoop::act(const Decision& d) {
  switch (d.action) {
    case Action::kWait:
    case Action::kSupervise:
      break;
    case Action::kRegister: do_register(*record_); break;
    case Action::kRefuse: refuse(*record_, d.reason); break;
    case Action::kFinishUnserved: finish_unserved(*record_); break;
    case Action::kDrain:
    case Action::kAbandon:
      begin_drain(d.reason);
      break;
    case Action::kDeregisterAndClean: deregister_and_clean(*record_); break;
    case Action::kCleanLocal: clean_local(d.reason); break;
  }
}

// ---- self-termination

bool AgentLoop::self_terminate() {
  SelfTerminationFacts f;
  f.now_ms = now_ms();
  f.since_start = since(started_);
  if (!reachable_) f.unreachable_for = health_.unreachable_for().value_or(Duration{0});
  else f.record = record_;
  f.busy = busy_.load();
  f.job_bound_ms = job_bound_;
  f.boot_grace = s_.boot_grace;
  f.deadline_grace = s_.deadline_grace;
  f.unreachable_limit = s_.table_unreachable_limit;
  SelfTermination v = decide_self_termination(f);
  if (v.verdict == Verdict::kStay) return false;
  if (v.verdict == Verdict::kDrainFirst) {
    if (drain_first_logged_ != v.reason) spdlog::warn("{}", v.reason);
    drain_first_logged_ = v.reason;
    if (st_.phase == Phase::kServing) begin_drain(v.reason);
    return false;
  }
  terminate(v.reason);
  return true;
}

void AgentLoop::terminate(const std::string& reason) {
  spdlog::error("terminating this instance: {}", reason);
  metrics_.self_terminated(now_ms(), resource_class(), record_ ? record_->generation : st_.generation, reason);
  terminate_reason_ = reason;
  st_.phase = Phase::kTerminating;
  set_status("terminating this instance: " + reason);
  if (reachable_ && record_ && record_->state != State::kTerminated) {
    AgentReport r;
    r.signal = AgentSignal::kFailed;
    r.generation = record_->generation;
    set_detail(r, record_->generation, clip("self-termination: " + reason), true);
    r.busy = busy_.load();
    report(r, "failed (self-termination)");
  }
  terminate_at_ = steady();
  try {
    compute_.terminate_self();
    spdlog::info("TerminateInstances accepted; waiting for the instance to stop");
  } catch (const std::exception& e) {
    spdlog::error("TerminateInstances failed ({}); shutting the OS down instead", e.what());
    os_shutdown_at_ = steady();
    if (!compute_.shutdown_os()) spdlog::error("the OS shutdown could not be started either");
  }
}

bool AgentLoop::terminating_progress() {
  if (!os_shutdown_at_) {
    if (since(terminate_at_) < s_.terminate_wait) return true;
    spdlog::error("still running {} after TerminateInstances; shutting the OS down", format_duration(s_.terminate_wait));
    os_shutdown_at_ = steady();
    if (!compute_.shutdown_os()) spdlog::error("the OS shutdown could not be started");
    return true;
  }
  return since(*os_shutdown_at_) < s_.terminate_wait;
}

// ---- notices

void AgentLoop::handle_notice() {
  std::optional<Notice> n;
  {
    std::lock_guard<std::mutex> lock(notice_mu_);
    n = notice_;
  }
  if (!n) return;
  if (!st_.interrupted) {
    st_.interrupted = true;
    spdlog::warn("interruption notice: {}; draining and taking no new assignment", n->detail);
    if (st_.phase == Phase::kServing) begin_drain("interruption notice: " + n->detail);
  }
  if (!notice_reported_ && reachable_ && record_) {
    AgentReport r;
    r.signal = AgentSignal::kInterrupted;
    r.generation = record_->generation;
    set_detail(r, record_->generation, clip(n->detail), false);
    if (report(r, "interrupted") != Reported::kFailed) notice_reported_ = true;
  }
}

// ---- assignments

void AgentLoop::reset_assignment() {
  as_ = AssignmentProgress{};
  drain_ = DrainProgress{};
  activity_ = RunnerActivity{};
  job_track_ = JobTrack{};
}

void AgentLoop::do_register(const InstanceRecord& r) {
  const int64_t g = r.generation;
  reset_assignment();
  assignment_seen_ = steady();
  label_ = r.label;
  set_status("registering a runner for " + r.label + " (generation " + std::to_string(g) + ")");
  try {
    host_.prepare(r.job_privileges);
  } catch (const std::exception& e) {
    spdlog::error("the runner root is not usable: {}", e.what());
    refuse(r, std::string("runner root: ") + e.what());
    return;
  }
  Registration reg{r.reg_url, r.label, pool::runner_name(s_.pool, s_.instance_id, g), r.reg_token};
  const Steady start = steady();
  CommandResult res;
  for (int attempt = 1;; ++attempt) {
    res = host_.configure(reg);
    if (!res.ok()) {
      spdlog::warn("config.sh failed (attempt {}, {}): {}", attempt,
                   res.timed_out ? "timed out" : "exit " + std::to_string(res.exit_code), clip(res.output));
    }
    RegisterFacts f;  // three runs at most
    f.attempt = attempt;
    f.ok = res.ok();
    f.timed_out = res.timed_out;
    f.elapsed = since(start);
    f.bound = s_.config_sh_timeout;
    f.backoff = s_.restart_backoff;
    RegisterDecision d = register_step(f);
    if (d.step != RegisterStep::kRetry) break;
    clock_.sleep_for(d.pause);
  }
  st_.phase = Phase::kStopped;
  st_.generation = g;
  if (!res.ok()) {
    try {
      host_.remove_local();
    } catch (const std::exception&) {
    }
    fail_assignment("registration failed (" + std::string(res.timed_out ? "timed out" : "exit " + std::to_string(res.exit_code)) +
                    "): " + clip(res.output, 300));
    return;
  }
  try {
    as_.identity = host_.configured();
    if (!as_.identity) throw RunnerFileError("config.sh succeeded but wrote no .runner");
  } catch (const std::exception& e) {
    fail_assignment(std::string("registration left no usable .runner: ") + e.what());
    return;
  }
  spdlog::info("registered runner {} (id {}) for {}", as_.identity->name, as_.identity->id, r.label);
  st_.phase = Phase::kServing;
  take_token();
}

void AgentLoop::refuse(const InstanceRecord& r, const std::string& reason) {
  if (refused_generation_ == r.generation) return;
  AgentReport rep;
  rep.signal = AgentSignal::kFailed;
  rep.generation = r.generation;
  set_detail(rep, r.generation, clip(reason), true);
  if (report(rep, "failed (refused)") != Reported::kFailed) refused_generation_ = r.generation;
}

void AgentLoop::fail_assignment(const std::string& detail) {
  spdlog::error("assignment generation {} failed: {}", st_.generation, detail);
  as_.failed = true;
  as_.stop_detail = detail;
  st_.phase = Phase::kStopped;
  as_.stopping = true;
  if (listener_) listener_->interrupt();
  AgentReport r;
  r.signal = AgentSignal::kFailed;
  r.generation = st_.generation;
  set_detail(r, st_.generation, clip(detail), true);
  r.busy = false;
  if (report(r, "failed") != Reported::kFailed) as_.failure_reported = true;
  try {
    if (!listener_) host_.end_user_processes();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
  }
}

void AgentLoop::finish_unserved(const InstanceRecord& r) {
  try {
    host_.remove_local();
    const Steady cleaning = steady();
    host_.clean();
    metrics_.cleaned(now_ms(), r.resource_class, r.generation, since(cleaning));
  } catch (const std::exception& e) {
    spdlog::error("cleaning failed: {}", e.what());
    return;
  }
  AgentReport rep;
  rep.signal = AgentSignal::kDrained;
  rep.generation = r.generation;
  rep.take_remove_token = true;
  rep.busy = false;
  set_detail(rep, r.generation, "no runner was serving this assignment", false);
  if (report(rep, "drained (unserved)") == Reported::kFailed) return;
  st_.last_served = std::max(st_.last_served, r.generation);
}

void AgentLoop::deregister_and_clean(const InstanceRecord& r) {
  const int64_t g = st_.generation;
  if (listener_) return;  // still stopping
  if (!drain_.deregistered) {
    std::optional<RunnerIdentity> id;
    try {
      id = host_.configured();
    } catch (const std::exception& e) {
      spdlog::warn("unreadable .runner: {}", e.what());
    }
    if (!id) {
      drain_.deregistered = true;
    } else {
      const bool has_token = usable_remove_token(r);
      if (has_token && drain_.token_returned_at) {
        // The controller wrote a fresh token: the refusal is behind us.
        drain_.token_returned_at.reset();
        drain_.last_remove_failure.reset();
        drain_.remove_failed_at.reset();
      }
      DeregisterFacts f;
      f.has_remove_token = has_token;
      f.attempts = drain_.remove_attempts;
      f.max_attempts = s_.deregister_attempts;
      f.last_failure = drain_.last_remove_failure;
      if (drain_.remove_failed_at) f.since_last_attempt = since(*drain_.remove_failed_at);
      f.retry_interval = 2 * s_.poll_interval;
      if (drain_.token_returned_at) f.awaiting_token_for = since(*drain_.token_returned_at);
      f.token_wait = s_.config_sh_timeout;
      DeregisterDecision d = deregister_step(f);
      switch (d.step) {
        case DeregisterStep::kWait:
          set_status("deregistering runner " + id->name + ": " + d.reason);
          return;
        case DeregisterStep::kReturnToken:
          spdlog::warn("{}", d.reason);
          return_remove_token();
          return;
        case DeregisterStep::kRemove: {
          set_status("deregistering runner " + id->name + (drain_.remove_attempts ? ": " + d.reason : ""));
          CommandResult res = host_.remove(r.remove_token);
          if (res.ok()) {
            spdlog::info("deregistered runner {} (id {})", id->name, id->id);
            drain_.deregistered = true;
            drain_.deregister_detail = "runner " + id->name + " (id " + std::to_string(id->id) + ") deregistered";
            break;
          }
          remove_failed(res);
          return;  // the next tick decides: retry, ask for a token, or give up
        }
        case DeregisterStep::kGiveUp: {
          // Left registered: `drained` says so, and the controller deletes the runner by the
          // record's runner_id before the instance goes or returns to the pool.
          std::string why = d.reason;
          if (!drain_.last_remove_output.empty()) why += ": " + clip(drain_.last_remove_output, 200);
          drain_.deregister_detail = pool::runner_left_detail(id->name, id->id, why);
          drain_.deregister_failed = true;
          spdlog::error("{}", drain_.deregister_detail);
          host_.remove_local();
          drain_.deregistered = true;
          break;
        }
      }
    }
  }
  if (!as_.cleaned) {
    if (as_.clean_failed_at && since(*as_.clean_failed_at) < s_.cleanup_timeout) return;
    set_status("cleaning up after generation " + std::to_string(g));
    try {
      const Steady cleaning = steady();
      host_.clean();
      metrics_.cleaned(now_ms(), r.resource_class, g, since(cleaning));
      as_.cleaned = true;
    } catch (const std::exception& e) {
      as_.clean_failed_at = steady();
      if (!as_.failed) fail_assignment(std::string("cleaning failed: ") + e.what());
      return;
    }
  }
  AgentReport rep;
  rep.signal = AgentSignal::kDrained;
  rep.generation = g;
  rep.take_remove_token = true;
  rep.busy = false;
  set_detail(rep, g, clip(drain_.deregister_detail), drain_.deregister_failed);
  if (report(rep, "drained") == Reported::kFailed) return;  // cleaned; the report is retried on the next tick
  if (drain_.deregister_failed) spdlog::warn("generation {} drained and cleaned; its runner is left to the controller", g);
  else spdlog::info("generation {} drained, deregistered and cleaned", g);
  if (drain_.asked_at) metrics_.drained(now_ms(), r.resource_class, g, since(*drain_.asked_at));
  finish_assignment();
}

void AgentLoop::clean_local(const std::string& reason) {
  if (listener_) return;
  if (as_.clean_failed_at && since(*as_.clean_failed_at) < s_.cleanup_timeout) return;
  spdlog::info("cleaning up generation {} locally: {}", st_.generation, reason);
  try {
    if (auto id = host_.configured()) {
      spdlog::warn("runner {} (id {}) stays registered without a remove token; the controller removes it", id->name,
                   id->id);
    }
  } catch (const std::exception&) {
  }
  try {
    host_.remove_local();
    const Steady cleaning = steady();
    host_.clean();
    metrics_.cleaned(now_ms(), resource_class(), st_.generation, since(cleaning));
  } catch (const std::exception& e) {
    as_.clean_failed_at = steady();
    spdlog::error("cleaning failed: {}", e.what());
    return;
  }
  finish_assignment();
}

void AgentLoop::finish_assignment() {
  st_.last_served = std::max(st_.last_served, st_.generation);
  st_.phase = Phase::kIdle;
  reset_assignment();
  label_.clear();
  set_busy(false);
}

void AgentLoop::update_status() {
  const std::string gen = " (generation " + std::to_string(st_.generation) + ")";
  const std::string what = label_.empty() ? "generation " + std::to_string(st_.generation) : label_ + gen;
  switch (st_.phase) {
    case Phase::kIdle:
      if (!st_.pre_run_failure.empty()) set_status("idle, serving nothing on this boot: " + clip(st_.pre_run_failure, 160));
      else if (st_.interrupted) set_status("idle, interrupted: taking no new assignment");
      else set_status("idle, waiting for an assignment");
      break;
    case Phase::kServing:
      if (!listener_ && as_.restart_at) set_status("serving " + what + ", restarting the Listener");
      else if (!listener_ || activity_.phase() == RunnerPhase::kStarting) set_status("serving " + what + ", starting the Listener");
      else if (busy_.load()) set_status("serving " + what + ", busy" + (job_track_.job.empty() ? "" : ": " + job_track_.job));
      else set_status("serving " + what + ", idle");
      break;
    case Phase::kDraining:
      set_status("draining " + what + " (" + std::string(strategy_name(drain_.strategy)) + "), " +
                 (busy_.load() ? "busy" : "idle") + ": " + drain_.reason);
      break;
    case Phase::kStopped:
      if (reachable_ && record_ && record_->generation == st_.generation && record_->state == State::kDraining) {
        set_status("runner stopped for " + what + ", deregistering and cleaning");
      } else {
        set_status("runner stopped for " + what + (as_.stop_detail.empty() ? "" : ": " + clip(as_.stop_detail, 120)) +
                   ", waiting for the controller");
      }
      break;
    case Phase::kTerminating:
      break;
  }
}

}  // namespace runpool::agent
