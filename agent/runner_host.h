// What the agent does to the runner on this machine, behind small interfaces so that the loop can
// be tested with fakes: the runner root (configure, remove, drain detection, cleaning) and one
// running Listener. The real implementation is LocalRunnerHost (local_runner_host.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/decisions.h"
#include "agent/runner_file.h"
#include "agent/runner_output.h"
#include "common/secret.h"

namespace runpool::agent {

// One `bin/Runner.Listener run`, started by the host. Non-blocking: the loop polls it.
class ListenerProcess {
 public:
  virtual ~ListenerProcess() = default;
  // Events from its stdout and its _diag log since the last call.
  virtual std::vector<RunnerEvent> poll_events() = 0;
  // Its exit status once it ended (every process of its group is then signalled to end too).
  virtual std::optional<ExitStatus> exit_status() = 0;
  // SIGINT to the Listener alone: a graceful stop; it cancels a job in hand its own way (steps
  // share its process group: a signal to the group would reach them directly).
  virtual void interrupt() = 0;
  // SIGUSR1 to the Listener alone (a Worker would die of it): a runner started with
  // --drain-on-sigusr1 takes no new job, finishes the one in hand and exits.
  virtual void drain() = 0;
  virtual void kill() = 0;       // SIGKILL to its process group
  // The last lines it wrote, for a failure's detail (never holds a token: none is in its output).
  virtual std::string output_tail() const = 0;
};

struct CommandResult {
  int exit_code = -1;     // -1 when it timed out or could not start
  bool timed_out = false;
  std::string output;     // the tail of stdout and stderr

  bool ok() const { return exit_code == 0 && !timed_out; }
};

// How a Listener is started.
struct ListenerStart {
  // A scale-set assignment: the runner configures itself from it (ACTIONS_RUNNER_INPUT_JITCONFIG,
  // never argv) and is ephemeral.
  Secret jit_config;
  // `--drain-on-sigusr1`: only where the installed runner lists it, and only for an ephemeral runner
  // (the runner refuses it otherwise).
  bool drain_on_sigusr1 = false;
};

struct Registration {
  std::string url;    // https://github.com/owner[/repo]
  std::string label;  // the assignment label: the only label
  std::string name;   // unique: <pool>-<instance>-g<generation>
  Secret token;
};

class RunnerHost {
 public:
  virtual ~RunnerHost() = default;

  // Ensures the runner root exists and is usable by the runner user (copying the template when
  // the root has no Listener), granting the assignment's jobs `job_privileges` ("user", "docker",
  // "sudo"; "": the agent's own setting). Throws std::runtime_error with the reason.
  virtual void prepare(const std::string& job_privileges) = 0;
  // Between assignments, once cleaned: makes now what prepare() would make for an assignment of
  // `job_privileges` (the idle record's: those its class grants; "": the agent's own) — the next
  // job user, the runner installed, its directories — so that the claim's prepare() only hands it
  // over. Throws std::runtime_error (prepare() then makes it on the claim's path).
  virtual void ready_next(const std::string& job_privileges) = 0;
  // What `.runner` says (nullopt: not configured; RunnerFileError when unreadable).
  virtual std::optional<RunnerIdentity> configured() = 0;
  // Deletes stale configuration, then config.sh as the runner user, the token in the environment.
  virtual CommandResult configure(const Registration& r) = 0;
  // config.sh remove, the remove token in the environment: deletes the runner on GitHub.
  virtual CommandResult remove(const Secret& remove_token) = 0;
  // Deletes the runner's configuration and credential files only.
  virtual void remove_local() = 0;
  // `bin/Runner.Listener run` as the runner user.
  virtual std::unique_ptr<ListenerProcess> start_listener(const ListenerStart& how) = 0;
  // What the installed runner can do to drain: `bin/Runner.Listener run --help` as the runner
  // user, bounded in time. nullopt when it could not tell (failed, timed out).
  virtual std::optional<RunnerDrainSupport> drain_support() = 0;
  // The Listener an earlier agent started and left running (an agent restart), followed from now
  // on as if this agent had started it — its output, its job, its end (of unknown cause: it is not
  // this agent's child). nullptr when none runs.
  virtual std::unique_ptr<ListenerProcess> adopt_listener() = 0;
  // The generation whose runner is ephemeral (a JIT runner: it deletes its own configuration after
  // its one job), kept outside the runner root before such a runner starts, so that an agent
  // restarted after that runner ended can tell its assignment is over. Throws when it cannot keep it.
  virtual void mark_ephemeral(int64_t generation) = 0;
  // The last generation so marked (nullopt: none).
  virtual std::optional<int64_t> ephemeral_mark() = 0;
  virtual bool worker_running() = 0;  // a Runner.Worker runs in the Listener's process tree
  // The runner user owns the runner root (the operator's choice): the runner can update its own
  // installation. False in the agent's layout (root's installation, sticky root).
  virtual bool runner_owns_installation() = 0;
  // update.finished, which the runner's update.sh touches in the Listener's working directory
  // (the root) once it has swapped bin/: true when it is there, and then it is removed.
  virtual bool take_update_finished() = 0;
  // Ends what jobs left running outside the Listener's tree, unless that tree holds a job in hand
  // (a job's own processes are in it while it runs). Such a process runs as the runner's user and
  // can write what the runner writes — a job request in its logs — to keep the drain waiting.
  // Returns how many it ended.
  virtual int end_detached() = 0;
  // Ends every process of the runner user: SIGTERM, then SIGKILL after the cleanup bound.
  virtual void end_user_processes() = 0;
  // Between assignments: end the user's processes, delete configuration, credentials, .drain,
  // _diag, the work folder and the runner's home. Throws std::runtime_error when it cannot.
  virtual void clean() = 0;
};

// Terminating this instance.
class SelfTerminator {
 public:
  virtual ~SelfTerminator() = default;
  // TerminateInstances on our own id; throws on failure.
  virtual void terminate_self() = 0;
  // The OS shutdown fallback (poweroff); false when it could not be started.
  virtual bool shutdown_os() = 0;
};

// Spot interruption and rebalance notices.
struct Notice {
  enum Kind { kSpotInterruption, kRebalance } kind = kSpotInterruption;
  std::string detail;  // "spot instance-action terminate at 2026-…", "rebalance recommended at …"
};

class NoticeSource {
 public:
  virtual ~NoticeSource() = default;
  // A notice when IMDS has one (the same one again on later calls); throws when IMDS fails.
  virtual std::optional<Notice> poll() = 0;
};

// systemd's notify protocol (READY, STATUS, WATCHDOG); no-ops without systemd.
class Notifier {
 public:
  virtual ~Notifier() = default;
  virtual void ready() = 0;
  virtual void status(const std::string& text) = 0;
  virtual void watchdog() = 0;
  virtual void stopping() = 0;
};

}  // namespace runpool::agent
