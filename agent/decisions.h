// The agent's decisions, as pure functions of what it knows: its own state, its record (as last
// read), the runner's local activity and the time. The loop (agent_loop.h) only gathers these
// facts and carries the decisions out, so every branch here is tested without processes, AWS or
// sleeping (decisions_test.cc).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/pool/instance_record.h"

namespace runpool::agent {

// ---- The assignment loop ---------------------------------------------------------------------

enum class Phase {
  kIdle,         // no runner configured: waiting for an assignment
  kServing,      // the runner is configured for `generation`; its Listener is supervised
  kDraining,     // a drain of `generation` is under way
  kStopped,      // the Listener is gone (drained, failed, interrupted); deregistration and cleaning pending
  kTerminating,  // the instance is being terminated
};
std::string_view phase_name(Phase p);

struct AgentState {
  Phase phase = Phase::kIdle;
  int64_t generation = 0;   // the assignment of the configured runner (every phase but idle)
  int64_t last_served = 0;  // the newest assignment this agent finished with (cleaned up)
  bool interrupted = false; // a spot interruption or rebalance notice: take no new assignment
  // Non-empty: the pre-run script failed on this boot ("pre-run script failed: exit 3: …"). No
  // runner is served; every generation is answered with `failed`, which ends the instance.
  std::string pre_run_failure{};
  // The next assignment's job user and runner directories are made (RunnerHost::ready_next) since
  // the last cleaning: a claim then only hands them over.
  bool next_ready = false;
};

enum class Action {
  kWait,
  kRegister,            // idle: configure the runner for the record's assignment and serve it
  kRefuse,              // idle: the assignment cannot be served; report `failed` for it
  kFinishUnserved,      // idle: a drain of an assignment with no runner here; clean, report `drained`
  kSupervise,           // serving: keep the Listener running, report what it does
  kDrain,               // serving: the record asks to drain this assignment
  kAbandon,             // serving: the record moved on without a drain; stop the runner quietly
  kDeregisterAndClean,  // stopped: deregister, clean, report `drained`
  kCleanLocal,          // stopped: the assignment is over without a drain to report; clean, back to idle
  kReadyNext,           // idle in the pool: make what the next assignment needs before it is claimed
};
std::string_view action_name(Action a);

struct Decision {
  Action action = Action::kWait;
  std::string reason;
};

// What moves the phase. Every phase write goes through advance(), so the transitions are one
// table (decisions_phase.cc, tested in decisions_phase_test.cc); the loop only names the event.
enum class PhaseEvent {
  kConfigured,       // config.sh ended for `generation`: a runner is (partly) configured, none listens yet
  kServing,          // the runner for `generation` is configured (or its JIT configuration taken): serve it
  kFailed,           // the assignment failed: stop, deregistration and cleaning pending
  kDrainBegun,       // serving: the record or a notice asks to drain
  kListenerGone,     // the drain's Listener has stopped
  kRunnerDone,       // serving: the ephemeral runner ended its one job
  kCleaned,          // the assignment is cleaned up: back to idle, `generation` served
  kTerminating,      // the instance is being terminated
};
std::string_view phase_event_name(PhaseEvent e);

// The state after `event`; `generation` is read by kConfigured and kServing only.
AgentState advance(AgentState state, PhaseEvent event, int64_t generation = 0);

// What to do for the agent's state and its record (nullopt: no record, or the table could not be
// read — self-termination handles both).
Decision decide(const AgentState& agent, const std::optional<pool::InstanceRecord>& record);

// The state to resume in after a start: from the record and the generation of the runner the
// root is configured for (parsed from `.runner`), if any.
AgentState initial_state(const std::optional<pool::InstanceRecord>& record, std::optional<int64_t> configured_generation);

// The root holds no runner configuration: the generation to resume as all the same, when an
// ephemeral (JIT) runner of the record's current generation ran and ended while no agent did —
// its mark (RunnerHost::ephemeral_mark) names that generation, still assigned or already being
// drained, and the agent had reported it registered; the runner deleted its configuration after
// its one job, so the assignment is over, not new. nullopt otherwise (a runner that never started cannot be told from none).
std::optional<int64_t> ended_ephemeral_generation(const std::optional<pool::InstanceRecord>& record,
                                                  std::optional<int64_t> mark);

// True when the agent should report `registered` for `generation` now: the Listener listens and
// the record (still on that assignment, not draining) has no signal for it yet.
bool should_report_registered(const pool::InstanceRecord& record, int64_t generation, bool listening);

// What an agent that starts does with what an earlier one left: initial_state(), and whether a
// Listener an earlier agent started still runs (this agent follows it as its own: retiring it
// could not be made safe, since its runner stays matchable while it is interrupted).
struct ResumeFacts {
  AgentState state;                            // initial_state()
  std::optional<pool::InstanceRecord> record;  // as read (nullopt: no item)
  bool listener_left = false;                  // a Listener of the runner user runs and is followed
};

struct Resumption {
  AgentState state;              // initial_state(), but a Listener of an assignment that is over drains
  bool clean_leftovers = false;  // idle: what is in the runner root or runs as the runner is left over
  bool token_taken = false;      // serving: the registration token is no longer in the record
  std::string drain_reason;      // non-empty: (re)enter the drain, for this reason
  bool failure_reported = false; // stopped: `failed` for this assignment is on record already
  bool report_booted = false;    // the record tells nothing of this boot yet: report `booted`
};

Resumption resume_step(const ResumeFacts& facts);

// ---- Self-termination ------------------------------------------------------------------------

struct SelfTerminationFacts {
  int64_t now_ms = 0;                           // AWS clock
  Duration since_start{0};                      // agent uptime (monotonic)
  std::optional<Duration> unreachable_for{};    // set while the table cannot be read
  std::optional<pool::InstanceRecord> record{}; // the last read, when reachable (nullopt: no item)
  bool busy = false;                            // a job is in hand
  std::optional<int64_t> job_bound_ms{};        // the latest a job may run to: the hard deadline last seen
  Duration boot_grace{0};
  Duration unreachable_limit{0};
  // How long past a deadline the agent leaves retiring the instance to the controller, whose
  // conditional writes (and drain with deregistration) are the primary path; the agent is the
  // backstop for a control plane that is gone.
  Duration deadline_grace{0};
};

enum class Verdict {
  kStay,
  kDrainFirst,  // the instance must go, but a job runs: drain, terminate once idle
  kTerminate,
};
std::string_view verdict_name(Verdict v);

struct SelfTermination {
  Verdict verdict = Verdict::kStay;
  std::string reason;
};

SelfTermination decide_self_termination(const SelfTerminationFacts& facts);

// After the instance was told to terminate: TerminateInstances gets `wait` to take effect, then
// the OS is shut down, which gets `wait` too; after that the agent exits, so that the service
// manager starts it again and it tries once more.
struct TerminatingFacts {
  Duration since_terminate{0};
  std::optional<Duration> since_os_shutdown{};  // set once the OS shutdown was started
  Duration wait{0};                              // terminate_wait
};
enum class TerminatingStep { kWait, kShutDownOs, kGiveUp };
TerminatingStep terminating_step(const TerminatingFacts& facts);

// The latest time a job may keep an instance whose deadline passed: the record's hard deadline,
// or (states without one) its deadline plus `drain_bound`.
int64_t job_bound_ms(const pool::InstanceRecord& record, Duration drain_bound);

// ---- Draining --------------------------------------------------------------------------------

// What the installed runner can do to drain, read from `bin/Runner.Listener run --help` (never
// from configuration): actions/runner pull request #4708 adds `--drain-file PATH` and
// `--drain-on-sigusr1`; released builds have neither. (Pull request #4461's `.drain` sentinel is
// never used: when it fires it cancels the job in hand.)
struct RunnerDrainSupport {
  bool drain_file = false;
  bool drain_on_sigusr1 = false;
  bool operator==(const RunnerDrainSupport&) const = default;
};
RunnerDrainSupport parse_run_help(std::string_view help);

enum class DrainStrategy {
  kDrainSignal,  // the runner's own drain input (SIGUSR1): it takes no new job and exits after the job in hand
  kStock,        // labels removed by the controller; wait out a long poll, then until idle; deregister; SIGINT
};
// The runner's drain inputs only where it has them and accepts them: ephemeral (or JIT) runners
// only. Not detected (nullopt: `run --help` failed) counts as a stock runner.
DrainStrategy choose_drain_strategy(const std::optional<RunnerDrainSupport>& detected, bool ephemeral);
std::string_view strategy_name(DrainStrategy s);

struct DrainFacts {
  DrainStrategy strategy = DrainStrategy::kStock;
  bool listener_running = false;
  bool busy = false;
  bool has_remove_token = false;   // the record holds a remove token for this assignment
  // Started from a JIT configuration: its `.runner` has no gitHubUrl, so `config.sh remove
  // --token` would take the runner's legacy path and fail; runpoolctl removes it by id instead.
  bool just_in_time = false;
  bool deregistered = false;       // stock: config.sh remove succeeded
  bool remove_exhausted = false;   // stock: deregister_attempts spent; stop the Listener without it
  std::optional<Duration> since_remove_attempt{};  // the last failed attempt
  std::optional<Duration> since_deregistered{};
  std::optional<Duration> since_interrupt{};       // SIGINT sent this long ago
  Duration since_drain_start{0};
  Duration drain_timeout{0};
  Duration stock_idle_wait{0};
  Duration poll_wait{0};           // stock: one long poll, so a dispatch already in flight arrives
  Duration stop_timeout{0};        // SIGINT → SIGKILL
  Duration remove_retry{0};
};

enum class DrainStep {
  kWait,
  kFallBackToStock,  // the drain signal was not honoured by an idle Listener in time
  kDeregister,       // stock: config.sh remove --token (busy ⇒ it fails; retried)
  kInterrupt,        // SIGINT the Listener (it is idle)
  kKill,             // SIGKILL: it did not stop after SIGINT
  kListenerGone,     // nothing left running: go on to deregistration and cleaning
};
std::string_view drain_step_name(DrainStep s);

DrainStep drain_step(const DrainFacts& facts);

// ---- Registration ----------------------------------------------------------------------------

// After a `config.sh` (configure) run: done, another attempt after a pause, or give up. A timeout
// is never retried (it already took the whole bound), nor is anything once the bound has passed.
struct RegisterFacts {
  int attempt = 1;            // the run that just ended (1-based)
  bool ok = false;
  bool timed_out = false;
  Duration elapsed{0};        // since the first attempt began
  int max_attempts = 3;
  Duration bound{0};          // config_sh_timeout
  Duration backoff{0};        // listener_restart_backoff: the pause before the next attempt
};

enum class RegisterStep { kDone, kRetry, kGiveUp };

struct RegisterDecision {
  RegisterStep step = RegisterStep::kGiveUp;
  Duration pause{0};  // kRetry: wait this long first
};

RegisterDecision register_step(const RegisterFacts& facts);

// ---- Deregistration --------------------------------------------------------------------------

// Why `config.sh remove` failed, read from its output.
enum class RemoveFailure {
  kTokenRefused,  // the token exchange answered NotFound: an expired, used or foreign remove token
  kBusy,          // GitHub: the runner "is still running a job" (422)
  kOther,         // a server error (500, 502), a timeout, anything else
};
RemoveFailure classify_remove_failure(const std::string& output, bool timed_out);
std::string_view remove_failure_name(RemoveFailure f);

// How a failure detail begins when the Listener exited to update itself (exit 3 or 4).
inline constexpr std::string_view kRunnerSelfUpdate = "runner self-update";

// Why a just-in-time runner stopped while idle is left registered (the drained report's detail).
inline constexpr std::string_view kJustInTimeLeftToController =
    "a just-in-time runner is not removed by config.sh (its .runner has no gitHubUrl): runpoolctl removes it by id";

struct DeregisterFacts {
  bool just_in_time = false;      // never `config.sh remove` (DrainFacts::just_in_time)
  bool has_remove_token = false;  // the record holds a remove token for this assignment
  int attempts = 0;               // failed `config.sh remove` runs so far (drain included)
  int max_attempts = 5;           // deregister_attempts
  std::optional<RemoveFailure> last_failure{};
  std::optional<Duration> since_last_attempt{};
  Duration retry_interval{0};
  // The refused token was handed back (taken from the record) this long ago; the controller
  // writes a fresh one into the record. Unset once a token is there again.
  std::optional<Duration> awaiting_token_for{};
  Duration token_wait{0};
};

enum class DeregisterStep {
  kRemove,       // config.sh remove with the record's token
  kWait,         // the retry interval, or a fresh token, is still to come
  kReturnToken,  // the token was refused: take it from the record, so the controller writes a fresh one
  kGiveUp,       // leave the runner registered; `drained` says so and the controller deletes it
};
std::string_view deregister_step_name(DeregisterStep s);

struct DeregisterDecision {
  DeregisterStep step = DeregisterStep::kWait;
  std::string reason;
};

DeregisterDecision deregister_step(const DeregisterFacts& facts);

// ---- The record's signal_detail --------------------------------------------------------------

// A failure's detail is the evidence the operator and the controller read: a later report of the
// same generation that is no failure must not replace it.
struct DetailFacts {
  int64_t generation = 0;        // the report's
  std::string detail;            // the report's ("": it carries none)
  bool failure = false;          // the report tells of a failure
  int64_t evidence_generation = 0;  // the generation of the failure detail on record (0: none)
  std::string evidence;          // that detail
};

struct DetailWrite {
  std::optional<std::string> detail{};  // what to write (nullopt: leave the record's as it is)
  bool evidence = false;                // it is a failure's detail: keep it from now on
};

DetailWrite detail_to_write(const DetailFacts& facts);

// The failure detail a record already holds for its current generation: a `failed` report, or a
// `drained` naming a runner left registered. "" when none.
std::string failure_evidence(const pool::InstanceRecord& record);

// ---- Listener exits --------------------------------------------------------------------------

struct ExitStatus {
  bool signaled = false;  // killed by a signal (`code` is its number), else exited with `code`
  int code = 0;
  // Not this agent's child (a Listener an earlier agent started): it is gone, how is unknown.
  bool unknown = false;
  bool operator==(const ExitStatus&) const = default;
};
std::string describe(const ExitStatus& s);

enum class AfterExit {
  kRestart,
  kFail,
  kStopped,  // as asked (a drain, a stop)
  kDone,     // an ephemeral runner's end: its one job is over and GitHub removed it
};

struct ExitDecision {
  AfterExit what = AfterExit::kFail;
  Duration delay{0};  // before a restart
  std::string reason;
};

// `stopping`: the agent asked the Listener to stop (drain, SIGINT): any exit ends it.
// `ephemeral`: a JIT runner, for which exit 0 is its normal end after its one job.
ExitDecision after_listener_exit(const ExitStatus& status, bool stopping, int restarts_so_far, int max_restarts,
                                 Duration backoff, bool ephemeral = false);

// The Listener could not be started (spawning it failed): again after `backoff`, like a restart,
// until `max_restarts` are spent; then the assignment fails.
ExitDecision after_listener_start_failure(const std::string& error, int restarts_so_far, int max_restarts,
                                          Duration backoff);

// ---- Busy or idle ----------------------------------------------------------------------------

// The agent is the authority on busy: a job is in hand from its request's arrival until the
// runner says it completed, or `job_completion_wait` after its Worker exited with no such line
// (the Listener prints it once it has seen its Worker exit; for a Worker that crashed, only after
// sending the crash output to GitHub). The real runner also drops requests without a
// word ("Skipping message Job" on an acquire answered 404/409/422, a failed first renew, a
// cancel before the first renew): nothing marks their end, so a request that produced no Worker
// and no completion within `job_start_bound` is over. acknowledge, acquire and the first renew
// all happen before the Worker appears, so the bound covers them (actions-runner.md).
//
// The runner writes stdout, its perf log and _diag to three files the agent reads one after the
// other, so a request may be read after its own job's "Running job" and completion (a job over
// within one read). Requests and runs are therefore counted over the Listener's life: a request
// that a run already answered is no new one.
enum class JobSignal {
  kRequested,     // perf log MessageReceived_<job message type> (every request)
  kAcknowledged,  // _diag "Acknowledging runner request" (only when the server asks): a request,
                  // unless the perf log tells of requests (then it is the same one again)
  kRunning,       // stdout "Running job: …" (acquired; the first renew follows)
  kCompleted,     // stdout "Job … completed with result: …"
};

struct JobTrack {
  std::optional<Duration> requested_at{};  // monotonic; set while a job request is open
  bool worker_seen = false;                // a Worker ran since it opened
  std::optional<Duration> worker_gone_at{};  // monotonic; when its Worker was first seen gone
  std::string job;                         // its name, once "Running job" told it
  int64_t requests = 0;                    // requests seen from this Listener
  int64_t runs = 0;                        // "Running job" lines seen from it (and dropped requests)
  bool perf_seen = false;                  // its perf log tells of requests
  bool operator==(const JobTrack&) const = default;
};

// Folds one signal, in the order the runner wrote them, at monotonic time `now`.
JobTrack apply_job_signal(JobTrack t, JobSignal s, Duration now, const std::string& job = "");

struct BusyFacts {
  JobTrack track;
  bool worker_running = false;   // a Runner.Worker process of the runner user exists
  bool listener_running = true;  // false once the Listener exited (nothing more will come)
  Duration now{0};               // monotonic
  Duration job_start_bound{0};
  // After its Worker exits, the Listener prints the completion line (for a crashed Worker, after
  // sending its output to GitHub): the job is in hand until the line comes, for at most this long.
  Duration job_completion_wait{0};
};

struct BusyDecision {
  bool busy = false;
  JobTrack track;      // what to keep for the next call
  std::string reason;  // set when a request ends without a completion line
};

BusyDecision decide_busy(const BusyFacts& facts);

// The open request settled as over unless a Worker followed it. For requests told while processes a
// job left beside the Listener ran: the runner's user, they could write the runner's logs, and a
// request they forged would otherwise keep busy up to job_start_bound after they are gone.
JobTrack settle_unconfirmed_request(JobTrack track);

}  // namespace runpool::agent
