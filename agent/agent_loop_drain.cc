// Draining the runner: the strategy, the steps drain_step() decides, and the remove token.
#include <spdlog/spdlog.h>

#include "agent/agent_loop.h"
#include "common/config.h"

namespace runpool::agent {

using pool::AgentReport;
using pool::AgentSignal;
using pool::InstanceRecord;
using pool::State;

const std::optional<RunnerDrainSupport>& AgentLoop::runner_drain_support() {
  if (!drain_support_asked_) {
    drain_support_asked_ = true;
    drain_support_ = host_.drain_support();
    spdlog::info("runner drain inputs: {}", !drain_support_ ? std::string("unknown (run --help failed)")
                                            : std::string(drain_support_->drain_file ? "--drain-file " : "") +
                                                  (drain_support_->drain_on_sigusr1 ? "--drain-on-sigusr1" : "") +
                                                  (!drain_support_->drain_file && !drain_support_->drain_on_sigusr1
                                                       ? "none (a stock runner)" : ""));
  }
  return drain_support_;
}

void AgentLoop::init_drain_state() {
  // The runner's own drain input only where its Listener was started with it (an ephemeral runner
  // whose build lists it); persistent runners refuse it: the stock drain, whatever the runner can
  // do. The controller removed the runner's labels at the drain request; the stock drain waits out
  // one long poll from here.
  runner_drain_support();  // logged once, whichever drain this is
  drain_.strategy = as_.drain_input ? DrainStrategy::kDrainSignal : DrainStrategy::kStock;
  if (drain_.strategy == DrainStrategy::kDrainSignal && listener_) {
    spdlog::info("SIGUSR1 to the Listener: it takes no new job and exits after the one in hand");
    listener_->drain();
  }
  drain_.step_clock = steady();
  drain_.interrupt_at.reset();
  drain_.remove_failed_at.reset();
  drain_.last_step.clear();
}

void AgentLoop::begin_drain(const std::string& reason) {
  if (st_.phase != Phase::kServing) return;
  drain_.asked_at = steady();
  spdlog::info("draining generation {}: {}", st_.generation, reason);
  st_ = advance(st_, PhaseEvent::kDrainBegun);
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

// A process a job left beside the Listener runs as the runner's user and can write job requests
// into its logs, for ever: the drain would wait on them. It is ended once no job is in hand, and
// the requests told until then that no Worker followed are settled.
void AgentLoop::end_detached_processes() {
  if (!listener_ || drain_.deregistered) return;
  int ended = 0;
  try {
    ended = host_.end_detached();
  } catch (const std::exception& e) {
    spdlog::warn("{}", e.what());
    return;
  }
  if (ended == 0) return;
  spdlog::warn("ended {} processes jobs left running beside the idle Listener; job requests told meanwhile without "
               "a Worker are over", ended);
  for (const auto& e : listener_->poll_events()) observe(e);  // what they wrote before they ended
  job_track_ = settle_unconfirmed_request(job_track_);
  update_busy();
}

void AgentLoop::drain_progress() {
  end_detached_processes();
  DrainFacts f = drain_facts();
  f.listener_running = listener_ != nullptr;
  f.has_remove_token = remove_token_available();
  f.just_in_time = as_.ephemeral;
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
      st_ = advance(st_, PhaseEvent::kListenerGone);
      break;
  }
}

}  // namespace runpool::agent
