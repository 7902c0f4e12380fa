// The controller's one wait for agents' answers (provision and scale-up for `registered`, the
// drains of release and scale-down for `drained`): each round one batch read of every record
// still waited for, an EC2 look every few seconds, the pure judge of common/pool/handshake.h on
// each, and the caller's handler acting on its verdict (mark running, hand a fresh token, settle
// a drained runner…). It ends when nothing is left, at the deadline, on cancellation, or when the
// handler says the whole wait has failed.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/pool/handshake.h"
#include "controller/context.h"

namespace runpool::controller {

struct AwaitItem {
  pool::InstanceRecord written;  // the record as the waiter wrote it
  bool claimed_warm = false;     // kRegistered: claimed from the pool (its agent was beating)
};

// The handler's answer for one record after its verdict.
enum class AwaitAction {
  kKeep,     // wait on (nothing happened yet, the write was refused, or a retry is due)
  kResolve,  // it leaves the wait
  kStop,     // the whole wait has failed (the handler keeps why)
};

// Called with what the judge saw (the written record, the current one or null, EC2's state) and
// its verdict.
using AwaitHandler = std::function<AwaitAction(const pool::HandshakeFacts&, const pool::HandshakeDecision&)>;

struct AwaitOptions {
  pool::Awaited awaited = pool::Awaited::kRegistered;
  std::chrono::steady_clock::time_point deadline{};
  bool stop_on_cancel = true;
  // A failed batch read ends the wait with the error (provision) or is tried again next round.
  bool retry_failed_reads = true;
  // The first EC2 look comes at once (provision: a launch that died at birth) or one interval in.
  bool look_at_ec2_first = false;
  std::chrono::milliseconds ec2_look_interval{std::chrono::seconds(5)};
};

enum class AwaitEnd { kAllResolved, kStopped, kTimedOut, kCancelled };

struct AwaitResult {
  AwaitEnd end = AwaitEnd::kAllResolved;
  std::vector<AwaitItem> pending;  // what was still waited for when it ended
};

// Throws only what a read throws with retry_failed_reads = false; a handler's exception is logged
// and its record waited on.
AwaitResult await_agents(Context& ctx, std::vector<AwaitItem> items, const AwaitOptions& o, const AwaitHandler& on);

}  // namespace runpool::controller
