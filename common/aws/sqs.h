// SQS over its JSON protocol (POST / to the configured endpoint, X-Amz-Target: AmazonSQS.<Op>,
// the queue named by QueueUrl in the body), on AwsCaller (signing, retries, errors). Queue URLs
// are opaque handles: the one local-aws-sqs returns names its own host, and nothing is sent there.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/aws/aws_caller.h"
#include "common/clock.h"

namespace runpool::aws {

inline constexpr const char* kSqsTargetPrefix = "AmazonSQS";

// The queue does not exist (JSON `__type` …#QueueDoesNotExist, or the query-compatible code
// AWS.SimpleQueueService.NonExistentQueue from the x-amzn-query-error header). Thrown by every
// call that names a queue.
class QueueDoesNotExistError : public AwsError {
 public:
  explicit QueueDoesNotExistError(const AwsError& e) : AwsError(e) {}
};

struct MessageAttribute {
  std::string data_type = "String";  // "String", "Number" (optionally with a ".label" suffix), "Binary"
  std::string string_value{};        // String and Number
  std::string binary_value{};        // Binary, base64 exactly as on the wire
  bool operator==(const MessageAttribute&) const = default;
};

struct SendMessageRequest {
  std::string queue_url{};
  std::string body{};
  std::optional<int> delay_seconds{};  // 0..900
  std::map<std::string, MessageAttribute> attributes{};
};

struct ReceiveRequest {
  std::string queue_url{};
  int max_messages = 1;                     // 1..10
  std::optional<int> wait_seconds{};        // 0..20; nullopt: the queue's ReceiveMessageWaitTimeSeconds
  std::optional<int> visibility_timeout{};  // seconds; nullopt: the queue's
  // MessageSystemAttributeNames (also sent as the older AttributeNames): "All",
  // "ApproximateReceiveCount", "SentTimestamp", "ApproximateFirstReceiveTimestamp", …
  std::vector<std::string> system_attributes{};
  std::vector<std::string> message_attributes{};  // MessageAttributeNames; "All" for every one
};

struct Message {
  std::string message_id{};
  std::string receipt_handle{};
  std::string body{};
  std::map<std::string, std::string> attributes{};  // system attributes, as SQS sent them
  std::map<std::string, MessageAttribute> message_attributes{};

  // ApproximateReceiveCount; nullopt when not requested or not a number (a bad attribute must
  // not cost the whole batch, whose messages are already invisible).
  std::optional<int64_t> receive_count() const;
  // SentTimestamp (epoch milliseconds); nullopt when not requested or not a number.
  std::optional<WallTime> sent_time() const;
};

struct QueueAttributes {
  std::map<std::string, std::string> all{};  // every attribute returned, as SQS sent it
  // Any attribute as an integer: nullopt when absent, JsonError when not an integer. The known
  // numeric attributes are checked when the answer is read (a non-number is MalformedResponse).
  std::optional<int64_t> get_int(const std::string& name) const;

  std::optional<int64_t> approximate_number_of_messages{};
  std::optional<int64_t> approximate_number_of_messages_not_visible{};
  std::optional<int64_t> approximate_number_of_messages_delayed{};
  std::optional<int64_t> visibility_timeout{};
  std::optional<int64_t> message_retention_period{};
  std::optional<int64_t> receive_message_wait_time_seconds{};
  std::optional<int64_t> delay_seconds{};
  std::optional<std::string> queue_arn{};
};

class SqsClient {
 public:
  explicit SqsClient(AwsCaller& caller);

  // Returns the queue URL. Idempotent for identical attributes; a queue of that name with other
  // attribute values is an AwsError (QueueNameExists). Attributes are SQS's names and string
  // values: {"VisibilityTimeout","30"}, {"MessageRetentionPeriod","345600"},
  // {"ReceiveMessageWaitTimeSeconds","20"}.
  std::string create_queue(const std::string& name, const std::map<std::string, std::string>& attributes = {});
  std::string get_queue_url(const std::string& name);  // QueueDoesNotExistError when missing
  void delete_queue(const std::string& queue_url);
  // The URLs of every queue whose name starts with `prefix`, following NextToken a page of 1,000
  // at a time; more than `max_pages` pages is an AwsError (TooManyPages).
  std::vector<std::string> list_queues(const std::string& prefix, int max_pages = 100);

  // Returns the MessageId.
  std::string send_message(const SendMessageRequest& request);
  std::string send_message(const std::string& queue_url, const std::string& body);
  // Zero or more messages (an empty answer — even an empty body — is zero). The HTTP timeout of a
  // long poll is raised past its wait so the poll is never cut short.
  std::vector<Message> receive_messages(const ReceiveRequest& request);
  void delete_message(const std::string& queue_url, const std::string& receipt_handle);
  // DeleteMessageBatch: up to 10 messages in one request. Returns the receipt handles SQS did not
  // delete, each with its error code (an empty vector: all deleted).
  std::vector<std::pair<std::string, std::string>> delete_message_batch(const std::string& queue_url,
                                                                        const std::vector<std::string>& receipt_handles);
  // 0 makes the message visible again at once.
  void change_message_visibility(const std::string& queue_url, const std::string& receipt_handle,
                                 int visibility_timeout_seconds);
  // `names` defaults to every attribute ("All").
  QueueAttributes get_queue_attributes(const std::string& queue_url, const std::vector<std::string>& names = {"All"});

 private:
  Json::Value call(const std::string& operation, const Json::Value& body,
                   std::optional<Duration> timeout = std::nullopt);

  AwsCaller& caller_;
};

// SQS's error reader: the JSON `__type`/message, falling back to the code in x-amzn-query-error
// ("AWS.SimpleQueueService.NonExistentQueue;Sender") when the body names none.
ErrorInfo parse_sqs_error(const HttpResponse& response);
bool is_queue_does_not_exist(const std::string& code);

}  // namespace runpool::aws
