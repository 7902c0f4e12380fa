#include "agent/decisions.h"

#include <algorithm>
#include <cctype>

#include "common/config.h"
#include "common/pool/runner_fate.h"
#include "common/pool/transitions.h"

namespace runpool::agent {

using pool::AgentSignal;
using pool::InstanceRecord;
using pool::State;

namespace {

// The record is the controller's, but a corrupted or forged one must not register a runner under
// labels it was never given (a comma adds labels: another run's, and its jobs) or with a URL that
// is not a GitHub scope. A run-scoped label is one label; a shared pool's is a list.
bool runner_labels_ok(const std::string& label, bool shared) {
  size_t start = 0;
  while (true) {
    size_t comma = label.find(',', start);
    std::string one = label.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (one.empty() || one.size() > 100) return false;
    for (char c : one) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
    }
    if (comma == std::string::npos) return true;
    if (!shared) return false;
    start = comma + 1;
  }
}

// http(s)://host[:port]/owner[/repo]: letters, digits and . _ - : / only.
bool registration_url_ok(const std::string& url) {
  size_t scheme = url.rfind("https://", 0) == 0 ? 8 : url.rfind("http://", 0) == 0 ? 7 : 0;
  if (!scheme || url.size() > 300 || url.find('/', scheme) == std::string::npos) return false;
  return std::all_of(url.begin() + static_cast<std::ptrdiff_t>(scheme), url.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == ':' || c == '/';
  });
}

}  // namespace

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::kIdle: return "idle";
    case Phase::kServing: return "serving";
    case Phase::kDraining: return "draining";
    case Phase::kStopped: return "stopped";
    case Phase::kTerminating: return "terminating";
  }
  return "?";
}

std::string_view action_name(Action a) {
  switch (a) {
    case Action::kWait: return "wait";
    case Action::kRegister: return "register";
    case Action::kRefuse: return "refuse";
    case Action::kFinishUnserved: return "finish-unserved";
    case Action::kSupervise: return "supervise";
    case Action::kDrain: return "drain";
    case Action::kAbandon: return "abandon";
    case Action::kDeregisterAndClean: return "deregister-and-clean";
    case Action::kCleanLocal: return "clean-local";
    case Action::kReadyNext: return "ready-next";
  }
  return "?";
}

namespace {

bool assigned_state(State s) { return s == State::kCreated || s == State::kClaimed || s == State::kRunning; }

// The signal the agent reported for the record's current generation, if any.
AgentSignal signal_for_current(const InstanceRecord& r) {
  return r.signal_generation == r.generation ? r.signal : AgentSignal::kNone;
}

bool ending(State s) { return s == State::kTerminating || s == State::kTerminated; }

Decision idle(const AgentState& a, const InstanceRecord& r) {
  const std::string gen = " (generation " + std::to_string(r.generation) + ")";
  const AgentSignal sig = signal_for_current(r);
  if (!a.pre_run_failure.empty()) {
    // Whatever the record asks — an assignment, a drain, the pool — the answer is `failed`,
    // once per generation: the controller then terminates the instance (refresh's agent.failed).
    if (ending(r.state)) return {Action::kWait, "the record is " + std::string(pool::state_name(r.state))};
    if (sig == AgentSignal::kFailed) return {Action::kWait, "failure already reported" + gen};
    return {Action::kRefuse, a.pre_run_failure};
  }
  if (r.state == State::kDraining) {
    if (sig == AgentSignal::kDrained) return {Action::kWait, "drained already reported" + gen};
    return {Action::kFinishUnserved, "drain of an assignment with no runner here" + gen};
  }
  if (r.state == State::kIdle && !a.next_ready && !a.interrupted) {
    return {Action::kReadyNext, "in the pool: readying the next assignment's job user"};
  }
  if (!assigned_state(r.state)) return {Action::kWait, "waiting for an assignment (record " +
                                                           std::string(pool::state_name(r.state)) + ")"};
  if (r.generation <= a.last_served) return {Action::kWait, "assignment already served" + gen};
  if (sig == AgentSignal::kFailed) return {Action::kWait, "failure already reported" + gen};
  if (a.interrupted) return {Action::kRefuse, "the instance has an interruption notice"};
  if (r.state == State::kRunning || sig == AgentSignal::kRegistered) {
    return {Action::kRefuse, "the runner registered for this assignment is gone" + gen};
  }
  if (r.label.empty()) return {Action::kRefuse, "the assignment has no label" + gen};
  if (r.reg_url.empty()) return {Action::kRefuse, "the assignment has no registration URL" + gen};
  if (!runner_labels_ok(r.label, r.shared)) return {Action::kRefuse, "the assignment's label is not a runner label" + gen};
  if (!registration_url_ok(r.reg_url)) {
    return {Action::kRefuse, "the assignment's registration URL is not a GitHub owner or repository URL" + gen};
  }
  if (r.reg_token.empty() && r.jit_config.empty()) {
    return {Action::kRefuse, "the registration token (or JIT configuration) is missing or already used" + gen};
  }
  return {Action::kRegister, "new assignment " + r.label + gen};
}

Decision serving(const AgentState& a, const InstanceRecord& r) {
  // Only after a reboot with a runner still configured: it is stopped, never served.
  if (!a.pre_run_failure.empty() && !ending(r.state)) return {Action::kAbandon, a.pre_run_failure};
  if (r.generation != a.generation) {
    return {Action::kAbandon, "the record moved to generation " + std::to_string(r.generation) + " without a drain"};
  }
  switch (r.state) {
    case State::kCreated:
    case State::kClaimed:
    case State::kRunning:
      return {Action::kSupervise, "serving"};
    case State::kDraining:
      return {Action::kDrain, "the controller asked for a drain"};
    case State::kIdle:
      return {Action::kAbandon, "the record is idle without a drain"};
    case State::kTerminating:
    case State::kTerminated:
      return {Action::kWait, "the record is " + std::string(pool::state_name(r.state))};
  }
  return {Action::kWait, "?"};
}

Decision stopped(const AgentState& a, const InstanceRecord& r) {
  if (!a.pre_run_failure.empty() && !ending(r.state)) return {Action::kCleanLocal, a.pre_run_failure};
  if (r.generation != a.generation) {
    return {Action::kCleanLocal, "the record moved to generation " + std::to_string(r.generation)};
  }
  switch (r.state) {
    case State::kDraining:
      if (signal_for_current(r) == AgentSignal::kDrained) return {Action::kCleanLocal, "drained already reported"};
      return {Action::kDeregisterAndClean, "the controller asked for a drain"};
    case State::kCreated:
    case State::kClaimed:
    case State::kRunning:
      return {Action::kWait, "runner stopped; waiting for the controller to drain"};
    case State::kIdle:
      return {Action::kCleanLocal, "the record is idle"};
    case State::kTerminating:
    case State::kTerminated:
      return {Action::kWait, "the record is " + std::string(pool::state_name(r.state))};
  }
  return {Action::kWait, "?"};
}

}  // namespace

Decision decide(const AgentState& a, const std::optional<InstanceRecord>& r) {
  if (a.phase == Phase::kTerminating) return {Action::kWait, "terminating"};
  if (!r) return {Action::kWait, "no record"};
  switch (a.phase) {
    case Phase::kIdle: return idle(a, *r);
    case Phase::kServing: return serving(a, *r);
    case Phase::kDraining: return {Action::kWait, "drain under way"};
    case Phase::kStopped: return stopped(a, *r);
    case Phase::kTerminating: break;
  }
  return {Action::kWait, "terminating"};
}

AgentState initial_state(const std::optional<InstanceRecord>& r, std::optional<int64_t> configured) {
  AgentState s;
  if (r && r->signal == AgentSignal::kDrained) s.last_served = r->signal_generation;
  if (!configured) return s;
  s.generation = *configured;
  s.last_served = std::min(s.last_served, *configured - 1);
  if (!r || r->generation != *configured) {
    s.phase = Phase::kStopped;
    return s;
  }
  const AgentSignal sig = signal_for_current(*r);
  if (r->state == State::kDraining && sig != AgentSignal::kDrained) {
    s.phase = Phase::kDraining;
  } else if (assigned_state(r->state) && sig != AgentSignal::kFailed) {
    s.phase = Phase::kServing;
  } else {
    s.phase = Phase::kStopped;
  }
  return s;
}

std::optional<int64_t> ended_ephemeral_generation(const std::optional<InstanceRecord>& r, std::optional<int64_t> mark) {
  if (!r || !mark || r->generation != *mark) return std::nullopt;
  if (!assigned_state(r->state) && r->state != State::kDraining) return std::nullopt;
  if (signal_for_current(*r) != AgentSignal::kRegistered) return std::nullopt;
  return mark;
}

Resumption resume_step(const ResumeFacts& f) {
  Resumption r;
  r.state = f.state;
  const bool current = f.record && f.record->generation == f.state.generation;
  switch (f.state.phase) {
    case Phase::kIdle:
      r.clean_leftovers = true;
      break;
    case Phase::kServing:
      r.token_taken = !(current && (!f.record->reg_token.empty() || !f.record->jit_config.empty()));
      break;
    case Phase::kDraining:
      r.drain_reason = "resumed a drain after a restart";
      break;
    case Phase::kStopped:
      r.failure_reported = f.record && pool::agent_reported(*f.record, AgentSignal::kFailed);
      if (f.listener_left) {
        // Drained like any other, gracefully, before the cleaning.
        r.state.phase = Phase::kDraining;
        r.drain_reason = "the Listener of an assignment that is over, left by an earlier agent";
      }
      break;
    case Phase::kTerminating:
      break;
  }
  r.report_booted = f.record && (f.record->signal_generation != f.record->generation ||
                                 f.record->signal == AgentSignal::kNone);
  return r;
}

bool should_report_registered(const InstanceRecord& r, int64_t generation, bool listening) {
  if (!listening || r.generation != generation || !assigned_state(r.state)) return false;
  AgentSignal sig = signal_for_current(r);
  return sig == AgentSignal::kNone || sig == AgentSignal::kBooted;
}

// ---- self-termination

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kStay: return "stay";
    case Verdict::kDrainFirst: return "drain-first";
    case Verdict::kTerminate: return "terminate";
  }
  return "?";
}

TerminatingStep terminating_step(const TerminatingFacts& f) {
  if (f.since_os_shutdown) return *f.since_os_shutdown < f.wait ? TerminatingStep::kWait : TerminatingStep::kGiveUp;
  return f.since_terminate < f.wait ? TerminatingStep::kWait : TerminatingStep::kShutDownOs;
}

int64_t job_bound_ms(const InstanceRecord& r, Duration drain_bound) {
  if (r.hard_deadline_ms != 0) return r.hard_deadline_ms;
  return r.deadline_ms + drain_bound.count();
}

namespace {

// The instance must go; a job in hand may finish first, up to `bound`.
SelfTermination must_go(const SelfTerminationFacts& f, std::optional<int64_t> bound, const std::string& why) {
  if (f.busy && bound && f.now_ms < *bound) return {Verdict::kDrainFirst, why + "; the job in hand finishes first"};
  if (f.busy) return {Verdict::kTerminate, why + "; the job's hard deadline has passed"};
  return {Verdict::kTerminate, why};
}

}  // namespace

SelfTermination decide_self_termination(const SelfTerminationFacts& f) {
  if (f.unreachable_for) {
    if (*f.unreachable_for < f.unreachable_limit) return {Verdict::kStay, "table unreachable, within the limit"};
    return must_go(f, f.job_bound_ms, "the table has been unreachable for " + format_duration(*f.unreachable_for));
  }
  if (!f.record) {
    if (f.since_start < f.boot_grace) return {Verdict::kStay, "no record yet, within the boot grace"};
    return must_go(f, f.job_bound_ms, "no record for this instance after the boot grace");
  }
  const InstanceRecord& r = *f.record;
  if (r.state == State::kTerminating || r.state == State::kTerminated) {
    return {Verdict::kTerminate, "the record is " + std::string(pool::state_name(r.state))};
  }
  const int64_t grace = f.deadline_grace.count();
  if (r.deadline_ms != 0 && f.now_ms >= r.deadline_ms + grace) {
    // The bound from this very record: its hard deadline, else what the loop derived.
    std::optional<int64_t> bound =
        r.hard_deadline_ms != 0 ? std::optional<int64_t>(r.hard_deadline_ms + grace) : f.job_bound_ms;
    return must_go(f, bound, "the " + std::string(pool::state_name(r.state)) + " deadline has passed");
  }
  return {Verdict::kStay, "within the deadline"};
}

// ---- draining

RunnerDrainSupport parse_run_help(std::string_view help) {
  // An option is listed as a word of its own: "--drain-file PATH", "--drain-on-sigusr1".
  auto listed = [&](std::string_view opt) {
    for (size_t at = help.find(opt); at != std::string_view::npos; at = help.find(opt, at + 1)) {
      const size_t end = at + opt.size();
      const bool starts = at == 0 || help[at - 1] == ' ' || help[at - 1] == '\t' || help[at - 1] == '\n' ||
                          help[at - 1] == '[' || help[at - 1] == ',';
      const bool ends = end == help.size() || !(std::isalnum(static_cast<unsigned char>(help[end])) || help[end] == '-');
      if (starts && ends) return true;
    }
    return false;
  };
  return {listed("--drain-file"), listed("--drain-on-sigusr1")};
}

DrainStrategy choose_drain_strategy(const std::optional<RunnerDrainSupport>& detected, bool ephemeral) {
  if (detected && detected->drain_on_sigusr1 && ephemeral) return DrainStrategy::kDrainSignal;
  return DrainStrategy::kStock;
}

std::string_view strategy_name(DrainStrategy s) { return s == DrainStrategy::kDrainSignal ? "drain-signal" : "stock"; }

std::string_view drain_step_name(DrainStep s) {
  switch (s) {
    case DrainStep::kWait: return "wait";
    case DrainStep::kFallBackToStock: return "fall-back-to-stock";
    case DrainStep::kDeregister: return "deregister";
    case DrainStep::kInterrupt: return "interrupt";
    case DrainStep::kKill: return "kill";
    case DrainStep::kListenerGone: return "listener-gone";
  }
  return "?";
}

DrainStep drain_step(const DrainFacts& f) {
  if (!f.listener_running) return DrainStep::kListenerGone;
  if (f.since_interrupt) return *f.since_interrupt >= f.stop_timeout ? DrainStep::kKill : DrainStep::kWait;
  // A job in hand always runs to its end here; only the hard deadline (self-termination) ends it.
  if (f.busy) return DrainStep::kWait;
  if (f.strategy == DrainStrategy::kDrainSignal) {
    return f.since_drain_start < f.drain_timeout ? DrainStep::kWait : DrainStep::kFallBackToStock;
  }
  // A job the broker handed to the open poll before the labels went shows up within one poll.
  if (!f.deregistered && f.since_drain_start < f.poll_wait) return DrainStep::kWait;
  if (!f.deregistered) {
    if (f.just_in_time || !f.has_remove_token || f.remove_exhausted) return DrainStep::kInterrupt;
    if (f.since_remove_attempt && *f.since_remove_attempt < f.remove_retry) return DrainStep::kWait;
    return DrainStep::kDeregister;
  }
  if (f.since_deregistered && *f.since_deregistered < f.stock_idle_wait) return DrainStep::kWait;
  return DrainStep::kInterrupt;
}

// ---- registration

RegisterDecision register_step(const RegisterFacts& f) {
  if (f.ok) return {RegisterStep::kDone, Duration{0}};
  if (f.timed_out || f.elapsed >= f.bound || f.attempt >= f.max_attempts) return {RegisterStep::kGiveUp, Duration{0}};
  return {RegisterStep::kRetry, f.backoff};
}

// ---- deregistration

RemoveFailure classify_remove_failure(const std::string& output, bool timed_out) {
  if (timed_out) return RemoveFailure::kOther;
  // The runner prints the token exchange's status by name: "Http response code: NotFound from
  // 'POST …/actions/runner-registration'" for a token GitHub no longer accepts.
  if (output.find("Http response code: NotFound") != std::string::npos ||
      output.find("Http response code: Unauthorized") != std::string::npos) {
    return RemoveFailure::kTokenRefused;
  }
  if (output.find("is still running a job") != std::string::npos) return RemoveFailure::kBusy;
  return RemoveFailure::kOther;
}

std::string_view remove_failure_name(RemoveFailure f) {
  switch (f) {
    case RemoveFailure::kTokenRefused: return "remove token refused";
    case RemoveFailure::kBusy: return "runner busy on GitHub";
    case RemoveFailure::kOther: return "error";
  }
  return "?";
}

std::string_view deregister_step_name(DeregisterStep s) {
  switch (s) {
    case DeregisterStep::kRemove: return "remove";
    case DeregisterStep::kWait: return "wait";
    case DeregisterStep::kReturnToken: return "return-token";
    case DeregisterStep::kGiveUp: return "give-up";
  }
  return "?";
}

DeregisterDecision deregister_step(const DeregisterFacts& f) {
  const std::string tries = std::to_string(f.attempts) + "/" + std::to_string(f.max_attempts);
  if (f.just_in_time) return {DeregisterStep::kGiveUp, std::string(kJustInTimeLeftToController)};
  if (f.attempts >= f.max_attempts) {
    return {DeregisterStep::kGiveUp, "config.sh remove failed " + std::to_string(f.attempts) + " time(s)" +
                                         (f.last_failure ? " (last: " + std::string(remove_failure_name(*f.last_failure)) + ")" : "")};
  }
  if (!f.has_remove_token) {
    if (!f.awaiting_token_for) return {DeregisterStep::kGiveUp, "no remove token in the record"};
    if (*f.awaiting_token_for < f.token_wait) return {DeregisterStep::kWait, "waiting for a fresh remove token"};
    return {DeregisterStep::kGiveUp, "no fresh remove token within " + format_duration(f.token_wait)};
  }
  // A token that was refused is handed back once; a fresh one (the controller's) is tried anew.
  if (f.last_failure == RemoveFailure::kTokenRefused && !f.awaiting_token_for) {
    return {DeregisterStep::kReturnToken, "the remove token was refused (" + tries + "): asking for a fresh one"};
  }
  if (f.since_last_attempt && *f.since_last_attempt < f.retry_interval) {
    return {DeregisterStep::kWait, "retrying config.sh remove (" + tries + ")"};
  }
  return {DeregisterStep::kRemove, f.attempts ? "retrying config.sh remove (" + tries + ")" : "deregistering"};
}

// ---- signal_detail

DetailWrite detail_to_write(const DetailFacts& f) {
  const bool held = f.evidence_generation == f.generation && !f.evidence.empty();
  if (!f.failure) {
    if (held || f.detail.empty()) return {std::nullopt, false};
    return {f.detail, false};
  }
  if (f.detail.empty()) return {std::nullopt, false};
  // Another failure of the same generation: the newest first (the controller reads its head),
  // the earlier one kept after it.
  if (held && f.evidence != f.detail && f.detail.find(f.evidence) == std::string::npos) {
    return {f.detail + " (earlier: " + f.evidence + ")", true};
  }
  return {f.detail, true};
}

std::string failure_evidence(const InstanceRecord& r) {
  if (r.signal_generation != r.generation || r.signal_detail.empty() || r.signal_detail == "-") return "";
  if (r.signal == AgentSignal::kFailed) return r.signal_detail;
  if (r.signal == AgentSignal::kDrained && r.signal_detail.rfind(pool::kRunnerLeftRegistered, 0) == 0) return r.signal_detail;
  return "";
}

// ---- Listener exits

std::string describe(const ExitStatus& s) {
  if (s.unknown) return "exit status unknown: an earlier agent started it";
  return s.signaled ? "killed by signal " + std::to_string(s.code) : "exit code " + std::to_string(s.code);
}

ExitDecision after_listener_exit(const ExitStatus& s, bool stopping, int restarts, int max_restarts, Duration backoff,
                                 bool ephemeral) {
  const std::string what = "the Listener ended (" + describe(s) + ")";
  if (stopping) return {AfterExit::kStopped, Duration{0}, what + " as asked"};
  // A followed ephemeral runner: whether its job ended or it crashed, it cannot serve again.
  if (ephemeral && s.unknown) return {AfterExit::kDone, Duration{0}, what + ": the ephemeral runner's assignment is over"};
  if (!s.signaled && !s.unknown) {
    switch (s.code) {
      case 0:
        // An ephemeral runner exits 0 after its one job (or once GitHub removed it): it cannot serve
        // again, so it is never restarted; the controller drains the assignment.
        if (ephemeral) return {AfterExit::kDone, Duration{0}, what + ": the ephemeral runner's assignment is over"};
        return {AfterExit::kFail, Duration{0}, what + " without a drain: its registration was deleted?"};
      case 1: return {AfterExit::kFail, Duration{0}, what + ": terminated (not configured, or its registration is gone)"};
      // The runner is updating itself (update.sh, in the Listener's process group, swaps bin/):
      // the loop asks decide_runner_update (runner_update.h), which waits for it only where the
      // runner owns its installation; without that, the assignment fails at once, saying why.
      case 3:
      case 4:
        return {AfterExit::kFail, Duration{0},
                std::string(kRunnerSelfUpdate) + " (" + what + "): GitHub asked this runner to update itself; roll "
                "the image to a newer runner (a JIT runner's disableUpdate is GitHub's choice)"};
      // GitHub refused the runner's version (ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1 makes
      // that 7, not 1): no restart or reconfiguration helps, only a newer runner. The detail says so
      // first, for the controller and `status`.
      case 7:
        return {AfterExit::kFail, Duration{0},
                std::string(pool::kRunnerVersionDeprecated) + ": GitHub refuses this runner's version (" + what + ")"};
      default: break;
    }
  }
  // 2 retryable, 5 session conflict, a crash (signal) or anything unknown.
  if (restarts >= max_restarts) {
    return {AfterExit::kFail, Duration{0}, what + " after " + std::to_string(restarts) + " restarts"};
  }
  Duration delay = backoff * (int64_t{1} << std::min(restarts, 5));
  return {AfterExit::kRestart, delay, what + "; restarting"};
}

ExitDecision after_listener_start_failure(const std::string& error, int restarts, int max_restarts, Duration backoff) {
  const std::string what = "cannot start the Listener: " + error;
  if (restarts >= max_restarts) return {AfterExit::kFail, Duration{0}, what};
  return {AfterExit::kRestart, backoff, what};
}

JobTrack apply_job_signal(JobTrack t, JobSignal s, Duration now, const std::string& job) {
  auto close = [](JobTrack& x) {
    x.requested_at.reset();
    x.worker_seen = false;
    x.worker_gone_at.reset();
    x.job.clear();
  };
  switch (s) {
    case JobSignal::kAcknowledged:
      if (t.perf_seen) return t;  // the perf log's request, told again
      [[fallthrough]];
    case JobSignal::kRequested:
      if (s == JobSignal::kRequested) t.perf_seen = true;
      // An open request that never ran was dropped (jobs run one at a time): settled as done.
      if (t.requested_at && t.runs < t.requests) t.runs = t.requests;
      if (++t.requests <= t.runs) return t;  // its job's lines were read first
      close(t);
      t.requested_at = now;
      return t;
    case JobSignal::kRunning:
      ++t.runs;
      // Without a request seen (read later, no perf log, an agent that started late) this is the arrival.
      if (!t.requested_at) t.requested_at = now;
      t.job = job;
      return t;
    case JobSignal::kCompleted:
      close(t);
      return t;
  }
  return t;
}

namespace {

// No request open; every one seen counted as answered.
JobTrack settled(JobTrack t) {
  t.requested_at.reset();
  t.worker_seen = false;
  t.worker_gone_at.reset();
  t.job.clear();
  t.runs = std::max(t.runs, t.requests);
  return t;
}

}  // namespace

BusyDecision decide_busy(const BusyFacts& f) {
  BusyDecision d;
  d.track = f.track;
  // A Worker is a job in hand, whatever was (or was not) seen before it.
  if (f.worker_running) {
    if (!d.track.requested_at) d.track.requested_at = f.now;
    d.track.worker_seen = true;
    d.track.worker_gone_at.reset();
    d.busy = true;
    return d;
  }
  if (!d.track.requested_at) return d;
  const std::string what = d.track.job.empty() ? "the job request" : "job " + d.track.job;
  if (!f.listener_running) {
    d.reason = what + " ended with the Listener";
  } else if (d.track.worker_seen) {
    // The Listener prints the completion line once it has seen the Worker exit: it may yet come.
    if (!d.track.worker_gone_at) d.track.worker_gone_at = f.now;
    if (f.now - *d.track.worker_gone_at < f.job_completion_wait) {
      d.busy = true;
      return d;
    }
    d.reason = what + ": its Worker exited and no completion line came within " +
               format_duration(f.job_completion_wait);
  } else if (f.now - *d.track.requested_at >= f.job_start_bound) {
    d.reason = what + " produced no Worker and no completion within " + format_duration(f.job_start_bound) +
               ": the runner dropped it";
  } else {
    d.busy = true;  // acknowledge, acquire and the first renew come before the Worker
    return d;
  }
  // Over without a completion line: settled, so that its request is not counted open again.
  d.track = settled(d.track);
  return d;
}

JobTrack settle_unconfirmed_request(JobTrack t) {
  if (!t.requested_at || t.worker_seen) return t;
  return settled(t);
}

}  // namespace runpool::agent
