// The Listener's side of the loop: supervising it (or the one an earlier agent left running),
// reading what it does, and draining it.
#include <spdlog/spdlog.h>

#include "common/config.h"

#include "agent/agent_loop.h"

namespace runpool::agent {

using pool::AgentReport;
using pool::AgentSignal;
using pool::State;

void AgentLoop::set_busy(bool b) {
  if (!busy_.exchange(b) && b) metrics_.job_seen_busy(now_ms(), resource_class(), st_.generation);
  if (reported_busy_ == b) return;
  // Promptly, not on the next heartbeat: the controller's scale-down trusts this flag.
  AgentReport r;
  r.busy = b;
  if (report(r, b ? "busy" : "idle") != Reported::kFailed) reported_busy_ = b;
}

void AgentLoop::pump_listener() {
  if (!listener_) return;
  for (const auto& e : listener_->poll_events()) observe(e);
  if (auto ex = listener_->exit_status()) {
    for (const auto& e : listener_->poll_events()) observe(e);
    std::string tail = listener_->output_tail();
    listener_.reset();
    on_listener_exit(*ex, tail);
    return;
  }
  update_busy();
}

void AgentLoop::observe(const RunnerEvent& e) {
  activity_.apply(e);
  const Duration now = std::chrono::duration_cast<Duration>(steady().time_since_epoch());
  switch (e.kind) {
    case RunnerEvent::kJobRequested:
      // The perf log's line names no request; _diag's names its id.
      job_track_ = apply_job_signal(job_track_, e.job.empty() ? JobSignal::kRequested : JobSignal::kAcknowledged, now);
      break;
    case RunnerEvent::kJobStarted:
      job_track_ = apply_job_signal(job_track_, JobSignal::kRunning, now, e.job);
      break;
    case RunnerEvent::kJobCompleted:
      job_track_ = apply_job_signal(job_track_, JobSignal::kCompleted, now);
      break;
    default:
      break;
  }
}

void AgentLoop::update_busy() {
  BusyFacts f;
  f.track = job_track_;
  f.now = std::chrono::duration_cast<Duration>(steady().time_since_epoch());
  f.job_start_bound = s_.job_start_bound;
  // A Worker means busy even when no line told of its job (an agent that started mid-job).
  f.worker_running = host_.worker_running();
  BusyDecision d = decide_busy(f);
  if (!d.reason.empty()) spdlog::warn("busy ends: {}", d.reason);
  job_track_ = d.track;
  set_busy(d.busy);
}

void AgentLoop::on_listener_exit(const ExitStatus& status, const std::string& tail) {
  ExitDecision d = after_listener_exit(status, as_.stopping, as_.restarts, s_.max_restarts, s_.restart_backoff);
  activity_ = RunnerActivity{};
  job_track_ = JobTrack{};
  set_busy(false);
  switch (d.what) {
    case AfterExit::kStopped:
      spdlog::info("{}", d.reason);
      break;
    case AfterExit::kRestart:
      spdlog::warn("{} in {} ({}/{}){}", d.reason, format_duration(d.delay), as_.restarts + 1, s_.max_restarts,
                   tail.empty() ? "" : ": " + tail);
      ++as_.restarts;
      as_.restart_at = steady() + d.delay;
      try {
        host_.end_user_processes();  // what it left (a Worker of a lost job) must not outlive it
      } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
      }
      break;
    case AfterExit::kFail:
      fail_assignment(d.reason + (tail.empty() ? "" : ": " + tail));
      break;
  }
}

void AgentLoop::take_token() {
  if (as_.token_taken) return;
  if (reachable_ && record_ && record_->generation == st_.generation && record_->reg_token.empty() &&
      as_.identity && record_->runner_id == as_.identity->id) {
    as_.token_taken = true;
    return;
  }
  AgentReport r;
  r.take_reg_token = true;
  r.generation = st_.generation;
  if (as_.identity) {
    r.runner_id = as_.identity->id;
    r.runner_name = as_.identity->name;
  }
  if (report(r, "take_reg_token") == Reported::kApplied) as_.token_taken = true;
}

void AgentLoop::supervise() {
  if (!as_.token_taken) take_token();
  if (!as_.token_taken) return;  // the Listener never starts while the token is readable in the record
  if (!listener_) {
    if (as_.restart_at && steady() < *as_.restart_at) return;
    try {
      listener_ = host_.start_listener();
      as_.restart_at.reset();
      activity_ = RunnerActivity{};
      job_track_ = JobTrack{};
    } catch (const std::exception& e) {
      if (as_.restarts >= s_.max_restarts) {
        fail_assignment(std::string("cannot start the Listener: ") + e.what());
        return;
      }
      spdlog::error("cannot start the Listener: {}", e.what());
      ++as_.restarts;
      as_.restart_at = steady() + s_.restart_backoff;
    }
    return;
  }
  const bool listening = activity_.phase() != RunnerPhase::kStarting;
  // What the instance runs, for `runpoolctl retire --runner-version`: once per Listener version.
  if (reachable_ && !activity_.runner_version().empty() && activity_.runner_version() != reported_runner_version_) {
    AgentReport r;
    r.runner_version = activity_.runner_version();
    if (report(r, "runner_version") == Reported::kApplied) reported_runner_version_ = *r.runner_version;
  }
  if (reachable_ && record_ && registered_reported_ != st_.generation &&
      should_report_registered(*record_, st_.generation, listening)) {
    if (!as_.identity) {
      try {
        as_.identity = host_.configured();
      } catch (const std::exception&) {
      }
    }
    AgentReport r;
    r.signal = AgentSignal::kRegistered;
    r.generation = st_.generation;
    if (as_.identity) {
      r.runner_id = as_.identity->id;
      r.runner_name = as_.identity->name;
    }
    if (report(r, "registered") == Reported::kApplied) {
      registered_reported_ = st_.generation;
      if (assignment_seen_) metrics_.registered(now_ms(), resource_class(), st_.generation, since(*assignment_seen_));
      assignment_seen_.reset();
      spdlog::info("reported registered for generation {}", st_.generation);
    }
  }
}

void AgentLoop::init_drain_state() {
  if (!drain_support_asked_) {
    drain_support_asked_ = true;
    drain_support_ = host_.drain_support();
    spdlog::info("runner drain inputs: {}", !drain_support_ ? std::string("unknown (run --help failed)")
                                            : std::string(drain_support_->drain_file ? "--drain-file " : "") +
                                                  (drain_support_->drain_on_sigusr1 ? "--drain-on-sigusr1" : "") +
                                                  (!drain_support_->drain_file && !drain_support_->drain_on_sigusr1
                                                       ? "none (a stock runner)" : ""));
  }
  // This agent registers persistent runners (config.sh without --ephemeral), which a runner's drain
  // inputs refuse: the stock drain, whatever the runner can do. The controller removed the
  // runner's labels at the drain request; the stock drain waits out one long poll from here.
  drain_.strategy = choose_drain_strategy(drain_support_, /*ephemeral=*/false);
  drain_.step_clock = steady();
  drain_.interrupt_at.reset();
  drain_.remove_failed_at.reset();
  drain_.last_step.clear();
}

void AgentLoop::begin_drain(const std::string& reason) {
  if (st_.phase != Phase::kServing) return;
  drain_.asked_at = steady();
  spdlog::info("draining generation {}: {}", st_.generation, reason);
  st_.phase = Phase::kDraining;
  drain_.reason = reason;
  as_.stopping = true;
  as_.restart_at.reset();
  init_drain_state();
}

bool AgentLoop::usable_remove_token(const pool::InstanceRecord& r) const {
  return !r.remove_token.empty() && r.remove_token.reveal() != drain_.refused_token;
}

bool AgentLoop::remove_token_available() const {
  return reachable_ && record_ && record_->generation == st_.generation && record_->state == State::kDraining &&
         usable_remove_token(*record_);
}

void AgentLoop::remove_failed(const CommandResult& res) {
  ++drain_.remove_attempts;
  drain_.remove_failed_at = steady();
  drain_.last_remove_failure = classify_remove_failure(res.output, res.timed_out);
  drain_.last_remove_output = res.timed_out ? "config.sh remove timed out" : res.output;
  spdlog::warn("config.sh remove failed ({}, {}; attempt {}/{}): {}", remove_failure_name(*drain_.last_remove_failure),
               res.timed_out ? "timed out" : "exit " + std::to_string(res.exit_code), drain_.remove_attempts,
               s_.deregister_attempts, res.output.substr(0, 300));
}

// A refused remove token (it lives one hour; a job can outlast it) is taken out of the record: the
// controller, waiting on the drain, writes a fresh one in its place.
bool AgentLoop::return_remove_token() {
  if (!record_) return false;
  drain_.refused_token = record_->remove_token.reveal();
  AgentReport r;
  r.generation = st_.generation;
  r.take_remove_token = true;
  if (report(r, "take_remove_token (refused)") != Reported::kApplied) return false;
  drain_.token_returned_at = steady();
  return true;
}

void AgentLoop::deregister_during_drain() {
  set_status("deregistering the runner while it is idle (stock drain)");
  CommandResult res = host_.remove(record_->remove_token);
  if (res.ok()) {
    spdlog::info("deregistered the runner; waiting for the Listener to notice");
    drain_.deregistered = true;
    drain_.deregistered_at = steady();
    drain_.deregister_detail = "runner deregistered during the drain";
    return;
  }
  remove_failed(res);
  // Refused: handed back; without a token the drain stops the Listener, and the deregistration
  // after it waits for the fresh one.
  if (drain_.last_remove_failure == RemoveFailure::kTokenRefused) return_remove_token();
}

// The drain's inputs this loop keeps: the strategy, busy, and the drain's clocks and bounds.
DrainFacts AgentLoop::drain_facts() const {
  DrainFacts f;
  f.strategy = drain_.strategy;
  f.busy = busy_.load();
  if (drain_.interrupt_at) f.since_interrupt = since(*drain_.interrupt_at);
  f.since_drain_start = since(drain_.step_clock);
  f.drain_timeout = s_.drain_signal_timeout;
  f.stock_idle_wait = s_.stock_idle_wait;
  f.poll_wait = s_.drain_poll_wait;
  f.stop_timeout = s_.cleanup_timeout;
  f.remove_retry = 2 * s_.poll_interval;
  return f;
}

void AgentLoop::drain_progress() {
  DrainFacts f = drain_facts();
  f.listener_running = listener_ != nullptr;
  f.has_remove_token = remove_token_available();
  f.deregistered = drain_.deregistered;
  f.remove_exhausted = drain_.remove_attempts >= s_.deregister_attempts;
  if (drain_.remove_failed_at) f.since_remove_attempt = since(*drain_.remove_failed_at);
  if (drain_.deregistered_at) f.since_deregistered = since(*drain_.deregistered_at);
  DrainStep step = drain_step(f);
  std::string name(drain_step_name(step));
  if (name != drain_.last_step) {
    spdlog::info("drain ({}): {}", strategy_name(drain_.strategy), name);
    drain_.last_step = name;
  }
  switch (step) {
    case DrainStep::kWait:
      break;
    case DrainStep::kFallBackToStock:
      spdlog::warn("the Listener ignored its drain signal for {} while idle: draining it as a stock runner",
                   format_duration(s_.drain_signal_timeout));
      drain_.strategy = DrainStrategy::kStock;
      break;
    case DrainStep::kDeregister:
      deregister_during_drain();
      break;
    case DrainStep::kInterrupt:
      spdlog::info("sending SIGINT to the idle Listener");
      if (listener_) listener_->interrupt();
      drain_.interrupt_at = steady();
      break;
    case DrainStep::kKill:
      spdlog::warn("the Listener did not stop {} after SIGINT: SIGKILL", format_duration(s_.cleanup_timeout));
      if (listener_) listener_->kill();
      break;
    case DrainStep::kListenerGone:
      spdlog::info("the runner has stopped; generation {} goes on to deregistration and cleaning", st_.generation);
      st_.phase = Phase::kStopped;
      break;
  }
}

}  // namespace runpool::agent
