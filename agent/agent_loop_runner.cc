// The Listener's side of the loop: supervising it (or the one an earlier agent left running),
// reading what it does, and busy from that.
#include <spdlog/spdlog.h>

#include "agent/agent_loop.h"
#include "common/config.h"

namespace runpool::agent {

using pool::AgentReport;
using pool::AgentSignal;
using pool::InstanceRecord;
using pool::State;

void AgentLoop::set_busy(bool b) {
  if (!busy_.exchange(b) && b) metrics_.job_seen_busy(now_ms(), resource_class(), st_.generation);
  if (written_.busy == b) return;
  // Promptly, not on the next heartbeat: the controller's scale-down trusts this flag.
  AgentReport r;
  r.busy = b;
  if (report(r, b ? "busy" : "idle") != Reported::kFailed) written_.busy = b;
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
      if (spot_job_ == "-" && !e.job.empty()) spot_job_ = e.job;  // the job in hand at the notice, named now
      break;
    case RunnerEvent::kJobCompleted:
      job_track_ = apply_job_signal(job_track_, JobSignal::kCompleted, now);
      if (!spot_job_.empty() && spot_result_.empty()) spot_result_ = e.result.empty() ? "completed" : e.result;
      break;
    case RunnerEvent::kVersion:
      as_.runner_version = e.result;
      break;
    case RunnerEvent::kUpdateRequested:
      as_.update_to = e.result;
      spdlog::warn("GitHub asks the runner to update itself to {}", e.result);
      break;
    case RunnerEvent::kUpdateFailed:
      on_update_failed(e.result);
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
  f.job_completion_wait = s_.job_completion_wait;
  // A Worker means busy even when no line told of its job (an agent that started mid-job).
  f.worker_running = host_.worker_running();
  BusyDecision d = decide_busy(f);
  if (!d.reason.empty()) spdlog::warn("busy ends: {}", d.reason);
  job_track_ = d.track;
  set_busy(d.busy);
}

void AgentLoop::on_listener_exit(const ExitStatus& status, const std::string& tail) {
  if (!as_.stopping && is_update_exit(status)) {
    on_update_exit(status, tail);
    return;
  }
  ExitDecision d =
      after_listener_exit(status, as_.stopping, as_.restarts, s_.max_restarts, s_.restart_backoff, as_.ephemeral);
  activity_ = RunnerActivity{};
  job_track_ = JobTrack{};
  set_busy(false);
  switch (d.what) {
    case AfterExit::kStopped:
      spdlog::info("{}", d.reason);
      break;
    case AfterExit::kDone:
      // Left to the controller's drain, which finds nothing to deregister, cleans and returns it.
      spdlog::info("{}", d.reason);
      st_ = advance(st_, PhaseEvent::kRunnerDone);
      as_.stopping = true;
      as_.stop_detail = d.reason;
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
      record_->jit_config.empty() && (as_.ephemeral || (as_.identity && record_->runner_id == as_.identity->id))) {
    as_.token_taken = true;
    return;
  }
  AgentReport r;
  r.take_reg_token = !as_.ephemeral;
  r.take_jit_config = as_.ephemeral;
  r.generation = st_.generation;
  if (as_.identity) {
    r.runner_id = as_.identity->id;
    r.runner_name = as_.identity->name;
  }
  if (report(r, as_.ephemeral ? "take_jit_config" : "take_reg_token") == Reported::kApplied) as_.token_taken = true;
}

void AgentLoop::supervise() {
  if (!as_.token_taken) take_token();
  if (!as_.token_taken) return;  // the Listener never starts while the token is readable in the record
  if (!listener_) {
    if (as_.update_wait_until && !await_update()) return;
    if (as_.restart_at && steady() < *as_.restart_at) return;
    if (as_.ephemeral) {
      // Only what a restart mid-job would learn from it is at stake: the runner starts regardless.
      try {
        host_.mark_ephemeral(st_.generation);
      } catch (const std::exception& e) {
        spdlog::warn("cannot mark generation {} as an ephemeral runner's: {}", st_.generation, e.what());
      }
    }
    try {
      listener_ = host_.start_listener(ListenerStart{as_.jit_config, as_.drain_input});
      as_.restart_at.reset();
      activity_ = RunnerActivity{};
      job_track_ = JobTrack{};
    } catch (const std::exception& e) {
      const ExitDecision d = after_listener_start_failure(e.what(), as_.restarts, s_.max_restarts, s_.restart_backoff);
      if (d.what != AfterExit::kRestart) {
        fail_assignment(d.reason);
        return;
      }
      spdlog::error("{}", d.reason);
      ++as_.restarts;
      as_.restart_at = steady() + d.delay;
    }
    return;
  }
  const bool listening = activity_.phase() != RunnerPhase::kStarting;
  // What the instance runs, for `runpoolctl retire --runner-version`: once per Listener version.
  if (reachable_ && !activity_.runner_version().empty() && activity_.runner_version() != written_.runner_version) {
    AgentReport r;
    r.runner_version = activity_.runner_version();
    if (report(r, "runner_version") == Reported::kApplied) written_.runner_version = *r.runner_version;
  }
  if (reachable_ && record_ && written_.registered_generation != st_.generation &&
      should_report_registered(*record_, st_.generation, listening)) {
    if (!as_.identity) {
      try {
        as_.identity = host_.configured();
      } catch (const std::exception&) {
      }
      if (as_.identity && as_.ephemeral && !as_.identity->disable_update) {
        spdlog::warn("GitHub's JIT configuration lets runner {} update itself: {}", as_.identity->name,
                     host_.runner_owns_installation()
                         ? "an update is waited for as run-helper.sh does, once per assignment"
                         : "an update fails the assignment (the installation is root's: bake a newer runner into "
                           "the image)");
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
      written_.registered_generation = st_.generation;
      if (as_.seen_at) metrics_.registered(now_ms(), resource_class(), st_.generation, since(*as_.seen_at));
      as_.seen_at.reset();
      spdlog::info("reported registered for generation {}", st_.generation);
    }
  }
}

}  // namespace runpool::agent
