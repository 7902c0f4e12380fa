// `runpoolctl refresh` as a pure decision: from one snapshot — the table's records, EC2's view of
// the pool's instances, GitHub's runners, the swept pool queues, the time (AWS clock) — to a plan,
// a list of actions each naming the rule that produced it (for --dry-run and the logs). The
// controller's shell (controller/refresh.cc) gathers the snapshot and carries the plan out; every
// write it makes is one of transitions.h's conditional steps, built from the record as read here,
// so a concurrent provision, release or refresh that got there first simply wins.
//
// The snapshot must be gathered in this order: GitHub's runners, then EC2, then the table scan,
// then the queues. The table is then the newest view, and every "X has no record" conclusion is
// about something that existed before the scan began (a runner is registered only after its
// record exists; an instance launched after DescribeInstances is younger than the launch grace).
// Between full listings (common/pool/runner_listing.h) `runners` holds only runners read after the
// scan — looked up by the ids of records, or listed and cut to instances with a record — so no
// runner in it is judged for having no record.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/pool/instance_record.h"
#include "common/pool/pool_sweep.h"
#include "common/pool/transitions.h"

namespace runpool::pool {

struct RefreshPolicy {
  Timeouts timeouts{};
  // An instance (or record) younger than this may be inside a provision, between CreateFleet and
  // the record's PutItem: it is neither terminated as untracked nor closed as missing from EC2.
  int64_t launch_grace_ms = 5 * 60'000;
  // An idle record's advertise_pending younger than this belongs to a release still sending it.
  int64_t advertise_grace_ms = 60'000;
  // An idle instance whose agent has not beaten for this long cannot be claimed: it is retired.
  int64_t agent_silence_ms = 10 * 60'000;
  // max_instance_age by resource class (absent or 0: none): an older idle instance is retired.
  std::map<std::string, int64_t> max_instance_age_ms{};
  // keep_failed: a failed instance (agent.failed, or never registered by its deadline) is kept
  // this long for inspection instead of terminated (0: off; common/pool/keep_failed.h).
  int64_t keep_failed_ms = 0;
};

// One instance as DescribeInstances (filtered by the pool tag, every state) reported it.
struct Ec2Instance {
  std::string instance_id;
  std::string state;       // "pending", "running", "shutting-down", "terminated", "stopping", "stopped"
  int64_t launch_ms = 0;   // 0: EC2 did not say
  std::string pool_tag;    // the runpool:pool tag
  std::string table_tag;   // the runpool:table tag
};

// One runner as GitHub's list reported it.
struct RunnerView {
  int64_t id = 0;
  std::string name;
  bool busy = false;
  bool online = true;  // GitHub's status: "online" (true) or "offline"
};

struct RefreshSnapshot {
  std::string pool;
  std::string table;
  int64_t now_ms = 0;
  std::vector<InstanceRecord> records;             // the whole scan; other pools' records are ignored
  std::optional<std::vector<Ec2Instance>> ec2;     // nullopt: EC2 could not be read (its rules skip)
  std::optional<std::vector<RunnerView>> runners;  // nullopt: GitHub could not be read (ghosts skip)
  std::vector<PoolView> pools;                     // the classes whose queues were swept
};

enum class ActionKind {
  kTerminate,           // begin_terminate, TerminateInstances, close_record once EC2 says terminated
  kRetryTerminate,      // (terminating) TerminateInstances again, close_record once terminated
  kTerminateUntracked,  // TerminateInstances of an instance with no live record
  kClose,               // close_record: the instance is gone from EC2
  kDrain,               // start_drain with the pass's remove token
  kReturnToPool,        // return_to_pool, SendMessage, advertised
  kAdvertise,           // SendMessage for the idle generation, advertised
  kMarkAdvertised,      // advertised only: the message is in the queue
  kDeleteRecord,        // DeleteItem, conditional on still terminated (retention)
  kDeleteRunner,        // DELETE the ghost runner (422: busy, kept)
  kDeleteMessage,       // a stale, duplicate or malformed pool message
  kReleaseMessage,      // a valid pool message: visible again at once
  kMarkRunning,         // mark_running: a shared runner registered while no scale-up waited for it
  kKeep,                // keep_for_inspection: a failed instance kept (keep_failed), not terminated
};

std::string_view action_name(ActionKind kind);

struct Action {
  ActionKind kind = ActionKind::kTerminate;
  std::string rule;    // stable id, e.g. "deadline.idle"
  std::string reason;  // readable, for --dry-run and logs
  bool warn = false;   // worth a warning (overdue termination, malformed message, …)
  std::string instance_id;
  std::optional<InstanceRecord> record;  // as read: the conditional write is built from it
  int64_t runner_id = 0;                 // kDeleteRunner
  std::string runner_name;
  std::string resource_class;  // pool messages and advertising: whose queue
  ReceivedMessage message;     // kDeleteMessage, kReleaseMessage
};

struct RefreshPlan {
  // In the order to carry them out: pool messages first (they are held invisible from other
  // provisions until then), then records and instances, runners, retention.
  std::vector<Action> actions;
  std::vector<std::string> notes;  // seen and deliberately left alone this pass
};

RefreshPlan plan_refresh(const RefreshSnapshot& snapshot, const RefreshPolicy& policy);

// The idle records of `pool` of each class in the scan, to compare with each queue's depth. Shared
// records are never in a queue, so never counted.
std::vector<InstanceRecord> idle_records(const std::vector<InstanceRecord>& records, const std::string& pool,
                                         const std::string& resource_class);

// "terminate i-0abc… [deadline.idle]: idle past its deadline by 4m"
std::string describe(const Action& action);

}  // namespace runpool::pool
