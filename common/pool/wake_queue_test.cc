#include "common/pool/wake_queue.h"

#include <gtest/gtest.h>

#include "common/json.h"

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

constexpr const char* kInstanceRole = "AROA3XFRBF535PLBIFPI4";

TEST(WakeQueue, ThePolicyLetsOnlyItsInstanceReceive) {
  auto p = wake_queue_policy("arn:aws:sqs:eu-west-1:123456789012:ci-small", "ci", kInstanceRole, "i-0123456789abcdef0");
  ASSERT_TRUE(p);
  Json::Value doc = parse_json(*p, "policy");
  EXPECT_EQ(doc["Version"].asString(), "2012-10-17");
  ASSERT_EQ(doc["Statement"].size(), 1u);
  const Json::Value& st = doc["Statement"][0];
  EXPECT_EQ(st["Effect"].asString(), "Allow");
  // Not the account root: that only delegates to the role's identity policy, which has no SQS.
  EXPECT_EQ(st["Principal"]["AWS"].asString(), "*");
  EXPECT_EQ(write_json(st["Action"]), R"(["sqs:GetQueueUrl","sqs:ReceiveMessage","sqs:DeleteMessage"])");
  EXPECT_EQ(st["Resource"].asString(), "arn:aws:sqs:eu-west-1:123456789012:ci-wake-i-0123456789abcdef0");
  ASSERT_EQ(st["Condition"].size(), 1u);
  ASSERT_EQ(st["Condition"]["StringEquals"].size(), 2u);
  EXPECT_EQ(st["Condition"]["StringEquals"]["aws:userid"].asString(), "AROA3XFRBF535PLBIFPI4:i-0123456789abcdef0");
  EXPECT_EQ(st["Condition"]["StringEquals"]["aws:PrincipalAccount"].asString(), "123456789012");
  // Other partitions keep theirs.
  auto cn = wake_queue_policy("arn:aws-cn:sqs:cn-north-1:123456789012:ci-small", "ci", kInstanceRole, "i-01234567");
  ASSERT_TRUE(cn);
  EXPECT_NE(cn->find("arn:aws-cn:sqs:cn-north-1:123456789012:ci-wake-i-01234567"), std::string::npos);
}

TEST(WakeQueue, NoPolicyFromABadArnOrId) {
  for (const char* arn : {"", "arn:aws:sqs", "arn:aws:sqs:eu-west-1:123", "arn:aws:sns:eu-west-1:1:ci-small",
                          "xarn:aws:sqs:eu-west-1:1:ci", "arn::sqs:eu-west-1:1:ci", "arn:aws:sqs::1:ci",
                          "arn:aws:sqs:eu-west-1::ci"}) {
    EXPECT_FALSE(wake_queue_policy(arn, "ci", kInstanceRole, "i-01234567")) << arn;
  }
  EXPECT_FALSE(wake_queue_policy("arn:aws:sqs:eu-west-1:1:ci", "ci", kInstanceRole, "i-0123\"x"));
  EXPECT_FALSE(wake_queue_policy("arn:aws:sqs:eu-west-1:1:ci", std::string(70, 'p'), kInstanceRole, "i-01234567"));
  EXPECT_FALSE(wake_queue_policy("arn:aws:sqs:eu-west-1:1:ci", "ci", "", "i-01234567"));
  EXPECT_FALSE(wake_queue_policy("arn:aws:sqs:eu-west-1:1:ci", "ci", "runpool-agent", "i-01234567"));
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
