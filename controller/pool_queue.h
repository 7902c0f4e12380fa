// The pool: one SQS queue per resource class ("<pool>-<class>") whose messages advertise idle
// instances (bodies: common/pool/pool_message.h). Behind an interface so the claim logic can be
// tested in memory; SqsPoolQueue (sqs_pool_queue.h) is the real one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/pool/claim.h"

namespace runpool::controller {

struct QueuedMessage {
  std::string message_id;
  std::string receipt;  // for remove / make_visible
  std::string body;
  std::optional<pool::PoolMessage> message;  // nullopt: not a pool message (delete it)
};

struct QueueDepth {
  int64_t visible = 0;    // ApproximateNumberOfMessages
  int64_t in_flight = 0;  // ApproximateNumberOfMessagesNotVisible
};

class PoolQueue {
 public:
  virtual ~PoolQueue() = default;
  // Up to `max` (1..10) messages, waiting up to `wait` (0..20 s) for the first; each stays hidden
  // from other receivers for `visibility`.
  virtual std::vector<QueuedMessage> receive(const std::string& resource_class, int max, Duration wait,
                                             Duration visibility) = 0;
  virtual void remove(const std::string& resource_class, const std::string& receipt) = 0;
  // Removes many received messages (DeleteMessageBatch, 10 a request); a receipt that could not be
  // removed is logged, not thrown: its message reappears and the next reader drops it.
  virtual void remove_many(const std::string& resource_class, const std::vector<std::string>& receipts) = 0;
  // Makes a received message visible again at once (ChangeMessageVisibility 0).
  virtual void make_visible(const std::string& resource_class, const std::string& receipt) = 0;
  virtual void advertise(const std::string& resource_class, const pool::PoolMessage& message) = 0;
  virtual QueueDepth depth(const std::string& resource_class) = 0;

  // The agents' wake-up queues (common/pool/wake_queue.h), created with each launched instance
  // (a policy lets only that instance receive). wake() asks one agent to read its record now; it
  // is a hint, so callers log its failures and go on (wake_agents below).
  virtual void create_wake_queue(const std::string& instance_id) = 0;
  virtual void wake(const std::string& instance_id) = 0;
  virtual std::vector<std::string> wake_queue_urls() = 0;  // every wake-up queue of this pool
  virtual void delete_queue(const std::string& queue_url) = 0;
};

// wake() for each instance, never throwing: a failure (an agent from before wake-up queues, a
// queue deleted by refresh) is logged and costs only that agent's poll delay.
void wake_agents(PoolQueue& queue, const std::vector<std::string>& instance_ids);

}  // namespace runpool::controller
