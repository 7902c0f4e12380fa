// What a conditional write means for a record held in memory: whether the record meets a write's
// condition, and the record after a lifecycle change or an agent's report — the same meaning
// DynamoStateTable gives them in its ConditionExpressions and UpdateExpressions. Production code
// uses it to update a record it already holds after a write won; MemoryStateTable is built on it.
#pragma once

#include "common/pool/state_table.h"

namespace runpool::pool {

// Whether `r` meets `e` (the item exists: `r` is it).
bool meets(const InstanceRecord& r, const Expect& e);
// Applies a lifecycle change to a record.
void apply(InstanceRecord& r, const LifecycleChange& c);
// Applies an agent report to a record (the caller checked the generation).
void apply(InstanceRecord& r, const AgentReport& a);

}  // namespace runpool::pool
