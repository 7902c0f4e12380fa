// The tick: read the record, resume after a start, decide (decisions.h), act; the record's
// reads and the agent's reports; the status line.
#include "agent/agent_loop.h"

#include <spdlog/spdlog.h>

#include "common/config.h"
#include "common/pool/runner_name.h"
#include "common/pool/transitions.h"

namespace runpool::agent {

using pool::AgentReport;
using pool::AgentSignal;
using pool::InstanceRecord;
using pool::State;

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

std::string AgentLoop::clip(const std::string& s, size_t n) { return s.size() > n ? s.substr(0, n) + "…" : s; }

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
  if (written_.evidence_generation == generation && !written_.evidence.empty()) {
    f.evidence_generation = written_.evidence_generation;
    f.evidence = written_.evidence;
  } else if (record_ && record_->generation == generation) {
    // Written by an earlier agent (before a restart), or not yet known to this one.
    f.evidence = failure_evidence(*record_);
    if (!f.evidence.empty()) f.evidence_generation = generation;
  }
  DetailWrite w = detail_to_write(f);
  if (!w.detail && !detail.empty()) spdlog::info("keeping the failure on record (\"{}\") over \"{}\"", clip(f.evidence, 160), detail);
  if (w.detail) r.signal_detail = clip(*w.detail);
  if (w.evidence) {
    written_.evidence_generation = generation;
    written_.evidence = clip(*w.detail);
  }
}

void AgentLoop::read_record() {
  try {
    record_ = table_.get(s_.instance_id);
    open_sealed();
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
  // A spot interruption after a rebalance recommendation replaces it: its job in hand is lost.
  if (!notice_ || (notice_->kind == Notice::kRebalance && n.kind == Notice::kSpotInterruption)) notice_ = n;
}

bool AgentLoop::settling() const {
  switch (st_.phase) {
    case Phase::kIdle: return reg_.generation != 0;  // config.sh is run again after a pause
    case Phase::kServing: return written_.registered_generation != st_.generation;
    case Phase::kDraining:
    case Phase::kStopped: return true;
    default: return false;
  }
}

bool AgentLoop::tick(bool read) {
  pump_listener();
  if (read || !start_.resumed) read_record();
  if (st_.phase == Phase::kTerminating) return terminating_progress();
  if (!start_.resumed) {
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
  start_.resumed = true;
  try {
    if (auto id = host_.configured()) {
      // Ours only if named for this pool and this instance; the name carries its generation.
      auto parts = pool::parse_runner_name(s_.pool, id->name);
      start_.configured_generation.reset();
      if (parts && parts->instance_id == s_.instance_id) start_.configured_generation = parts->generation;
      if (start_.configured_generation) {
        as_.identity = id;
        as_.ephemeral = id->ephemeral;
      }
      else start_.configured_foreign = true;
    }
  } catch (const std::exception& e) {
    spdlog::warn("the runner root's configuration is unreadable ({}); it will be removed", e.what());
    start_.configured_foreign = true;
  }
  // Nothing configured: an ephemeral runner may have ended its one job while no agent ran.
  std::optional<int64_t> ended_ephemeral;
  if (!start_.configured_generation && !start_.configured_foreign) {
    try {
      ended_ephemeral = ended_ephemeral_generation(record_, host_.ephemeral_mark());
    } catch (const std::exception& e) {
      spdlog::warn("cannot read the ephemeral runner's mark: {}", e.what());
    }
  }
  ResumeFacts f;
  f.state = initial_state(record_, start_.configured_generation ? start_.configured_generation : ended_ephemeral);
  f.record = record_;
  if (f.state.phase != Phase::kIdle) {
    try {
      listener_ = host_.adopt_listener();
    } catch (const std::exception& e) {
      spdlog::error("cannot follow the Listener an earlier agent left: {}", e.what());
    }
    f.listener_left = listener_ != nullptr;
  }
  const Resumption r = resume_step(f);
  st_ = r.state;
  st_.pre_run_failure = pre_run_.failure;
  spdlog::info("resuming as {} (generation {}, last served {})", phase_name(st_.phase), st_.generation,
               st_.last_served);
  if (record_ && record_->generation == st_.generation) as_.label = record_->label;
  if (r.clean_leftovers) {
    try {
      host_.remove_local();
      host_.clean();
    } catch (const std::exception& e) {
      spdlog::error("cleaning leftovers at start failed: {}", e.what());
    }
  }
  if (listener_) {
    spdlog::warn("a Listener left by an earlier agent runs: following it");
    activity_.apply(RunnerEvent{RunnerEvent::kListening, "", ""});  // its start is long past
  }
  as_.token_taken = r.token_taken;
  as_.failed = as_.failure_reported = r.failure_reported;
  if (ended_ephemeral && !listener_ && st_.phase == Phase::kServing) {
    // As when this agent sees its ephemeral runner exit: left to the controller's drain, which
    // finds nothing to deregister, cleans and returns the instance.
    as_.ephemeral = true;
    as_.stopping = true;
    as_.stop_detail = "the ephemeral runner's assignment ended while no agent ran";
    st_ = advance(st_, PhaseEvent::kRunnerDone);
    spdlog::info("{} (generation {})", as_.stop_detail, st_.generation);
  }
  if (!r.drain_reason.empty()) {
    drain_.reason = r.drain_reason;
    drain_.asked_at = steady();
    as_.stopping = true;
    init_drain_state();
    drain_.deregistered = !start_.configured_generation.has_value();
  }
  if (record_) {
    AgentReport rep;
    rep.agent_version = s_.agent_version;
    if (r.report_booted) {
      rep.signal = AgentSignal::kBooted;
      rep.generation = record_->generation;
    }
    report(rep, "booted");
  }
}

void AgentLoop::act(const Decision& d) {
  // A registration under way ends when the record no longer asks for it (finish_unserved removes
  // what it left).
  if (reg_.generation != 0 && d.action != Action::kRegister && d.action != Action::kFinishUnserved) {
    reg_ = RegistrationProgress{};
  }
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
    case Action::kReadyNext: ready_next(*record_); break;
  }
}

void AgentLoop::update_status() {
  const std::string gen = " (generation " + std::to_string(st_.generation) + ")";
  const std::string what = as_.label.empty() ? "generation " + std::to_string(st_.generation) : as_.label + gen;
  switch (st_.phase) {
    case Phase::kIdle:
      if (reg_.next_at) {
        set_status("registering a runner for " + as_.label + " (generation " + std::to_string(reg_.generation) +
                   "): config.sh attempt " + std::to_string(reg_.attempts) + " failed (" + reg_.last_failure +
                   "); trying again");
      } else if (!st_.pre_run_failure.empty()) set_status("idle, serving nothing on this boot: " + clip(st_.pre_run_failure, 160));
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
