// The agent's end of its wake-up queue (common/pool/wake_queue.h): finds the queue runpoolctl
// made for this instance (its policy lets only this instance's credentials in, so the instance
// role needs no SQS permission), long-polls it on a thread of its own and nudges the main loop for
// every wake-up, so an idle agent reads its record the moment runpoolctl claims it. Any failure —
// no queue (an instance launched by an older runpoolctl), no access — only means the agent polls
// its record at the shorter assignment interval until the queue works.
#pragma once

#include <atomic>
#include <string>

#include "agent/stop_flag.h"
#include "common/aws/sqs.h"

namespace runpool::agent {

class WakeListener {
 public:
  WakeListener(aws::SqsClient& sqs, std::string queue_name) : sqs_(sqs), name_(std::move(queue_name)) {}

  // One long poll of up to `wait_seconds` (looking the queue's URL up first when needed); the
  // wake-ups it received are deleted. True when one came. Throws on any failure; when SQS says the
  // queue does not exist the next call looks it up again.
  bool poll_once(int wait_seconds);

  // A long poll is open or the last one succeeded (thread-safe): the main loop may poll its
  // record rarely.
  bool active() const { return active_.load(); }

  // The thread's body: poll_once until `stop`, nudging it for each wake-up. Failures are logged
  // (once per distinct message) and retried after a back-off of 1 s doubling to 1 min.
  void run(StopFlag& stop);

 private:
  aws::SqsClient& sqs_;
  std::string name_;
  std::string url_;
  std::atomic<bool> active_{false};
};

}  // namespace runpool::agent
