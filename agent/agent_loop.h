// The agent's main loop: each tick reads the instance's record, gathers what the runner did, asks
// the pure decisions (decisions.h) what to do, and does it through the interfaces of
// runner_host.h. Blocking steps are bounded (one config.sh run by config_sh_timeout, cleaning by
// cleanup_timeout) and pauses between steps are waited out by later ticks, never slept in one, so
// a tick is short and the watchdog sees a live loop.
//
// Resuming after a restart is part of the design: the phase comes from the record and the runner
// root (initial_state, resume_step), and a Listener an earlier agent left running is followed as
// this agent's own.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_metrics.h"
#include "agent/agent_settings.h"
#include "agent/decisions.h"
#include "agent/runner_host.h"
#include "agent/runner_update.h"
#include "agent/sealed_record.h"
#include "agent/table_health.h"
#include "common/pool/state_table.h"

namespace runpool::agent {

// What the loop is handed: its bounds as configured (agent_settings.h), and who it is.
struct LoopSettings : LoopTimings {
  std::string instance_id;
  std::string pool;
  std::string agent_version;
  // Where the instance's private seal key is kept, root-only (sealed_record.h); "": memory only.
  std::string seal_key_file;
};

LoopSettings loop_settings(const AgentSettings& s, const std::string& instance_id, const std::string& version);

class AgentLoop {
 public:
  // `clock` is the AWS clock (its now() is written to the table; steady_now() times local waits).
  AgentLoop(LoopSettings settings, pool::StateTable& table, RunnerHost& host, SelfTerminator& compute, Clock& clock,
            TableHealth& health);

  // Called with each new status line (for systemd's STATUS= and the log).
  void on_status(std::function<void(const std::string&)> f) { on_status_ = std::move(f); }
  // Where the loop's metric events go (agent_metrics.h); none unless set.
  void set_metrics(AgentMetrics m) { metrics_ = std::move(m); }

  // The pre-run script's result on this boot (pre_run.h), before the first tick: reported to the
  // record once it can be; a failed one keeps every assignment from being served.
  void set_pre_run(pool::PreRun status, const std::string& detail);

  // One step. False once there is nothing left to do: the instance was told to terminate and
  // neither the API nor the OS shutdown took effect in time.
  // `read`: whether this tick reads the record first (else it decides on the last one read).
  bool tick(bool read = true);

  // From the notice thread: a spot interruption or rebalance notice. Thread-safe.
  void notice(const Notice& n);

  bool busy() const { return busy_.load(); }  // thread-safe, for the heartbeat
  AgentState state() const { return st_; }
  // An assignment is starting (its runner not yet reported registered) or ending (draining, being
  // cleaned): runpoolctl is waiting on it, so the main loop reads the record fast (poll_interval.h).
  bool settling() const;
  const std::string& status() const { return status_; }

 private:
  using Steady = std::chrono::steady_clock::time_point;

  // agent_loop.cc: the tick, the record, resuming, reports, the status line
  void read_record();
  // agent_loop_seal.cc: the instance's seal key taken from the record, and its tokens opened
  void open_sealed();
  void resume();
  void act(const Decision& d);
  // Writes the agent's part of the record (common/pool/state_table.h: report). Never throws: what
  // happened is the answer, and a failure is logged and counted against the table's health.
  enum class Reported {
    kApplied,
    kNotApplied,  // refused by its condition: the record is gone or on another generation
    kFailed,      // the table could not be reached; the caller retries on a later tick
  };
  Reported report(const pool::AgentReport& r, const char* what);
  // The report's signal_detail through detail_to_write: a failure's evidence is never replaced.
  void set_detail(pool::AgentReport& r, int64_t generation, const std::string& detail, bool failure);
  void set_status(const std::string& s);
  void update_status();
  int64_t now_ms() const;
  Steady steady() const;
  Duration since(Steady t) const;
  std::string resource_class() const;  // the record's, for the metrics; "" before it is read
  static std::string clip(const std::string& s, size_t n = 400);

  // agent_loop_assignment.cc: registering, refusing, failing, deregistering and cleaning
  void reset_assignment();
  void do_register(const pool::InstanceRecord& r);
  void refuse(const pool::InstanceRecord& r, const std::string& reason);
  void finish_unserved(const pool::InstanceRecord& r);
  void deregister_and_clean(const pool::InstanceRecord& r);
  void clean_local(const std::string& reason);
  void finish_assignment();
  void ready_next(const pool::InstanceRecord& r);
  void fail_assignment(const std::string& detail);

  // agent_loop_termination.cc: self-termination and notices
  bool self_terminate();
  void terminate(const std::string& reason);
  bool terminating_progress();
  void handle_notice();

  // agent_loop_pre_run.cc: the pre-run script's result
  void report_pre_run();

  // agent_loop_runner.cc: the Listener and busy
  void pump_listener();
  void on_listener_exit(const ExitStatus& status, const std::string& tail);
  void set_busy(bool busy);
  void observe(const RunnerEvent& e);  // folds one event into activity_ and job_track_
  void update_busy();                  // busy from job_track_, the Worker and the time (decide_busy)
  void supervise();
  void take_token();

  // agent_loop_update.cc: a runner updating itself (decide_runner_update)
  UpdateFacts update_facts(UpdateSign sign, UpdateMarker marker) const;
  void on_update_failed(const std::string& words);  // "Runner update failed: …"; the Listener runs on
  void on_update_exit(const ExitStatus& status, const std::string& tail);  // exit 3 or 4
  bool await_update();  // while update.sh runs: true once the Listener may start again

  // agent_loop_drain.cc: draining
  const std::optional<RunnerDrainSupport>& runner_drain_support();  // `run --help`, asked once
  void begin_drain(const std::string& reason);
  void init_drain_state();
  DrainFacts drain_facts() const;
  void drain_progress();
  void end_detached_processes();  // in a drain: what jobs left beside the idle Listener
  void deregister_during_drain();
  bool remove_token_available() const;
  bool usable_remove_token(const pool::InstanceRecord& r) const;
  void remove_failed(const CommandResult& res);
  bool return_remove_token();

  LoopSettings s_;
  pool::StateTable& table_;
  RunnerHost& host_;
  SelfTerminator& compute_;
  Clock& clock_;
  TableHealth& health_;
  std::function<void(const std::string&)> on_status_;
  AgentMetrics metrics_;
  Steady started_;

  AgentState st_;
  // The record as last read; reachable_ false when that read failed.
  std::optional<pool::InstanceRecord> record_;
  bool reachable_ = false;
  bool was_reachable_ = true;
  std::optional<int64_t> job_bound_;  // the latest a job may run to, from the last record read
  // The instance's seal key pair, once read from its file or taken from the record.
  struct SealKeyHold {
    std::optional<pool::SealKeys> keys;
    bool kept = false;  // in its file (or there is no file: memory only)
    std::string store_error;  // the last failure to keep it, logged once
    bool file_read = false;
    std::vector<std::string> last_refused;  // logged once until it changes
  };
  SealKeyHold seal_;

  // What this agent found when it started (resume()).
  struct Startup {
    bool resumed = false;
    std::optional<int64_t> configured_generation;  // the runner root's runner is ours, for this one
    bool configured_foreign = false;               // a runner not named for this instance and pool
  };
  Startup start_;

  // The Listener of the assignment being served, and what it told.
  std::unique_ptr<ListenerProcess> listener_;
  RunnerActivity activity_;
  JobTrack job_track_;
  std::atomic<bool> busy_{false};
  // What the installed runner can do to drain: asked once (`run --help`).
  bool drain_support_asked_ = false;
  std::optional<RunnerDrainSupport> drain_support_;

  // What this agent last wrote to the record, so each is written once (and a failure's evidence
  // is never replaced).
  struct Written {
    std::optional<bool> busy;
    int64_t refused_generation = 0;
    int64_t registered_generation = 0;
    std::string runner_version;
    bool notice = false;
    bool spot_result = false;  // the spot job's result (below) is on the record
    std::string spot_job;      // the spot job as the record has it
    int64_t evidence_generation = 0;  // the failure detail this agent wrote last, and its generation
    std::string evidence;
  };
  Written written_;
  // The job in hand when the spot interruption notice came ("-": requested, not named yet; "":
  // none), and the runner's result if it still ended here: the controller re-runs a job lost to
  // spot (common/pool/spot_rerun.h).
  bool spot_noticed_ = false;
  std::string spot_job_;
  std::string spot_result_;

  // How far the assignment has got, and its drain: each reset whole when the next one starts.
  struct AssignmentProgress {
    std::string label;
    std::optional<Steady> seen_at;  // for the registration latency metric
    std::optional<RunnerIdentity> identity;
    // A scale-set assignment: the JIT configuration as read from the record (it leaves the record
    // before the Listener starts), and the runner is ephemeral (one job, then exit 0).
    Secret jit_config;
    bool ephemeral = false;
    bool drain_input = false;  // its Listener was started with --drain-on-sigusr1
    bool token_taken = false;  // the registration token (or JIT configuration) is out of the record
    int restarts = 0;
    std::optional<Steady> restart_at;
    // A self-update: the Listener's version and the one GitHub asked for, the wait for
    // update.finished (set while update.sh runs), and how updates of this assignment went.
    std::string runner_version, update_to;
    std::optional<Steady> update_wait_until;
    int updates_done = 0, update_failures = 0;
    bool stopping = false;
    bool failed = false;
    bool failure_reported = false;
    std::string stop_detail;
    bool cleaned = false;
    std::optional<Steady> clean_failed_at;
  };
  struct DrainProgress {
    std::string reason;
    std::optional<Steady> asked_at;  // when the drain was asked (its metric)
    DrainStrategy strategy = DrainStrategy::kStock;
    Steady step_clock{};             // the drain steps' clock: one long poll from here, then the fallback
    bool deregistered = false;
    std::string deregister_detail;
    bool deregister_failed = false;  // the runner was left registered: deregister_detail says why
    std::string last_remove_output;
    std::optional<Steady> remove_failed_at, deregistered_at, interrupt_at;
    int remove_attempts = 0;  // failed config.sh remove runs (drain included)
    std::optional<RemoveFailure> last_remove_failure;
    std::string refused_token;                 // never tried again, even while still in the record
    std::optional<Steady> token_returned_at;   // handed back: a fresh one is awaited
    std::string last_step;
  };
  // config.sh runs for one assignment, one per tick at most: the pause between two is waited out
  // by later ticks, so a drain or a new assignment is seen in between.
  struct RegistrationProgress {
    int64_t generation = 0;  // 0: none under way
    int attempts = 0;        // runs that ended
    Steady started{};
    std::optional<Steady> next_at;  // the next run, after a failed one
    std::string last_failure;       // what that run said
  };
  AssignmentProgress as_;
  DrainProgress drain_;
  RegistrationProgress reg_;

  // This boot's pre-run script (kNone: no script), until the record has it.
  struct PreRunReport {
    pool::PreRun status = pool::PreRun::kNone;
    std::string detail;
    std::string failure;  // → st_.pre_run_failure
    bool reported = false;
  };
  PreRunReport pre_run_;

  // Notices.
  std::mutex notice_mu_;
  std::optional<Notice> notice_;

  // Terminating (terminating_step decides what follows).
  struct Termination {
    Steady asked_at{};                     // TerminateInstances was called
    std::optional<Steady> os_shutdown_at;  // the OS shutdown was started
    std::string drain_first_logged;        // the last drain-first verdict logged (once each)
  };
  Termination term_;

  std::string status_;
  std::string last_decision_;  // logged once each
};

}  // namespace runpool::agent
