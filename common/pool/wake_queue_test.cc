#include "common/pool/wake_queue.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

TEST(WakeQueue, NameIsPoolWakeInstance) {
  EXPECT_EQ(wake_queue_name("ci", "i-0123456789abcdef0"), "ci-wake-i-0123456789abcdef0");
  EXPECT_EQ(wake_queue_prefix("ci"), "ci-wake-");
}

TEST(WakeQueue, NameLongerThanSqsAllowsIsRefused) {
  const std::string id = "i-0123456789abcdef0";  // 19 characters; "-wake-" 6: a pool of 55 fits
  EXPECT_TRUE(wake_queue_name(std::string(55, 'p'), id));
  EXPECT_EQ(wake_queue_name(std::string(55, 'p'), id)->size(), kMaxQueueName);
  EXPECT_FALSE(wake_queue_name(std::string(56, 'p'), id));
}

TEST(WakeQueue, SiblingUrlReplacesTheLastSegment) {
  EXPECT_EQ(sibling_queue_url("https://sqs.eu-west-1.amazonaws.com/123456789012/ci-linux", "ci-wake-i-1"),
            "https://sqs.eu-west-1.amazonaws.com/123456789012/ci-wake-i-1");
  EXPECT_EQ(sibling_queue_url("http://127.0.0.1:4566/000000000000/ci-linux", "x"),
            "http://127.0.0.1:4566/000000000000/x");
}

TEST(WakeQueue, InstanceOfAQueueUrlOrName) {
  EXPECT_EQ(wake_queue_instance("ci", "https://sqs.x/1/ci-wake-i-0123456789abcdef0"), "i-0123456789abcdef0");
  EXPECT_EQ(wake_queue_instance("ci", "ci-wake-i-01234567"), "i-01234567");
  // Not this pool's wake queues: a pool queue, another pool sharing the prefix, a bad id.
  EXPECT_FALSE(wake_queue_instance("ci", "https://sqs.x/1/ci-linux"));
  EXPECT_FALSE(wake_queue_instance("ci", "https://sqs.x/1/ci2-wake-i-01234567"));
  EXPECT_FALSE(wake_queue_instance("ci", "https://sqs.x/1/ci-wake-ci-wake-i-01234567"));
  EXPECT_FALSE(wake_queue_instance("ci", "https://sqs.x/1/ci-wake-i-0123456"));
  EXPECT_FALSE(wake_queue_instance("ci", "https://sqs.x/1/ci-wake-I-01234567"));
  EXPECT_FALSE(wake_queue_instance("ci", ""));
  // A pool whose own name contains "-wake-" still parses only its own queues.
  EXPECT_EQ(wake_queue_instance("a-wake-b", "a-wake-b-wake-i-01234567"), "i-01234567");
  EXPECT_FALSE(wake_queue_instance("a", "a-wake-b-wake-i-01234567"));
}

TEST(WakeQueue, StaleQueuesAreThoseWithoutALiveInstance) {
  std::vector<std::string> urls = {"https://q/1/ci-wake-i-00000001", "https://q/1/ci-wake-i-00000002",
                                   "https://q/1/ci-linux", "https://q/1/ci-wake-junk", "https://q/1/cd-wake-i-00000003"};
  EXPECT_EQ(stale_wake_queues("ci", urls, {"i-00000001"}), std::vector<std::string>{"https://q/1/ci-wake-i-00000002"});
  EXPECT_EQ(stale_wake_queues("ci", urls, {"i-00000001", "i-00000002"}), std::vector<std::string>{});
  EXPECT_EQ(stale_wake_queues("ci", urls, {}).size(), 2u);
  EXPECT_TRUE(stale_wake_queues("ci", {}, {}).empty());
}

}  // namespace
}  // namespace runpool::pool
