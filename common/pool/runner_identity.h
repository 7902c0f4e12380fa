// Which GitHub runner is an instance's. The record's `runner_id` is the agent's word, and anyone
// holding the instance role's credentials can write it (docs/security.md, "The record"): an id
// alone could name any runner in the owner's scope, another tenant's included. The runner's name
// is the controller's own rule — runner_name(pool, instance, generation), the name the agent
// registers with and the JIT configuration carries — so the controller deletes a runner, takes its
// labels or counts its busy flag for an instance only when GitHub names it so.
#pragma once

#include <string>
#include <string_view>

#include "common/pool/instance_record.h"

namespace runpool::pool {

// runner_name(r.pool, r.instance_id, r.generation): the runner of the record's current assignment.
std::string records_runner_name(const InstanceRecord& r);

// True when GitHub's name for a runner is the record's current assignment's runner name.
bool is_records_runner(const InstanceRecord& r, std::string_view github_name);

}  // namespace runpool::pool
