// The pool queues on SQS. Long polls go through their own SqsClient (its own HTTP connection):
// the curl client does one transfer at a time, and a poll must not hold up the table's calls.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "common/aws/sqs.h"
#include "controller/pool_queue.h"
#include "controller/settings.h"

namespace runpool::controller {

class SqsPoolQueue final : public PoolQueue {
 public:
  SqsPoolQueue(aws::SqsClient& sqs, aws::SqsClient& long_poll, const Settings& settings);

  std::vector<QueuedMessage> receive(const std::string& resource_class, int max, Duration wait,
                                     Duration visibility) override;
  void remove(const std::string& resource_class, const std::string& receipt) override;
  void remove_many(const std::string& resource_class, const std::vector<std::string>& receipts) override;
  void make_visible(const std::string& resource_class, const std::string& receipt) override;
  void advertise(const std::string& resource_class, const pool::PoolMessage& message) override;
  QueueDepth depth(const std::string& resource_class) override;
  void create_wake_queue(const std::string& instance_id) override;
  void wake(const std::string& instance_id) override;
  std::vector<std::string> wake_queue_urls() override;
  void delete_queue(const std::string& queue_url) override;

 private:
  std::string url(const std::string& resource_class);  // GetQueueUrl once per class
  std::string any_url();                                // a pool queue's, for wake-up queue URLs
  std::string any_arn();                                // its ARN (GetQueueAttributes once)

  aws::SqsClient& sqs_;
  aws::SqsClient& long_poll_;
  const Settings& settings_;
  std::mutex mu_;
  std::map<std::string, std::string> urls_;
  std::string arn_;
};

// The attributes every wake-up queue is created with (besides its policy): fixed, so CreateQueue
// stays idempotent when a launch is replayed. A wake-up older than a minute (SQS's shortest
// retention) is worthless anyway.
std::map<std::string, std::string> wake_queue_attributes();

// The attributes every pool queue is created with (init): fixed, so that CreateQueue stays
// idempotent across runpoolctl versions and settings (receivers pass their own visibility).
std::map<std::string, std::string> pool_queue_attributes();

}  // namespace runpool::controller
