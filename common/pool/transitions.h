// Every lifecycle step as a pure function: from the record the controller read (and the time and
// policy), the conditional write that performs the step. The write names the state, generation
// and label it expects, so a stale controller — or a concurrent one that got there first — fails
// its condition instead of overwriting (docs/design.md). Tested exhaustively in transitions_test.
#pragma once

#include <string>

#include "common/pool/instance_record.h"
#include "common/pool/sealed_field.h"
#include "common/pool/state_table.h"

namespace runpool::pool {

// How long each state may last. Every non-terminal state has a deadline.
struct Timeouts {
  int64_t boot_ms = 10 * 60'000;          // created: launch → registered
  int64_t registration_ms = 5 * 60'000;   // claimed: claim → registered
  int64_t max_runtime_ms = 6 * 3'600'000;  // running: then a drain starts
  int64_t drain_ms = 15 * 60'000;         // draining: drain → drained, else terminated
  int64_t hard_grace_ms = 30 * 60'000;    // running: terminated regardless after max runtime + this
  int64_t idle_ttl_ms = 60 * 60'000;      // idle: an unclaimed instance retires after this
  int64_t terminate_ms = 10 * 60'000;     // terminating: retry termination until then
  int64_t retention_ms = 24 * 3'600'000;  // terminated records are deleted after this
};

// A conditional write: what the item must look like, and what changes.
struct Step {
  Expect expect;
  LifecycleChange change;
};

// The record a fresh launch writes: created, generation 1, assigned to `label`.
InstanceRecord launched_record(const std::string& instance_id, const std::string& pool, const std::string& label,
                               const std::string& resource_class, UsageClass usage, const std::string& type,
                               const Secret& reg_token, const std::string& reg_url, int64_t now_ms,
                               const Timeouts& t);

// A fresh launch's record given its instance's key pair (sealed_field.h): both halves recorded,
// and the registration token or JIT configuration it already carries sealed to it. Every step
// below seals the tokens it writes to a record that has a seal key.
void give_seal_keys(InstanceRecord& r, const SealKeys& keys);

// idle(gen) → claimed(gen + 1) for `label`, with the registration credentials.
Step claim(const InstanceRecord& idle, const std::string& label, const Secret& reg_token, const std::string& reg_url,
           int64_t now_ms, const Timeouts& t);

// idle(gen) → claimed(gen + 1) for a scale set's job: `jit_config` (generated for the runner
// named runner_name(pool, instance, gen + 1)) in place of a registration token.
Step claim_jit(const InstanceRecord& idle, const std::string& label, const Secret& jit_config, const std::string& reg_url,
               int64_t now_ms, const Timeouts& t);

// created|claimed(gen) → running, once the agent reported `registered` for gen.
Step mark_running(const InstanceRecord& r, int64_t now_ms, const Timeouts& t);

// created|claimed|running(gen, label) → draining, handing the agent a remove token.
Step start_drain(const InstanceRecord& r, const Secret& remove_token, int64_t now_ms, const Timeouts& t);

// draining(gen) whose agent handed its refused remove token back (the record holds none, and no
// `drained` or `failed` for gen yet) → the same drain with a fresh token.
bool wants_remove_token(const InstanceRecord& r);
Step refresh_remove_token(const InstanceRecord& r, const Secret& remove_token);

// A shared pool's idle runner beyond the idle quota: running(gen, label) → draining, like
// start_drain, but only while the agent does not report busy — the agent, the authority on busy,
// is checked in the write itself, so a job picked up since scale-down read the record wins.
Step drain_idle_shared(const InstanceRecord& r, const Secret& remove_token, int64_t now_ms, const Timeouts& t);

// Scale-down's orphan mark (missing from GitHub past its boot time), on the state and generation
// read: a record that moved on since is judged afresh next pass. unmark_orphan clears it for the
// generation read; set_bypass_removal is an operator's mark and needs only the item.
Step mark_orphan(const InstanceRecord& r, int64_t now_ms);
Step unmark_orphan(const InstanceRecord& r);
Step set_bypass_removal(const InstanceRecord& r, bool bypass);

// `runpoolctl retire`'s mark on an assigned instance, for the state and generation read: its
// release (or refresh) then retires it instead of returning it to the pool.
Step mark_retire(const InstanceRecord& r);

// draining(gen), agent `drained` for gen → idle, unassigned, advertise_pending set, tagged with
// `reuse_scope_key` ("" clears any tag: any scope may claim it; see reuse_policy.h).
Step return_to_pool(const InstanceRecord& r, int64_t now_ms, const Timeouts& t, const std::string& reuse_scope_key = "");

// draining(gen) that no provision waits for at `now_ms` → a provision waits for it until
// `until_ms`: two provisions never both count one drain as their coming capacity. The wait lapses
// at `until_ms` (return_to_pool ends it sooner).
Step await_drain(const InstanceRecord& r, int64_t until_ms, int64_t now_ms);

// idle(gen) with advertise_pending → cleared, after the pool message was sent.
Step advertised(const InstanceRecord& r);

// <current state>(gen) → terminating. Expecting the exact state is what keeps a concurrent claim
// from winning an idle instance that is being retired, and vice versa.
Step begin_terminate(const InstanceRecord& r, int64_t now_ms, const Timeouts& t);

// terminating|any non-terminated state → terminated, once EC2 confirms the instance is gone.
Step close_record(const InstanceRecord& r, int64_t now_ms, const Timeouts& t);

// True when the record's current state has run past its deadline.
bool deadline_passed(const InstanceRecord& r, int64_t now_ms);
// True when the agent reported `s` for the record's current generation.
bool agent_reported(const InstanceRecord& r, AgentSignal s);

}  // namespace runpool::pool
