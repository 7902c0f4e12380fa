// The pool queue's contract, run against both implementations: SqsPoolQueue on the local cloud's
// SQS (local-aws-sqs through the SigV4-checking proxy) and MemoryQueue, the in-memory one the
// controller's unit tests use — so the fake is shown to hand out, hide, hand back, delete and count
// pool messages, and to keep the agents' wake-up queues, as SQS does. Only what SQS promises is
// asked: no message order, no exact batch sizes beyond `max`. Differences the fake keeps on
// purpose are listed at the top of MemoryQueue (controller/test_fakes.h).
#include "controller/sqs_pool_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <thread>

#include "common/pool/pool_message.h"
#include "common/pool/wake_queue.h"
#include "controller/test_fakes.h"
#include "tests/support/local_cloud.h"

namespace runpool::controller {
namespace {

using runpool::testing::LocalCloud;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::MemoryQueue;
using testing::test_settings;

// One SQS client with its own HTTP connection (SqsPoolQueue long-polls on a second one).
struct SqsConnection {
  explicit SqsConnection(LocalCloud& cloud)
      : creds(cloud.controller_credentials()),
        caller(http, creds, system_clock(),
               aws::ServiceSettings{"sqs", cloud.sqs(), cloud.region(),
                                    RetryPolicy{5, milliseconds(2), milliseconds(20)}, seconds(5)}),
        sqs(caller) {}
  CurlHttpClient http;
  aws::StaticCredentialsProvider creds;
  aws::AwsCaller caller;
  aws::SqsClient sqs;
};

struct Sqs {
  static void start() {
    if (calls_) return;
    calls_ = std::make_unique<SqsConnection>(LocalCloud::shared());
    long_polls_ = std::make_unique<SqsConnection>(LocalCloud::shared());
  }
  static inline std::unique_ptr<SqsConnection> calls_, long_polls_;
};

const std::string kInstance1 = "i-0123456789abcdef0", kInstance2 = "i-0123456789abcdef1",
                  kInstance3 = "i-0123456789abcdef2";

// The contract: each test runs once per implementation ("sqs", "memory"), each in a pool of its own
// (queues "<pool>-small", "<pool>-large" and "<pool>-wake-<instance>").
class PoolQueueTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    static int pools = 0;
    settings_ = test_settings();
    settings_.pool = "pq-" + std::to_string(++pools);
    if (sqs()) {
      Sqs::start();
      settings_.region = LocalCloud::shared().region();
      settings_.instance_role_id = LocalCloud::shared().instance_role_id();
      for (const auto& rc : settings_.resource_classes) {
        Sqs::calls_->sqs.create_queue(settings_.queue_name(rc.name), pool_queue_attributes());
      }
      queue_ = std::make_unique<SqsPoolQueue>(Sqs::calls_->sqs, Sqs::long_polls_->sqs, settings_);
    } else {
      auto memory = std::make_unique<MemoryQueue>(clock_, settings_.pool);
      memory_ = memory.get();
      queue_ = std::move(memory);
    }
  }

  bool sqs() const { return GetParam() == "sqs"; }

  // Time passes: slept on SQS, the fake clock's on the fake.
  void elapse(Duration d) {
    if (sqs()) {
      std::this_thread::sleep_for(d);
    } else {
      clock_.advance(d);
    }
  }

  // A message that is not an advertisement (another writer's, or a corrupted one).
  void send_raw(const std::string& resource_class, const std::string& body) {
    if (sqs()) {
      Sqs::calls_->sqs.send_message(Sqs::calls_->sqs.get_queue_url(settings_.queue_name(resource_class)), body);
    } else {
      memory_->send(resource_class, body);
    }
  }

  // Receives until `n` messages have come (SQS may answer with fewer than are there), bounded.
  std::vector<QueuedMessage> receive_n(const std::string& resource_class, size_t n, Duration visibility = seconds(2)) {
    std::vector<QueuedMessage> got;
    for (int i = 0; i < 10 && got.size() < n; ++i) {
      auto batch = queue_->receive(resource_class, static_cast<int>(std::min<size_t>(10, n - got.size())), seconds(1),
                                   visibility);
      for (auto& m : batch) got.push_back(std::move(m));
    }
    return got;
  }
  std::vector<QueuedMessage> receive_now(const std::string& resource_class, int max = 10) {
    return queue_->receive(resource_class, max, seconds(0), seconds(2));
  }

  // Whether the agent of `instance_id` has a wake-up waiting (on SQS: read off its queue, waiting up
  // to `wait_seconds` for it).
  bool woken(const std::string& instance_id, int wait_seconds) {
    if (!sqs()) return std::count(memory_->wakes.begin(), memory_->wakes.end(), instance_id) > 0;
    std::string url = Sqs::calls_->sqs.get_queue_url(*pool::wake_queue_name(settings_.pool, instance_id));
    return !Sqs::calls_->sqs.receive_messages({.queue_url = url, .max_messages = 10, .wait_seconds = wait_seconds})
                .empty();
  }

  Settings settings_;
  FakeClock clock_;
  std::unique_ptr<PoolQueue> queue_;
  MemoryQueue* memory_ = nullptr;
};

INSTANTIATE_TEST_SUITE_P(Implementations, PoolQueueTest, ::testing::Values("sqs", "memory"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

std::set<std::string> ids_of(const std::vector<QueuedMessage>& messages) {
  std::set<std::string> out;
  for (const auto& m : messages) out.insert(m.message_id);
  return out;
}

TEST_P(PoolQueueTest, AnAdvertisementComesBackParsed) {
  queue_->advertise("small", {kInstance1, 7});
  auto got = receive_n("small", 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].message_id.empty());
  EXPECT_FALSE(got[0].receipt.empty());
  EXPECT_EQ(got[0].body, pool::pool_message_body({kInstance1, 7}));
  ASSERT_TRUE(got[0].message);
  EXPECT_EQ(got[0].message->instance_id, kInstance1);
  EXPECT_EQ(got[0].message->generation, 7);
}

TEST_P(PoolQueueTest, ABodyThatIsNotAPoolMessageComesBackUnparsed) {
  const std::set<std::string> bodies{"not json", R"({"instance_id":"i-0123456789abcdef0","generation":0})",
                                     R"({"instance_id":"nope","generation":3})"};
  for (const auto& b : bodies) send_raw("small", b);
  auto got = receive_n("small", bodies.size());
  ASSERT_EQ(got.size(), bodies.size());
  std::set<std::string> seen;
  for (const auto& m : got) {
    EXPECT_FALSE(m.message) << m.body;
    seen.insert(m.body);
  }
  EXPECT_EQ(seen, bodies);
}

TEST_P(PoolQueueTest, ReceiveHonoursMax) {
  for (int i = 0; i < 12; ++i) queue_->advertise("small", {kInstance1, i + 1});
  // Above 10 is SQS's 10 (SqsPoolQueue clamps; SQS itself refuses more).
  auto many = queue_->receive("small", 25, seconds(1), seconds(2));
  EXPECT_GE(many.size(), 1u);
  EXPECT_LE(many.size(), 10u);
  std::vector<QueuedMessage> rest;
  for (int i = 0; i < 10 && many.size() + rest.size() < 12; ++i) {
    auto batch = queue_->receive("small", 1, seconds(1), seconds(2));
    EXPECT_LE(batch.size(), 1u);
    for (auto& m : batch) rest.push_back(std::move(m));
  }
  std::set<std::string> all = ids_of(many);
  all.merge(ids_of(rest));
  EXPECT_EQ(all.size(), 12u) << "every message, each once";
  EXPECT_EQ(many.size() + rest.size(), 12u);
}

TEST_P(PoolQueueTest, AnEmptyQueueAnswersNothingWithinItsWait) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(queue_->receive("small", 10, seconds(0), seconds(2)).empty());
  EXPECT_TRUE(queue_->receive("small", 10, seconds(1), seconds(2)).empty());
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(3'500)) << "a 0 s and a 1 s wait";
}

TEST_P(PoolQueueTest, AReceivedMessageIsHiddenUntilItsVisibilityEnds) {
  queue_->advertise("small", {kInstance1, 1});
  auto first = receive_n("small", 1, seconds(1));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(receive_now("small").empty()) << "in flight";
  elapse(milliseconds(1'200));
  auto again = receive_n("small", 1);
  ASSERT_EQ(again.size(), 1u) << "visible again once its visibility ended";
  EXPECT_EQ(again[0].message_id, first[0].message_id);
  EXPECT_NE(again[0].receipt, first[0].receipt) << "each receive has its own receipt";
  EXPECT_EQ(again[0].body, first[0].body);
}

TEST_P(PoolQueueTest, MakeVisibleHandsAMessageBackAtOnce) {
  queue_->advertise("small", {kInstance1, 1});
  auto first = receive_n("small", 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(receive_now("small").empty());
  queue_->make_visible("small", first[0].receipt);
  auto again = receive_n("small", 1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].message_id, first[0].message_id);
}

// SqsPoolQueue asks SQS for whole seconds, at least one: a claim's visibility is never 0.
TEST_P(PoolQueueTest, VisibilityIsWholeSecondsAndAtLeastOne) {
  queue_->advertise("small", {kInstance1, 1});
  auto first = queue_->receive("small", 1, seconds(1), seconds(0));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(receive_now("small").empty()) << "hidden for a second, not 0";
  elapse(milliseconds(1'200));
  auto second = queue_->receive("small", 1, seconds(1), milliseconds(1'900));
  ASSERT_EQ(second.size(), 1u);
  elapse(milliseconds(1'200));
  EXPECT_EQ(receive_n("small", 1, seconds(1)).size(), 1u) << "1.9 s is 1 s";
}

// Receipts the controller may hold that SQS no longer honours: make_visible of one whose message
// was deleted is refused (every caller logs it), and remove of a deleted message's is done.
TEST_P(PoolQueueTest, ReceiptsOfDeletedMessages) {
  queue_->advertise("small", {kInstance1, 1});
  auto got = receive_n("small", 1);
  ASSERT_EQ(got.size(), 1u);
  queue_->remove("small", got[0].receipt);
  EXPECT_NO_THROW(queue_->remove("small", got[0].receipt));
  EXPECT_THROW(queue_->make_visible("small", got[0].receipt), aws::AwsError);
  EXPECT_THROW(queue_->remove("small", "not-a-receipt"), aws::AwsError);
  EXPECT_THROW(queue_->make_visible("small", "not-a-receipt"), aws::AwsError);
}

// make_visible once the message's visibility has ended (a claim that outlasted it): SQS answers
// MessageNotInflight, as the fake does; local-aws-sqs accepts it.
TEST_P(PoolQueueTest, MakeVisibleOfAMessageNoLongerInFlight) {
  queue_->advertise("small", {kInstance1, 1});
  auto got = receive_n("small", 1, seconds(1));
  ASSERT_EQ(got.size(), 1u);
  elapse(milliseconds(1'200));
  if (sqs()) {
    EXPECT_NO_THROW(queue_->make_visible("small", got[0].receipt)) << "local-aws-sqs deviates from SQS here";
  } else {
    EXPECT_THROW(queue_->make_visible("small", got[0].receipt), aws::AwsError);
  }
  EXPECT_EQ(receive_n("small", 1).size(), 1u) << "visible either way";
}

TEST_P(PoolQueueTest, RemoveDeletes) {
  queue_->advertise("small", {kInstance1, 1});
  queue_->advertise("small", {kInstance2, 1});
  auto got = receive_n("small", 2, seconds(1));
  ASSERT_EQ(got.size(), 2u);
  queue_->remove("small", got[0].receipt);
  elapse(milliseconds(1'200));
  auto left = receive_n("small", 1);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].message_id, got[1].message_id);
  queue_->remove("small", left[0].receipt);
  QueueDepth d = queue_->depth("small");
  EXPECT_EQ(d.visible, 0);
  EXPECT_EQ(d.in_flight, 0);
}

TEST_P(PoolQueueTest, RemoveManyDeletesAndSkipsReceiptsItCannotRemove) {
  for (int i = 0; i < 13; ++i) queue_->advertise("small", {kInstance1, i + 1});
  auto got = receive_n("small", 13, seconds(1));
  ASSERT_EQ(got.size(), 13u);
  queue_->remove("small", got[0].receipt);
  std::vector<std::string> receipts;
  for (const auto& m : got) receipts.push_back(m.receipt);
  receipts.insert(receipts.begin() + 5, "not-a-receipt");  // the first batch of 10 holds it
  // The first receipt's message is gone already; 14 receipts make two requests.
  EXPECT_NO_THROW(queue_->remove_many("small", receipts));
  elapse(milliseconds(1'200));
  EXPECT_TRUE(receive_now("small").empty()) << "all 13 deleted";
  QueueDepth d = queue_->depth("small");
  EXPECT_EQ(d.visible, 0);
  EXPECT_EQ(d.in_flight, 0);
  EXPECT_NO_THROW(queue_->remove_many("small", {}));
}

TEST_P(PoolQueueTest, DepthCountsVisibleAndInFlight) {
  EXPECT_EQ(queue_->depth("small").visible, 0);
  EXPECT_EQ(queue_->depth("small").in_flight, 0);
  for (int i = 0; i < 3; ++i) queue_->advertise("small", {kInstance1, i + 1});
  QueueDepth d = queue_->depth("small");
  EXPECT_EQ(d.visible, 3);
  EXPECT_EQ(d.in_flight, 0);
  auto got = receive_n("small", 2);
  ASSERT_EQ(got.size(), 2u);
  d = queue_->depth("small");
  // SQS's ApproximateNumberOfMessages counts the messages available for retrieval; local-aws-sqs
  // counts those in flight too (refresh's visible + in_flight double-counts them there).
  const int64_t in_flight_counted_as_visible = sqs() ? 2 : 0;
  EXPECT_EQ(d.visible, 1 + in_flight_counted_as_visible);
  EXPECT_EQ(d.in_flight, 2);
  queue_->make_visible("small", got[0].receipt);
  queue_->remove("small", got[1].receipt);
  d = queue_->depth("small");
  EXPECT_EQ(d.visible, 2);
  EXPECT_EQ(d.in_flight, 0);
}

TEST_P(PoolQueueTest, ClassesAreSeparateQueues) {
  queue_->advertise("small", {kInstance1, 1});
  queue_->advertise("large", {kInstance2, 1});
  queue_->advertise("large", {kInstance3, 1});
  EXPECT_EQ(queue_->depth("small").visible, 1);
  EXPECT_EQ(queue_->depth("large").visible, 2);
  auto small = receive_n("small", 1);
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(small[0].message->instance_id, kInstance1);
  EXPECT_TRUE(receive_now("small").empty());
  auto large = receive_n("large", 2);
  ASSERT_EQ(large.size(), 2u);
  std::set<std::string> instances;
  for (const auto& m : large) instances.insert(m.message->instance_id);
  EXPECT_EQ(instances, (std::set<std::string>{kInstance2, kInstance3}));
  // A receipt belongs to its class's queue.
  EXPECT_THROW(queue_->remove("large", small[0].receipt), aws::AwsError);
  EXPECT_EQ(queue_->depth("small").in_flight, 1);
  queue_->remove("small", small[0].receipt);
  EXPECT_EQ(queue_->depth("small").in_flight, 0);
  EXPECT_EQ(queue_->depth("large").in_flight, 2);
}

TEST_P(PoolQueueTest, WakeQueuesAreListedWokenAndDeleted) {
  EXPECT_TRUE(queue_->wake_queue_urls().empty());
  queue_->create_wake_queue(kInstance1);
  queue_->create_wake_queue(kInstance2);
  queue_->create_wake_queue(kInstance1);  // a replayed launch: CreateQueue is idempotent
  auto urls = queue_->wake_queue_urls();
  ASSERT_EQ(urls.size(), 2u);
  std::set<std::string> instances;
  for (const auto& u : urls) instances.insert(pool::wake_queue_instance(settings_.pool, u).value_or("?"));
  EXPECT_EQ(instances, (std::set<std::string>{kInstance1, kInstance2})) << urls[0] << " " << urls[1];

  queue_->wake(kInstance1);
  EXPECT_TRUE(woken(kInstance1, 1));
  EXPECT_FALSE(woken(kInstance2, 0));
  // An instance without a wake-up queue (launched before them, or its queue deleted): SQS refuses.
  EXPECT_THROW(queue_->wake(kInstance3), aws::QueueDoesNotExistError);
  EXPECT_NO_THROW(wake_agents(*queue_, {kInstance3, kInstance2}));
  EXPECT_TRUE(woken(kInstance2, 1));

  std::string gone = pool::wake_queue_instance(settings_.pool, urls[0]) == kInstance1 ? urls[0] : urls[1];
  queue_->delete_queue(gone);
  EXPECT_NO_THROW(queue_->delete_queue(gone)) << "already gone: done";
  // SQS (and local-aws-sqs) may list a deleted queue for up to a minute; the others stay.
  auto left = queue_->wake_queue_urls();
  EXPECT_NE(std::find(left.begin(), left.end(), gone == urls[0] ? urls[1] : urls[0]), left.end());
  EXPECT_LE(left.size(), 2u);
}

}  // namespace
}  // namespace runpool::controller

