// The controller's half of a handshake with an agent. runpoolctl writes a record that asks its
// agent for something — a fresh assignment asks for `registered`, a drain for `drained` — and
// waits. Every such wait (provision, scale-up, release and scale-down's drains) reads the record
// again and again; this pure judge says, from what the waiter wrote, what the table holds now,
// what EC2 last said and the time, what happens next. Tested over its cases in handshake_test.cc;
// the loop around it is controller/await_agents.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/pool/instance_record.h"

namespace runpool::pool {

// What the waiter asked the agent for.
enum class Awaited {
  kRegistered,  // created or claimed(gen, label) → the agent's `registered` → running
  kDrained,     // draining(gen) → the agent's `drained` (its runner deregistered, the host clean)
};

struct HandshakeFacts {
  Awaited awaited = Awaited::kRegistered;
  const InstanceRecord* written = nullptr;  // what the waiter wrote: its generation and label
  const InstanceRecord* current = nullptr;  // the record as just read; null: no item
  std::string ec2_state;                    // the last EC2 look ("" when none or not found)
  int64_t now_ms = 0;                       // the AWS clock
  // kRegistered of an instance claimed from the pool: its agent was beating when it was claimed,
  // so a heartbeat older than this means the agent is gone (0: no such check).
  int64_t max_heartbeat_age_ms = 0;
  bool claimed_warm = false;
};

enum class Verdict {
  kDone,     // the agent answered: running (kRegistered) / drained (kDrained)
  kWrite,    // the waiter's write is due: mark running, or hand a fresh remove token
  kWait,     // not yet
  kFail,     // it can no longer get there: `reason` says why
  kGone,     // no record, or the instance ended (terminating, gone or stopped in EC2)
  kMovedOn,  // the record belongs to another assignment now, or went back to the pool
};
std::string_view verdict_name(Verdict v);

struct HandshakeDecision {
  Verdict verdict = Verdict::kWait;
  std::string reason;  // for kFail, kGone and kMovedOn: "is stopped in EC2", "its agent failed…"
  // kGone by EC2's word while the record is still open: the waiter closes it (nobody else will
  // until refresh).
  bool close_record = false;
  bool operator==(const HandshakeDecision&) const = default;
};

HandshakeDecision judge_handshake(const HandshakeFacts& f);

// "instance i-… is stopped in EC2", "instance i-…: its agent failed to register: …".
std::string handshake_problem(const std::string& instance_id, const HandshakeDecision& d);

}  // namespace runpool::pool
