// Self-termination (the verdict is decide_self_termination's) and interruption notices.
#include <spdlog/spdlog.h>

#include "agent/agent_loop.h"
#include "common/config.h"

namespace runpool::agent {

using pool::AgentReport;
using pool::AgentSignal;
using pool::InstanceRecord;
using pool::State;

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
    if (term_.drain_first_logged != v.reason) spdlog::warn("{}", v.reason);
    term_.drain_first_logged = v.reason;
    if (st_.phase == Phase::kServing) begin_drain(v.reason);
    return false;
  }
  terminate(v.reason);
  return true;
}

void AgentLoop::terminate(const std::string& reason) {
  spdlog::error("terminating this instance: {}", reason);
  metrics_.self_terminated(now_ms(), resource_class(), record_ ? record_->generation : st_.generation, reason);
  st_ = advance(st_, PhaseEvent::kTerminating);
  set_status("terminating this instance: " + reason);
  if (reachable_ && record_ && record_->state != State::kTerminated) {
    AgentReport r;
    r.signal = AgentSignal::kFailed;
    r.generation = record_->generation;
    set_detail(r, record_->generation, clip("self-termination: " + reason), true);
    r.busy = busy_.load();
    report(r, "failed (self-termination)");
  }
  term_.asked_at = steady();
  try {
    compute_.terminate_self();
    spdlog::info("TerminateInstances accepted; waiting for the instance to stop");
  } catch (const std::exception& e) {
    spdlog::error("TerminateInstances failed ({}); shutting the OS down instead", e.what());
    term_.os_shutdown_at = steady();
    if (!compute_.shutdown_os()) spdlog::error("the OS shutdown could not be started either");
  }
}

bool AgentLoop::terminating_progress() {
  TerminatingFacts f;
  f.since_terminate = since(term_.asked_at);
  if (term_.os_shutdown_at) f.since_os_shutdown = since(*term_.os_shutdown_at);
  f.wait = s_.terminate_wait;
  switch (terminating_step(f)) {
    case TerminatingStep::kWait: return true;
    case TerminatingStep::kShutDownOs:
      spdlog::error("still running {} after TerminateInstances; shutting the OS down", format_duration(s_.terminate_wait));
      term_.os_shutdown_at = steady();
      if (!compute_.shutdown_os()) spdlog::error("the OS shutdown could not be started");
      return true;
    case TerminatingStep::kGiveUp: return false;
  }
  return false;
}

void AgentLoop::handle_notice() {
  std::optional<Notice> n;
  {
    std::lock_guard<std::mutex> lock(notice_mu_);
    n = notice_;
  }
  if (!n) return;
  // A spot notice with a job in hand (serving, or draining since a rebalance recommendation): that
  // job is likely lost with the instance.
  if (n->kind == Notice::kSpotInterruption && !spot_noticed_) {
    spot_noticed_ = true;
    if ((st_.phase == Phase::kServing || st_.phase == Phase::kDraining) && busy_.load()) {
      spot_job_ = activity_.current_job().empty() ? "-" : activity_.current_job();
      spdlog::warn("job in hand at the spot notice: {}", spot_job_);
    }
  }
  if (!st_.interrupted) {
    st_.interrupted = true;
    spdlog::warn("interruption notice: {}; draining and taking no new assignment", n->detail);
    if (st_.phase == Phase::kServing) begin_drain("interruption notice: " + n->detail);
  }
  if (!written_.notice && reachable_ && record_) {
    AgentReport r;
    r.signal = AgentSignal::kInterrupted;
    r.generation = record_->generation;
    set_detail(r, record_->generation, clip(n->detail), false);
    if (!spot_job_.empty()) r.spot_job = spot_job_;
    if (report(r, "interrupted") != Reported::kFailed) {
      written_.notice = true;
      written_.spot_job = spot_job_;
    }
  }
  if (written_.notice && written_.spot_job != spot_job_ && reachable_ && record_) {
    AgentReport r;  // named after the notice ("-" until the runner printed it)
    r.spot_job = spot_job_;
    r.generation = record_->generation;
    if (report(r, "spot job") != Reported::kFailed) written_.spot_job = spot_job_;
  }
  if (written_.notice && !written_.spot_result && !spot_result_.empty() && reachable_) {
    AgentReport r;
    r.spot_job_result = spot_result_;
    if (report(r, "spot job result") != Reported::kFailed) written_.spot_result = true;
  }
}

}  // namespace runpool::agent
