// The state table's one item per instance, as plain data. Who writes what is the heart of the
// design (../docs/design.md): the controller owns the lifecycle fields, the agent only its own
// item's agent fields. Times are epoch milliseconds on the AWS clock (see aws_clock.h), so that
// liveness never depends on the controller's and the instance's clocks agreeing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/secret.h"

namespace runpool::pool {

enum class State { kCreated, kClaimed, kRunning, kDraining, kIdle, kTerminating, kTerminated };

std::string_view state_name(State s);
std::optional<State> parse_state(std::string_view name);
bool is_terminal(State s);  // terminated only: every other state has a deadline

enum class UsageClass { kSpot, kOnDemand };
std::string_view usage_class_name(UsageClass u);
std::optional<UsageClass> parse_usage_class(std::string_view name);

// What the agent reports for a given generation.
enum class AgentSignal { kNone, kBooted, kRegistered, kDrained, kFailed, kInterrupted };
std::string_view agent_signal_name(AgentSignal s);
std::optional<AgentSignal> parse_agent_signal(std::string_view name);

// What the operator's pre-run script came to on this boot (docs/agent.md); kNone: no script, or
// not reported yet. Inline: the table's attribute values, shared by the codec and the CLI.
enum class PreRun { kNone, kOk, kFailed, kTimeout };
inline std::string_view pre_run_name(PreRun p) {
  switch (p) {
    case PreRun::kNone: return "";
    case PreRun::kOk: return "ok";
    case PreRun::kFailed: return "failed";
    case PreRun::kTimeout: return "timeout";
  }
  return "";
}
inline std::optional<PreRun> parse_pre_run(std::string_view name) {
  for (PreRun p : {PreRun::kOk, PreRun::kFailed, PreRun::kTimeout}) {
    if (name == pre_run_name(p)) return p;
  }
  return std::nullopt;
}

// How a failed detail begins when GitHub refused the runner's version (the Listener's exit 7):
// the image's runner must be rolled, restarting it cannot help.
inline constexpr std::string_view kRunnerVersionDeprecated = "runner version deprecated";

struct InstanceRecord {
  std::string instance_id;

  // Lifecycle fields: written by the controller only, each change one conditional write.
  State state = State::kCreated;
  std::string label;       // the assignment (run) label; empty when unassigned
  int64_t generation = 0;  // bumped by every new assignment
  int64_t deadline_ms = 0;       // when the current state expires
  int64_t hard_deadline_ms = 0;  // running/draining: terminate regardless after this
  int64_t state_since_ms = 0;
  int64_t created_ms = 0;
  std::string pool;
  std::string resource_class;
  UsageClass usage_class = UsageClass::kOnDemand;
  std::string instance_type;
  Secret reg_token;     // registration token for this generation; the agent removes it once used
  std::string reg_url;  // where to register: https://github.com/owner[/repo] (or GHES)
  Secret remove_token;  // for deregistering during a drain; the agent removes it once used
  // A scale-set assignment's just-in-time runner configuration (instead of reg_token: the agent
  // runs no config.sh, the runner takes one job); the agent removes it once read.
  Secret jit_config;
  // The instance's seal key pair (common/pool/sealed_field.h), made at launch. Every token above
  // written after launch is sealed to `seal_key`, which only the controller writes; `open_key`,
  // its private half, is in the record only until the agent has taken it. "": a record from
  // before sealing, whose tokens are plain.
  std::string seal_key;
  Secret open_key;
  bool advertise_pending = false;  // idle, but the pool message may not be sent yet
  // A shared pool's instance: registered once with the pool's static labels (held in `label`),
  // serving any workflow's jobs; after a drain it is terminated, never returned to the pool.
  bool shared = false;
  std::string os;               // "linux" or "windows": picks scale-down's minimum running time
  int64_t orphan_since_ms = 0;  // scale-down's orphan mark (0: not marked); terminated next pass
  // keep_failed: a failed instance kept running, out of service, for inspection until then (0: not
  // kept); refresh terminates it once that has passed (common/pool/keep_failed.h).
  int64_t kept_until_ms = 0;
  bool bypass_removal = false;  // an operator's mark: scale-down never removes this instance
  std::string ami_id;           // the AMI its launch asked for (the class's image, else image_id); "": unknown
  // `runpoolctl retire` marked it while assigned: its release retires it instead of returning it.
  bool retire_pending = false;
  // The scope of its last assignment when its class reuses same-scope only ("repository:owner/name"
  // or "owner:owner", common/pool/reuse_policy.h): only a claim of that scope may take it. "": untagged.
  std::string reuse_scope_key;
  // Draining: a provision waits for it until then, counting it as coming capacity
  // (controller/take_draining.h); no other provision waits for it or takes it before. 0: none.
  int64_t awaited_until_ms = 0;
  // What its class lets jobs do ("user", "docker", "sudo"; common/pool/reuse_policy.h), written at
  // launch: the agent grants it to each assignment's job user. "": a record from before the field
  // (the agent's own job_privileges applies).
  std::string job_privileges;
  // A job lost to a spot interruption (common/pool/spot_rerun.h): what the controller decided for
  // it, once — "requested <job id>" before it asks GitHub, then the outcome. "": not decided.
  std::string spot_rerun;
  // The workflow run its job lost to spot belongs to ("owner/name <run id>"), noted while the record
  // still had its label: the label goes when the record is closed, before the run is over.
  std::string spot_run;

  // Agent fields: written by the instance's own agent only.
  int64_t heartbeat_ms = 0;
  AgentSignal signal = AgentSignal::kNone;
  int64_t signal_generation = 0;  // the generation the signal speaks for
  std::string signal_detail;
  int64_t runner_id = 0;
  std::string runner_name;
  bool busy = false;
  std::string agent_version;
  std::string runner_version;      // the Listener's "Current runner version" at its last start
  PreRun pre_run = PreRun::kNone;  // the pre-run script's result on this boot
  std::string pre_run_detail;      // "exit 3: <last line>", ≤ 200 characters
  // The job in hand when a spot interruption notice came: its name as the runner printed it ("-":
  // a job request whose name was not printed yet), the generation it ran for, and the runner's
  // result if it still ended on the instance ("Succeeded", "Failed", "Canceled"…). "": none.
  std::string spot_job;
  int64_t spot_generation = 0;
  std::string spot_job_result;
};

}  // namespace runpool::pool
