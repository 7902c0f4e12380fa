// `runpoolctl retire`: which instances run something other than what the operator calls current
// (an AMI, a runner version, an agent version), and what to do with each. Pure, over the records.
// "Not matching" semantics: an instance is current only when every given value equals its own; a
// record that does not report a value (an older agent, a launch before records carried the AMI)
// cannot be shown current, so it counts as outdated.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/pool/instance_record.h"

namespace runpool::pool {

struct RetireCriteria {
  std::optional<std::string> ami_id;          // the current AMI; nullopt: not a criterion
  std::optional<std::string> runner_version;  // the current runner version
  std::optional<std::string> agent_version;   // the current agent version
  bool any() const { return ami_id || runner_version || agent_version; }
};

// "" when `r` is current under `c`; otherwise why not ("runner 2.330.0, not 2.336.0; …").
std::string outdated_reason(const InstanceRecord& r, const RetireCriteria& c);

enum class RetireAction {
  kKeep,           // current, another pool's, already ending, or a shared instance
  kRetireNow,      // idle: idle(gen) → terminating, as refresh retires
  kMark,           // assigned: set retire_pending, so that its release retires it
  kAlreadyMarked,  // assigned and marked by an earlier retire
};
std::string_view retire_action_name(RetireAction a);

struct RetireDecision {
  RetireAction action = RetireAction::kKeep;
  std::string reason;
};

RetireDecision decide_retire(const InstanceRecord& r, const RetireCriteria& c, const std::string& pool);

// Whether a claim may take this instance or refresh must retire it instead: marked by retire, or
// older than its class's max_instance_age (0: no limit), or launched before sealed tokens (no
// seal key: sealed_field.h). "" when it may serve.
std::string retirement_due(const InstanceRecord& r, int64_t now_ms, int64_t max_instance_age_ms);

}  // namespace runpool::pool
