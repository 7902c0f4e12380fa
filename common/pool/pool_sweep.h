// Reconciling one pool queue with the table, as a pure decision. `refresh` sweeps a class's queue
// when its approximate depth differs from the number of idle records: it receives every visible
// message (short visibility timeout, bounded rounds), re-reads the records they name, and this
// says, per message, whether it is stale (delete) or valid (make visible again at once), and which
// idle records no message names (re-advertise). Claims re-validate every message against the table
// anyway; this is what keeps lost and stale messages from piling up.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/pool/instance_record.h"

namespace runpool::pool {

// Whether a class's queue needs sweeping: its depth (visible + in flight + delayed) differs from
// the number of idle records of the class.
bool needs_sweep(int64_t queue_depth, int64_t idle_records);

struct ReceivedMessage {
  std::string message_id;
  std::string receipt_handle;
  std::string body;
};

// What a sweep of one class's queue saw.
struct PoolView {
  std::string pool;
  std::string resource_class;
  // Every message received, in order. SQS may hand the same message out twice (its visibility ran
  // out between rounds); the latest receipt is the one that counts.
  std::vector<ReceivedMessage> messages;
  // The sweep ended on an empty receive and no message was in flight elsewhere (held by a
  // provision's receive or another refresh) when it began: every message was seen. Only then is
  // an idle record with no message known to be missing from the pool.
  bool complete = false;
  // Records re-read (consistently) after the receive: every instance a message names and every
  // idle record of the class; nullopt: no item. Queue decisions are taken on these only: a message
  // or idle record that could not be re-read is left alone this pass.
  std::map<std::string, std::optional<InstanceRecord>> fresh;
};

// What becomes of a received message: visible again at once, or deleted.
enum class SweepFate { kRelease, kDelete };

struct MessageVerdict {
  ReceivedMessage message;
  SweepFate fate = SweepFate::kRelease;
  std::string rule;    // "pool.valid", "pool.unverified", "pool.malformed", "pool.stale",
                       // "pool.duplicate", "pool.retiring"
  std::string reason;  // for logs and --dry-run
  std::string instance_id;  // empty when malformed
};

struct AdvertiseDecision {
  InstanceRecord record;  // the fresh idle record: its generation goes into the message
  std::string rule;       // "pool.lost" (send), "pool.advertised" (a message exists: clear the flag)
  std::string reason;
};

struct SweepPlan {
  std::vector<MessageVerdict> messages;      // one per distinct message id
  std::vector<AdvertiseDecision> advertise;  // rule "pool.lost": SendMessage, then `advertised`
  std::vector<AdvertiseDecision> mark_advertised;  // rule "pool.advertised": `advertised` only
  std::vector<std::string> notes;            // things seen and deliberately left alone
};

// `idle` is the scan's idle records of this class; `retiring` the instances this pass terminates
// (their messages are deleted and they are never re-advertised). An idle record whose
// advertise_pending is younger than `advertise_grace_ms` is left to the release sending it.
SweepPlan plan_pool_sweep(const PoolView& view, const std::vector<InstanceRecord>& idle,
                          const std::set<std::string>& retiring, int64_t now_ms, int64_t advertise_grace_ms);

}  // namespace runpool::pool
