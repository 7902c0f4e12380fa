// The pool queues' calls on both backends: the SQS client over its JSON protocol (CreateQueue,
// GetQueueAttributes, SendMessage, ReceiveMessage, DeleteMessage, DeleteMessageBatch,
// ChangeMessageVisibility, ListQueues, DeleteQueue) and SqsPoolQueue on top of it, wake-up
// queues included.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "common/pool/pool_message.h"
#include "common/pool/wake_queue.h"
#include "controller/sqs_pool_queue.h"
#include "tests/moto/backends.h"

namespace runpool::testing {
namespace {

using aws::Message;
using aws::QueueAttributes;

class QueueTest : public BackendTest {
 protected:
  void TearDown() override {
    for (const auto& url : queues_) {
      try {
        aws_.sqs().delete_queue(url);
      } catch (const aws::AwsError&) {
        // Best effort: each test's names are its own.
      }
    }
  }

  std::string make_queue(const std::string& name, const std::map<std::string, std::string>& attributes = {}) {
    std::string url = aws_.sqs().create_queue(name, attributes);
    queues_.push_back(url);
    return url;
  }

  // Receives until `n` messages came or 10 polls of 1 s passed.
  std::vector<Message> receive(const std::string& url, size_t n, int visibility = 30) {
    std::vector<Message> got;
    for (int i = 0; i < 10 && got.size() < n; ++i) {
      for (auto& m : aws_.sqs().receive_messages({.queue_url = url,
                                                  .max_messages = 10,
                                                  .wait_seconds = 1,
                                                  .visibility_timeout = visibility,
                                                  .system_attributes = {"ApproximateReceiveCount", "SentTimestamp"},
                                                  .message_attributes = {"All"}})) {
        got.push_back(std::move(m));
      }
    }
    return got;
  }

  // The attributes the controller reads, by name: moto's CreatedTimestamp and
  // LastModifiedTimestamp (in "All") are fractional seconds, which the client refuses (AWS
  // documents whole epoch seconds).
  QueueAttributes attributes(const std::string& url) {
    return aws_.sqs().get_queue_attributes(
        url, {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "VisibilityTimeout",
              "MessageRetentionPeriod", "QueueArn"});
  }

  // Approximate counts settle; polls GetQueueAttributes until `ok`, at most 5 s.
  QueueAttributes attributes_until(const std::string& url, const std::function<bool(const QueueAttributes&)>& ok) {
    QueueAttributes a = attributes(url);
    for (int i = 0; i < 50 && !ok(a); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      a = attributes(url);
    }
    return a;
  }

  std::vector<std::string> queues_;
};

TEST_P(QueueTest, CreateSendReceiveDeleteAndAttributes) {
  const std::string name = unique_name("moto-q");
  std::map<std::string, std::string> attrs = controller::pool_queue_attributes();
  std::string url = make_queue(name, attrs);
  EXPECT_EQ(url.substr(url.size() - name.size() - 1), "/" + name);
  EXPECT_EQ(aws_.sqs().create_queue(name, attrs), url) << "idempotent for the same attributes";
  EXPECT_EQ(aws_.sqs().get_queue_url(name), url);
  try {
    aws_.sqs().create_queue(name, {{"VisibilityTimeout", "31"}});
    ADD_FAILURE() << "a queue of that name with other attributes was accepted";
  } catch (const aws::AwsError& e) {
    EXPECT_EQ(e.code(), "QueueNameExists") << e.what();
  }

  QueueAttributes a = attributes(url);
  EXPECT_EQ(a.visibility_timeout, 30);
  EXPECT_EQ(a.message_retention_period, 1209600);
  ASSERT_TRUE(a.queue_arn);
  EXPECT_EQ(a.queue_arn->rfind("arn:aws:sqs:" + backend_.region + ":", 0), 0u) << *a.queue_arn;
  EXPECT_EQ(a.queue_arn->substr(a.queue_arn->size() - name.size() - 1), ":" + name);
  EXPECT_EQ(a.approximate_number_of_messages, 0);

  std::set<std::string> ids;
  for (const char* body : {"one", R"({"instance":"i-1","gen":3})"}) ids.insert(aws_.sqs().send_message(url, body));
  ids.insert(aws_.sqs().send_message(
      {.queue_url = url, .body = "three", .attributes = {{"gen", aws::MessageAttribute{"Number", "4"}}}}));
  EXPECT_EQ(ids.size(), 3u);
  a = attributes_until(url, [](const QueueAttributes& q) { return q.approximate_number_of_messages == 3; });
  EXPECT_EQ(a.approximate_number_of_messages, 3);

  std::vector<Message> got = receive(url, 3);
  ASSERT_EQ(got.size(), 3u);
  std::set<std::string> bodies;
  for (const Message& m : got) {
    EXPECT_TRUE(ids.count(m.message_id));
    EXPECT_EQ(m.receive_count(), 1);
    EXPECT_TRUE(m.sent_time());
    bodies.insert(m.body);
    if (m.body == "three") {
      EXPECT_EQ(m.message_attributes.at("gen"), (aws::MessageAttribute{"Number", "4"}));
    }
  }
  EXPECT_EQ(bodies, (std::set<std::string>{"one", R"({"instance":"i-1","gen":3})", "three"}));
  a = attributes_until(url, [](const QueueAttributes& q) { return q.approximate_number_of_messages_not_visible == 3; });
  EXPECT_EQ(a.approximate_number_of_messages_not_visible, 3);
  if (on_moto()) {
    EXPECT_EQ(a.approximate_number_of_messages, 0) << "all three are in flight";
  }

  aws_.sqs().delete_message(url, got[0].receipt_handle);
  EXPECT_TRUE(aws_.sqs().delete_message_batch(url, {got[1].receipt_handle, got[2].receipt_handle}).empty());
  a = attributes_until(url, [](const QueueAttributes& q) {
    return q.approximate_number_of_messages == 0 && q.approximate_number_of_messages_not_visible == 0;
  });
  EXPECT_EQ(a.approximate_number_of_messages, 0);
  EXPECT_EQ(a.approximate_number_of_messages_not_visible, 0);
  EXPECT_TRUE(aws_.sqs().receive_messages({.queue_url = url, .wait_seconds = 0}).empty());
}

TEST_P(QueueTest, ABadEntryOfABatchDeleteIsReportedAlone) {
  std::string url = make_queue(unique_name("moto-batch"));
  aws_.sqs().send_message(url, "a");
  aws_.sqs().send_message(url, "b");
  std::vector<Message> got = receive(url, 2);
  ASSERT_EQ(got.size(), 2u);
  auto failed = aws_.sqs().delete_message_batch(url, {got[0].receipt_handle, "not-a-receipt-handle"});
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].first, "not-a-receipt-handle");
  EXPECT_EQ(failed[0].second, "ReceiptHandleIsInvalid");
}

TEST_P(QueueTest, ChangingVisibilityToZeroMakesAMessageVisibleAgain) {
  std::string url = make_queue(unique_name("moto-vis"));
  aws_.sqs().send_message(url, "again");
  std::vector<Message> first = receive(url, 1, /*visibility=*/60);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(aws_.sqs().receive_messages({.queue_url = url, .wait_seconds = 0}).empty()) << "hidden for 60 s";
  aws_.sqs().change_message_visibility(url, first[0].receipt_handle, 0);
  std::vector<Message> second = receive(url, 1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].message_id, first[0].message_id);
  // local-aws-sqs counts a receive more after ChangeMessageVisibility(0) (a known quirk of it).
  if (on_moto()) {
    EXPECT_EQ(second[0].receive_count(), 2);
  } else {
    EXPECT_GE(second[0].receive_count(), 2);
  }
}

TEST_P(QueueTest, ListQueuesByPrefixAndAMissingQueue) {
  const std::string prefix = unique_name("moto-list");
  std::set<std::string> made;
  for (const char* suffix : {"-a", "-b", "-c"}) made.insert(make_queue(prefix + suffix));
  make_queue(unique_name("moto-other"));
  std::vector<std::string> listed = aws_.sqs().list_queues(prefix);
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), made);

  std::string url = *made.begin();
  aws_.sqs().delete_queue(url);
  EXPECT_THROW(aws_.sqs().get_queue_url(prefix + "-a"), aws::QueueDoesNotExistError);
  EXPECT_THROW(aws_.sqs().send_message(url, "x"), aws::QueueDoesNotExistError);
  EXPECT_THROW(aws_.sqs().get_queue_url(prefix + "-never"), aws::QueueDoesNotExistError);
}

// The controller's pool queue: advertise, receive (long poll), remove one and many, make a message
// visible again, the depth; and the wake-up queues made per instance.
TEST_P(QueueTest, PoolQueueAndWakeUpQueues) {
  controller::Settings s;
  s.pool = unique_name("mq");
  s.table = "unused";
  s.instance_role_id = backend_.instance_role_id;
  s.resource_classes = {{"small", {"c7i.large"}}};
  make_queue(s.queue_name("small"), controller::pool_queue_attributes());
  controller::SqsPoolQueue queue(aws_.sqs(), aws_.long_poll(), s);

  for (int g = 1; g <= 4; ++g) queue.advertise("small", {"i-0000000000000000" + std::to_string(g), g});
  std::vector<controller::QueuedMessage> got;
  for (int i = 0; i < 10 && got.size() < 4; ++i) {
    auto batch = queue.receive("small", 10, std::chrono::seconds(1), std::chrono::seconds(30));
    got.insert(got.end(), batch.begin(), batch.end());
  }
  ASSERT_EQ(got.size(), 4u);
  for (const auto& m : got) {
    ASSERT_TRUE(m.message) << m.body;
    EXPECT_EQ(m.message->instance_id, "i-0000000000000000" + std::to_string(m.message->generation));
  }
  controller::QueueDepth depth = queue.depth("small");
  for (int i = 0; i < 50 && depth.in_flight != 4; ++i) {  // approximate: settles
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    depth = queue.depth("small");
  }
  EXPECT_EQ(depth.in_flight, 4);
  // ApproximateNumberOfMessages counts the messages available for retrieval; local-aws-sqs counts
  // the in-flight ones too (tests/moto/README.md).
  if (on_moto()) {
    EXPECT_EQ(depth.visible, 0);
  }

  queue.remove("small", got[0].receipt);
  queue.remove_many("small", {got[1].receipt, got[2].receipt});
  queue.make_visible("small", got[3].receipt);
  auto again = queue.receive("small", 10, std::chrono::seconds(2), std::chrono::seconds(30));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].message_id, got[3].message_id);
  queue.remove("small", again[0].receipt);

  // A wake-up queue per instance, with the policy that admits only that instance, found by prefix.
  const std::string id = "i-0123456789abcdef0";
  queue.create_wake_queue(id);
  queue.create_wake_queue(id);  // a replayed launch: CreateQueue is idempotent
  std::vector<std::string> wake_urls = queue.wake_queue_urls();
  ASSERT_EQ(wake_urls.size(), 1u);
  queues_.push_back(wake_urls[0]);
  EXPECT_EQ(pool::wake_queue_instance(s.pool, wake_urls[0]), id);
  EXPECT_EQ(aws_.sqs().get_queue_attributes(wake_urls[0], {"Policy"}).all.count("Policy"), 1u);
  queue.wake(id);
  std::vector<Message> woken = receive(wake_urls[0], 1);
  ASSERT_EQ(woken.size(), 1u);
  EXPECT_EQ(woken[0].body, "wake");
  queue.delete_queue(wake_urls[0]);
  queue.delete_queue(wake_urls[0]);  // already gone: not an error
}

INSTANTIATE_TEST_SUITE_P(Backends, QueueTest, ::testing::ValuesIn(backend_names()), backend_test_name);

}  // namespace
}  // namespace runpool::testing
