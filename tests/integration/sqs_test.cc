// The SQS client against local-aws-sqs, through the local cloud's SigV4-checking, fault-injecting
// proxy: queues, send/receive/delete, long polls, visibility, attributes, errors and retries.
#include "common/aws/sqs.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <set>
#include <thread>

#include <unistd.h>

#include "tests/support/local_cloud.h"

namespace runpool::aws {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::LocalCloud;

// One client with its own HTTP connection: a CurlHttpClient runs one transfer at a time, so a
// sender that must act during another thread's long poll needs its own.
struct Client {
  explicit Client(LocalCloud& cloud)
      : creds(cloud.controller_credentials()),
        caller(http, creds, system_clock(),
               ServiceSettings{"sqs", cloud.sqs(), cloud.region(), RetryPolicy{10, milliseconds(2), milliseconds(20)},
                               std::chrono::seconds(5)}),
        sqs(caller) {}
  CurlHttpClient http;
  StaticCredentialsProvider creds;
  AwsCaller caller;
  SqsClient sqs;
};

class SqsIntegration : public ::testing::Test {
 protected:
  SqsIntegration() : cloud_(LocalCloud::shared()), client_(cloud_), sqs_(client_.sqs) {}
  void TearDown() override { cloud_.clear_faults(); }

  long proxy_stat(const std::string& operation, const char* field = "requests") {
    return cloud_.control("GET", "/_control/stats")["sqs"][operation][field].asInt64();
  }

  // Polls the queue's attributes until `done` holds (SQS counts are approximate), bounded.
  QueueAttributes attributes_until(const std::string& url, const std::function<bool(const QueueAttributes&)>& done) {
    QueueAttributes a;
    for (int i = 0; i < 50; ++i) {
      a = sqs_.get_queue_attributes(url);
      if (done(a)) break;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return a;
  }

  LocalCloud& cloud_;
  Client client_;
  SqsClient& sqs_;
};

double seconds_since(steady_clock::time_point start) {
  return std::chrono::duration<double>(steady_clock::now() - start).count();
}

TEST_F(SqsIntegration, CreateSendReceiveDelete) {
  std::map<std::string, std::string> attrs{{"VisibilityTimeout", "30"}, {"MessageRetentionPeriod", "3600"}};
  std::string url = sqs_.create_queue("it-basic", attrs);
  EXPECT_NE(url.find("it-basic"), std::string::npos);
  EXPECT_EQ(sqs_.create_queue("it-basic", attrs), url);  // idempotent for identical attributes
  EXPECT_EQ(sqs_.get_queue_url("it-basic"), url);
  try {
    sqs_.create_queue("it-basic", {{"VisibilityTimeout", "31"}});
    ADD_FAILURE() << "a queue with other attributes was accepted";
  } catch (const QueueDoesNotExistError&) {
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "QueueNameExists");
  }

  std::set<std::string> sent_ids;
  for (const char* body : {"one", "two", R"({"instance":"i-1","gen":3})"})
    sent_ids.insert(sqs_.send_message(url, body));
  SendMessageRequest with_attrs{.queue_url = url, .body = "four", .attributes = {{"gen", {"Number", "4"}}}};
  sent_ids.insert(sqs_.send_message(with_attrs));
  EXPECT_EQ(sent_ids.size(), 4u);

  auto start_ms = to_epoch_ms(system_clock().now());
  std::vector<Message> got;
  for (int i = 0; i < 10 && got.size() < 4; ++i) {
    std::vector<Message> batch =
        sqs_.receive_messages({.queue_url = url,
                               .max_messages = 10,
                               .wait_seconds = 1,
                               .system_attributes = {"ApproximateReceiveCount", "SentTimestamp"},
                               .message_attributes = {"All"}});
    for (auto& m : batch) got.push_back(std::move(m));
  }
  ASSERT_EQ(got.size(), 4u);
  std::set<std::string> bodies;
  for (const Message& m : got) {
    EXPECT_TRUE(sent_ids.count(m.message_id)) << m.message_id;
    EXPECT_FALSE(m.receipt_handle.empty());
    EXPECT_EQ(m.receive_count(), 1);
    ASSERT_TRUE(m.sent_time());
    EXPECT_LE(std::abs(to_epoch_ms(*m.sent_time()) - start_ms), 10'000);
    bodies.insert(m.body);
    if (m.body == "four") {
      EXPECT_EQ(m.message_attributes.at("gen"), (MessageAttribute{"Number", "4"}));
    }
  }
  EXPECT_EQ(bodies, (std::set<std::string>{"one", "two", R"({"instance":"i-1","gen":3})", "four"}));

  for (const Message& m : got) sqs_.delete_message(url, m.receipt_handle);
  QueueAttributes a = attributes_until(url, [](const QueueAttributes& q) {
    return q.approximate_number_of_messages == 0 && q.approximate_number_of_messages_not_visible == 0;
  });
  EXPECT_EQ(a.approximate_number_of_messages, 0);
  EXPECT_EQ(a.approximate_number_of_messages_not_visible, 0);
  EXPECT_TRUE(sqs_.receive_messages({.queue_url = url, .wait_seconds = 0}).empty());
}

TEST_F(SqsIntegration, DeleteMessageBatchDeletesEveryEntryAndReportsABadOne) {
  std::string url = sqs_.create_queue("it-batch-delete");
  for (int i = 0; i < 4; ++i) sqs_.send_message(url, "m" + std::to_string(i));
  std::vector<std::string> receipts;
  for (int i = 0; i < 10 && receipts.size() < 4; ++i) {
    for (const Message& m : sqs_.receive_messages({.queue_url = url, .max_messages = 10, .wait_seconds = 1})) {
      receipts.push_back(m.receipt_handle);
    }
  }
  ASSERT_EQ(receipts.size(), 4u);
  EXPECT_TRUE(sqs_.delete_message_batch(url, {receipts[0], receipts[1], receipts[2]}).empty());
  auto failed = sqs_.delete_message_batch(url, {receipts[3], "not-a-receipt-handle"});
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].first, "not-a-receipt-handle");
  EXPECT_FALSE(failed[0].second.empty());
  QueueAttributes a = attributes_until(url, [](const QueueAttributes& q) {
    return q.approximate_number_of_messages == 0 && q.approximate_number_of_messages_not_visible == 0;
  });
  EXPECT_EQ(a.approximate_number_of_messages, 0);
  EXPECT_EQ(a.approximate_number_of_messages_not_visible, 0);
}

TEST_F(SqsIntegration, LongPollReturnsWhenAMessageArrivesAndWaitsWhenNone) {
  std::string url = sqs_.create_queue("it-longpoll");

  // Nothing to receive: the poll lasts about its wait (1 s), and an empty answer is no messages.
  auto start = steady_clock::now();
  EXPECT_TRUE(sqs_.receive_messages({.queue_url = url, .wait_seconds = 1}).empty());
  double waited = seconds_since(start);
  EXPECT_GE(waited, 0.9);
  EXPECT_LT(waited, 3.0);

  // A message sent 300 ms into a 5 s poll ends the poll at once.
  Client sender(cloud_);
  start = steady_clock::now();
  auto send = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(milliseconds(300));
    return sender.sqs.send_message(url, "wake up");
  });
  std::vector<Message> got = sqs_.receive_messages({.queue_url = url, .wait_seconds = 5});
  double took = seconds_since(start);
  std::string id = send.get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].message_id, id);
  EXPECT_EQ(got[0].body, "wake up");
  EXPECT_GE(took, 0.25);
  EXPECT_LT(took, 2.5);
  sqs_.delete_message(url, got[0].receipt_handle);
}

// How the agent stops promptly while its wake-up queue is long-polled: the client's cancel flag
// ends a 20 s poll within about a second of being set.
TEST_F(SqsIntegration, ALongPollEndsSoonAfterItsClientIsCancelled) {
  std::string url = sqs_.create_queue("it-cancel");
  Client poller(cloud_);
  std::atomic<bool> cancel{false};
  poller.http.cancel_when(&cancel);
  auto start = steady_clock::now();
  auto poll = std::async(std::launch::async, [&] { return poller.sqs.receive_messages({.queue_url = url, .wait_seconds = 20}); });
  std::this_thread::sleep_for(milliseconds(300));
  cancel = true;
  EXPECT_THROW(poll.get(), std::exception);
  EXPECT_LT(seconds_since(start), 10.0) << "not the 20 s of the poll";
  EXPECT_THROW(poller.sqs.get_queue_url("it-cancel"), std::exception) << "later calls fail at once";
}

// ListQueues by prefix, as refresh lists the agents' wake-up queues.
TEST_F(SqsIntegration, ListQueuesByPrefix) {
  const std::string prefix = "it-list-" + std::to_string(getpid()) + "-";
  std::set<std::string> made;
  for (int i = 0; i < 3; ++i) made.insert(sqs_.create_queue(prefix + std::to_string(i)));
  sqs_.create_queue("it-other-" + std::to_string(getpid()));
  auto listed = sqs_.list_queues(prefix);
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), made);
  // A queue being deleted (SQS takes up to a minute) may still be listed, and a second delete of
  // it is QueueDoesNotExist: refresh counts that as done.
  sqs_.delete_queue(*made.begin());
  EXPECT_THROW(sqs_.delete_queue(*made.begin()), QueueDoesNotExistError);
  EXPECT_TRUE(sqs_.list_queues("it-none-at-all-").empty());
}

TEST_F(SqsIntegration, ChangingVisibilityMakesAMessageVisibleAgain) {
  std::string url = sqs_.create_queue("it-visibility", {{"VisibilityTimeout", "30"}});
  std::string id = sqs_.send_message(url, "claim me");
  ReceiveRequest receive{.queue_url = url, .wait_seconds = 1, .system_attributes = {"ApproximateReceiveCount"}};
  std::vector<Message> first = sqs_.receive_messages(receive);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].message_id, id);

  // In flight: not received again.
  EXPECT_TRUE(sqs_.receive_messages({.queue_url = url, .wait_seconds = 0}).empty());

  // Handed back (e.g. a claim that lost its conditional write): visible at once.
  sqs_.change_message_visibility(url, first[0].receipt_handle, 0);
  std::vector<Message> second = sqs_.receive_messages(receive);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].message_id, id);
  ASSERT_TRUE(second[0].receive_count());
  EXPECT_GE(*second[0].receive_count(), 2);  // local-aws-sqs may count the visibility change too

  // A short visibility timeout on receive also expires by itself.
  sqs_.change_message_visibility(url, second[0].receipt_handle, 1);
  auto start = steady_clock::now();
  std::vector<Message> third = sqs_.receive_messages({.queue_url = url, .wait_seconds = 3});
  ASSERT_EQ(third.size(), 1u);
  EXPECT_GE(seconds_since(start), 0.5);
  sqs_.delete_message(url, third[0].receipt_handle);
}

TEST_F(SqsIntegration, AttributesCountMessages) {
  std::string url = sqs_.create_queue(
      "it-attrs",
      {{"VisibilityTimeout", "30"}, {"MessageRetentionPeriod", "3600"}, {"ReceiveMessageWaitTimeSeconds", "1"}});
  QueueAttributes empty = sqs_.get_queue_attributes(url);
  EXPECT_EQ(empty.visibility_timeout, 30);
  EXPECT_EQ(empty.message_retention_period, 3600);
  EXPECT_EQ(empty.receive_message_wait_time_seconds, 1);
  EXPECT_EQ(empty.delay_seconds, 0);
  EXPECT_EQ(empty.approximate_number_of_messages, 0);
  ASSERT_TRUE(empty.queue_arn);
  EXPECT_NE(empty.queue_arn->find("it-attrs"), std::string::npos);

  for (int i = 0; i < 3; ++i) sqs_.send_message(url, "m" + std::to_string(i));
  sqs_.send_message({.queue_url = url, .body = "later", .delay_seconds = 30});
  QueueAttributes a = attributes_until(url, [](const QueueAttributes& q) {
    return q.approximate_number_of_messages == 3 && q.approximate_number_of_messages_delayed == 1;
  });
  EXPECT_EQ(a.approximate_number_of_messages, 3);
  EXPECT_EQ(a.approximate_number_of_messages_delayed, 1);
  EXPECT_EQ(a.approximate_number_of_messages_not_visible, 0);

  // The queue's own 1 s wait applies when the request names none.
  std::vector<Message> got = sqs_.receive_messages({.queue_url = url});
  ASSERT_EQ(got.size(), 1u);
  QueueAttributes named = sqs_.get_queue_attributes(url, {"ApproximateNumberOfMessagesNotVisible"});
  EXPECT_EQ(named.approximate_number_of_messages_not_visible, 1);
  EXPECT_EQ(named.all.size(), 1u);
  EXPECT_EQ(named.visibility_timeout, std::nullopt);
}

TEST_F(SqsIntegration, MissingQueueIsDistinctAndNotRetried) {
  long before = client_.caller.requests_sent();
  long proxy_before = proxy_stat("GetQueueUrl");
  try {
    sqs_.get_queue_url("it-does-not-exist");
    ADD_FAILURE();
  } catch (const QueueDoesNotExistError& e) {
    EXPECT_EQ(e.code(), "QueueDoesNotExist");
    EXPECT_EQ(e.status(), 400);
  }
  EXPECT_EQ(client_.caller.requests_sent() - before, 1);
  EXPECT_EQ(proxy_stat("GetQueueUrl") - proxy_before, 1);

  std::string url = sqs_.create_queue("it-deleted");
  sqs_.delete_queue(url);
  EXPECT_THROW(sqs_.send_message(url, "x"), QueueDoesNotExistError);
  EXPECT_THROW(sqs_.receive_messages({.queue_url = url, .wait_seconds = 0}), QueueDoesNotExistError);
  EXPECT_THROW(sqs_.get_queue_attributes(url), QueueDoesNotExistError);
}

TEST_F(SqsIntegration, EveryCallCompletesDespiteErrors) {
  std::string url = sqs_.create_queue("it-faults");
  long sent_before = client_.caller.requests_sent();
  long errors_before = 0;
  for (const char* op : {"SendMessage", "ReceiveMessage", "DeleteMessage", "GetQueueAttributes"}) {
    errors_before += proxy_stat(op, "errors");
  }
  Json::Value faults;
  faults["service"] = "sqs";
  faults["errorRate"] = 0.1;
  faults["spread"] = 1;  // faults fall evenly, so the run surely meets some
  cloud_.control("POST", "/_control/faults", faults);

  const int kMessages = 25;
  int calls = 0;
  for (int i = 0; i < kMessages; ++i, ++calls) sqs_.send_message(url, "m" + std::to_string(i));
  std::set<std::string> bodies;
  for (int round = 0; round < 40 && bodies.size() < static_cast<size_t>(kMessages); ++round) {
    ++calls;
    for (const Message& m : sqs_.receive_messages({.queue_url = url, .max_messages = 10, .wait_seconds = 0})) {
      bodies.insert(m.body);
      sqs_.delete_message(url, m.receipt_handle);
      ++calls;
    }
  }
  sqs_.get_queue_attributes(url);
  ++calls;
  cloud_.clear_faults();

  // A retried ReceiveMessage may have hidden a message for 30 s; every one sent was still seen
  // unless a failed receive's answer was lost, which the injected faults (before the backend) never do.
  EXPECT_EQ(bodies.size(), static_cast<size_t>(kMessages));
  long errors = -errors_before;
  for (const char* op : {"SendMessage", "ReceiveMessage", "DeleteMessage", "GetQueueAttributes"}) {
    errors += proxy_stat(op, "errors");
  }
  EXPECT_GT(errors, 0);
  EXPECT_EQ(client_.caller.requests_sent() - sent_before, calls + errors);
}

}  // namespace
}  // namespace runpool::aws
