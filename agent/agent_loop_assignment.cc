// An assignment's start and end: registering its runner, refusing or failing it, and after the
// drain deregistering, cleaning and reporting `drained`.
#include <spdlog/spdlog.h>

#include "agent/agent_loop.h"
#include "common/pool/runner_fate.h"
#include "common/pool/runner_name.h"

namespace runpool::agent {

using pool::AgentReport;
using pool::AgentSignal;
using pool::InstanceRecord;
using pool::State;

void AgentLoop::reset_assignment() {
  as_ = AssignmentProgress{};
  drain_ = DrainProgress{};
  reg_ = RegistrationProgress{};
  activity_ = RunnerActivity{};
  job_track_ = JobTrack{};
}

// One config.sh run per tick: register_step() decides whether another follows, and after what
// pause; later ticks wait it out, so the record is still read (a drain, a new assignment) in between.
void AgentLoop::do_register(const InstanceRecord& r) {
  const int64_t g = r.generation;
  if (reg_.generation != g) {
    reset_assignment();
    as_.seen_at = steady();
    as_.label = r.label;
    set_status("registering a runner for " + r.label + " (generation " + std::to_string(g) + ")");
    try {
      host_.prepare(r.job_privileges);
    } catch (const std::exception& e) {
      spdlog::error("the runner root is not usable: {}", e.what());
      refuse(r, std::string("runner root: ") + e.what());
      return;
    }
    reg_.generation = g;
    reg_.started = steady();
  }
  if (!r.jit_config.empty()) {
    // A JIT runner configures itself when it starts: no config.sh, nothing to retry here.
    reg_ = RegistrationProgress{};
    as_.jit_config = r.jit_config;
    as_.ephemeral = true;
    as_.drain_input = choose_drain_strategy(runner_drain_support(), /*ephemeral=*/true) == DrainStrategy::kDrainSignal;
    st_ = advance(st_, PhaseEvent::kServing, g);
    spdlog::info("serving {} with a just-in-time runner configuration", r.label);
    take_token();
    return;
  }
  if (reg_.next_at && steady() < *reg_.next_at) return;
  reg_.next_at.reset();
  Registration reg{r.reg_url, r.label, pool::runner_name(s_.pool, s_.instance_id, g), r.reg_token};
  const CommandResult res = host_.configure(reg);
  ++reg_.attempts;
  const std::string how = res.timed_out ? "timed out" : "exit " + std::to_string(res.exit_code);
  if (!res.ok()) spdlog::warn("config.sh failed (attempt {}, {}): {}", reg_.attempts, how, clip(res.output));
  RegisterFacts f;  // three runs at most
  f.attempt = reg_.attempts;
  f.ok = res.ok();
  f.timed_out = res.timed_out;
  f.elapsed = since(reg_.started);
  f.bound = s_.config_sh_timeout;
  f.backoff = s_.restart_backoff;
  const RegisterDecision d = register_step(f);
  if (d.step == RegisterStep::kRetry) {
    reg_.next_at = steady() + d.pause;
    reg_.last_failure = how;
    return;
  }
  reg_ = RegistrationProgress{};
  st_ = advance(st_, PhaseEvent::kConfigured, g);
  if (d.step == RegisterStep::kGiveUp) {
    try {
      host_.remove_local();
    } catch (const std::exception&) {
    }
    fail_assignment("registration failed (" + how + "): " + clip(res.output, 300));
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
  st_ = advance(st_, PhaseEvent::kServing, g);
  take_token();
}

void AgentLoop::refuse(const InstanceRecord& r, const std::string& reason) {
  if (written_.refused_generation == r.generation) return;
  AgentReport rep;
  rep.signal = AgentSignal::kFailed;
  rep.generation = r.generation;
  set_detail(rep, r.generation, clip(reason), true);
  if (report(rep, "failed (refused)") != Reported::kFailed) written_.refused_generation = r.generation;
}

void AgentLoop::fail_assignment(const std::string& detail) {
  spdlog::error("assignment generation {} failed: {}", st_.generation, detail);
  as_.failed = true;
  as_.stop_detail = detail;
  st_ = advance(st_, PhaseEvent::kFailed);
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
  reg_ = RegistrationProgress{};  // a registration under way is abandoned: its leftovers are removed here
  try {
    host_.remove_local();
    const Steady cleaning = steady();
    host_.clean();
    st_.next_ready = false;
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
      f.just_in_time = as_.ephemeral;
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
          if (as_.ephemeral) {
            spdlog::info("{}", drain_.deregister_detail);  // by design, not a failure
          } else {
            spdlog::error("{}", drain_.deregister_detail);
          }
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
  st_ = advance(st_, PhaseEvent::kCleaned);
  reset_assignment();
  set_busy(false);
}

// Once per cleaning, while idle in the pool: the next job user and its directories are made now,
// off the claim's path. A failure is only logged — the claim's prepare() makes them then, and
// refuses the assignment if it cannot.
void AgentLoop::ready_next(const pool::InstanceRecord& r) {
  st_.next_ready = true;
  const Steady start = steady();
  try {
    host_.ready_next(r.job_privileges);  // its class's: what the next claim of it grants
    spdlog::info("the next assignment's job user is ready ({} ms)",
                 std::chrono::duration_cast<std::chrono::milliseconds>(since(start)).count());
  } catch (const std::exception& e) {
    spdlog::warn("cannot ready the next assignment ahead ({}); its claim will", e.what());
  }
}

}  // namespace runpool::agent
