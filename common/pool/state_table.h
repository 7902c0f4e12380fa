// The shared state table behind a small interface: the controller's conditional lifecycle writes
// and the agent's writes to its own item. One real implementation (DynamoStateTable); the write
// descriptions (Expect, LifecycleChange, AgentReport) are plain data that pure functions build.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/pool/instance_record.h"

namespace runpool::pool {

// What a conditional write requires of the item. Empty fields are not checked; the item must
// always exist.
struct Expect {
  std::vector<State> states{};              // one of these
  std::optional<int64_t> generation{};      // exactly this generation
  std::optional<std::string> label{};       // exactly this label
  std::optional<AgentSignal> signal{};      // the agent reported this signal …
  std::optional<int64_t> signal_generation{};  // … for this generation
  // The agent does not report busy (busy absent or false): scale-down's drain of an idle shared
  // runner, so that the agent's own report — the authority on busy — is checked in the write itself.
  bool agent_not_busy = false;
  // No operator's mark since the record was read: `runpoolctl retire`'s retire_pending absent or
  // false, keep_failed's kept_until absent or 0. An instance returned to the pool or claimed on a
  // read that predates the mark would undo it.
  bool unmarked = false;
  // No provision waits for it at this time: awaited_until absent or not after it.
  std::optional<int64_t> not_awaited_at{};
  // The controller's spot re-run mark is exactly this ("": absent): the re-run is decided once.
  std::optional<std::string> spot_rerun{};
};

// A controller change to lifecycle fields. Unset fields stay as they are.
struct LifecycleChange {
  std::optional<State> state{};
  std::optional<int64_t> generation{};
  std::optional<std::string> label{};  // "" removes the label (the item leaves the label index)
  std::optional<int64_t> deadline_ms{};
  std::optional<int64_t> hard_deadline_ms{};  // 0 removes it
  std::optional<int64_t> state_since_ms{};
  std::optional<Secret> reg_token{};     // empty removes it
  std::optional<std::string> reg_url{};
  std::optional<Secret> remove_token{};  // empty removes it
  std::optional<Secret> jit_config{};    // empty removes it
  std::optional<bool> advertise_pending{};
  std::optional<int64_t> orphan_since_ms{};  // 0 removes the orphan mark
  std::optional<int64_t> kept_until_ms{};    // keep_failed's mark; 0 removes it
  std::optional<bool> bypass_removal{};      // false removes the mark
  std::optional<bool> retire_pending{};      // false removes the mark
  std::optional<std::string> reuse_scope_key{};  // "" removes the tag
  std::optional<int64_t> awaited_until_ms{};     // a provision's wait for the drain; 0 removes it
  std::optional<std::string> spot_rerun{};       // the spot re-run mark (never removed once set)
  std::optional<std::string> spot_run{};         // the run of a job lost to spot (never removed once set)
  // No agent field is ever touched here: a new assignment is told apart from the previous one by
  // the generation its signal names, not by clearing the agent's fields.
};

// The agent's write to its own item. The signal and token removals are conditional on
// `generation` being the item's current generation: an agent acting on an old assignment fails.
struct AgentReport {
  std::optional<int64_t> heartbeat_ms{};
  std::optional<bool> busy{};
  std::optional<AgentSignal> signal{};
  std::optional<std::string> signal_detail{};
  std::optional<int64_t> runner_id{};
  std::optional<std::string> runner_name{};
  std::optional<std::string> agent_version{};
  std::optional<std::string> runner_version{};  // "" writes nothing
  std::optional<PreRun> pre_run{};              // kNone writes nothing
  std::optional<std::string> pre_run_detail{};  // "" is written as "-"
  // The job in hand at a spot interruption notice ("-": not named yet), written with `generation`
  // as spot_generation; and the runner's result when it still ended on the instance.
  std::optional<std::string> spot_job{};
  std::optional<std::string> spot_job_result{};
  bool take_reg_token = false;
  bool take_remove_token = false;
  bool take_jit_config = false;
  bool take_open_key = false;  // the instance's private seal key, taken once at boot (any generation)
  std::optional<int64_t> generation{};  // required when signal, spot_job or a take is set
};

struct ScanStats {
  long items = 0;
  long skipped = 0;  // foreign or corrupted items (logged, never acted on)
  long pages = 0;
};

class StateTable {
 public:
  virtual ~StateTable() = default;

  // Strongly consistent read; nullopt when there is no item (and, with a warning, for a
  // corrupted one).
  virtual std::optional<InstanceRecord> get(const std::string& instance_id) = 0;
  // get() of many at once, strongly consistent, by instance id: an id with no item (or a
  // corrupted one) is absent. DynamoDB: one BatchGetItem per 100 ids, where get() costs one
  // GetItem each. A failure throws, as get() does; nothing is returned partly.
  virtual std::map<std::string, InstanceRecord> get_many(const std::vector<std::string>& instance_ids) = 0;
  // Writes a new record; false when an item with that id already exists.
  virtual bool create(const InstanceRecord& record) = 0;
  // One conditional write; false when the item did not meet `expect` (nothing was written).
  virtual bool transition(const std::string& instance_id, const Expect& expect, const LifecycleChange& change) = 0;
  // Every record with this label (paginated query on the label index).
  virtual std::vector<InstanceRecord> by_label(const std::string& label) = 0;
  // Every record of the table, page by page, strongly consistent.
  virtual ScanStats scan(const std::function<void(const InstanceRecord&)>& visit) = 0;
  // scan(), eventually consistent (half the read capacity on DynamoDB): for a caller that acts on
  // a record only through a conditional write or after reading it again.
  virtual ScanStats scan_eventually(const std::function<void(const InstanceRecord&)>& visit) = 0;
  // Deletes a record that still meets `expect`; false otherwise.
  virtual bool remove(const std::string& instance_id, const Expect& expect) = 0;

  // The agent's write; false when the item is gone or the generation moved on.
  virtual bool report(const std::string& instance_id, const AgentReport& report) = 0;
};

// A table that passes every call to another. Wrappers that inject faults, hook or log derive from
// it and override only the calls they change, as LevelDB's EnvWrapper does for Env.
class StateTableWrapper : public StateTable {
 public:
  explicit StateTableWrapper(StateTable& target) : target_(target) {}
  StateTable& target() { return target_; }

  std::optional<InstanceRecord> get(const std::string& instance_id) override { return target_.get(instance_id); }
  std::map<std::string, InstanceRecord> get_many(const std::vector<std::string>& instance_ids) override {
    return target_.get_many(instance_ids);
  }
  bool create(const InstanceRecord& record) override { return target_.create(record); }
  bool transition(const std::string& instance_id, const Expect& expect, const LifecycleChange& change) override {
    return target_.transition(instance_id, expect, change);
  }
  std::vector<InstanceRecord> by_label(const std::string& label) override { return target_.by_label(label); }
  ScanStats scan(const std::function<void(const InstanceRecord&)>& visit) override { return target_.scan(visit); }
  ScanStats scan_eventually(const std::function<void(const InstanceRecord&)>& visit) override {
    return target_.scan_eventually(visit);
  }
  bool remove(const std::string& instance_id, const Expect& expect) override {
    return target_.remove(instance_id, expect);
  }
  bool report(const std::string& instance_id, const AgentReport& report) override {
    return target_.report(instance_id, report);
  }

 private:
  StateTable& target_;
};

}  // namespace runpool::pool
