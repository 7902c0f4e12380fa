#include "controller/sqs_pool_queue.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "common/pool/pool_message.h"
#include "common/pool/wake_queue.h"

namespace runpool::controller {

std::map<std::string, std::string> pool_queue_attributes() {
  return {{"MessageRetentionPeriod", "1209600"},  // 14 days: longer than any idle_ttl
          {"VisibilityTimeout", "30"}};
}

SqsPoolQueue::SqsPoolQueue(aws::SqsClient& sqs, aws::SqsClient& long_poll, const Settings& settings)
    : sqs_(sqs), long_poll_(long_poll), settings_(settings) {}

std::string SqsPoolQueue::url(const std::string& resource_class) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = urls_.find(resource_class);
  if (it != urls_.end()) return it->second;
  std::string u = sqs_.get_queue_url(settings_.queue_name(resource_class));
  urls_[resource_class] = u;
  return u;
}

std::vector<QueuedMessage> SqsPoolQueue::receive(const std::string& resource_class, int max, Duration wait,
                                                 Duration visibility) {
  aws::ReceiveRequest r;
  r.queue_url = url(resource_class);
  r.max_messages = std::clamp(max, 1, 10);
  r.wait_seconds = static_cast<int>(std::clamp<int64_t>(wait.count() / 1000, 0, 20));
  r.visibility_timeout = static_cast<int>(std::max<int64_t>(1, visibility.count() / 1000));
  std::vector<QueuedMessage> out;
  for (auto& m : (r.wait_seconds > 0 ? long_poll_ : sqs_).receive_messages(r)) {
    QueuedMessage q;
    q.message_id = m.message_id;
    q.receipt = m.receipt_handle;
    q.body = m.body;
    q.message = pool::parse_pool_message(m.body);
    out.push_back(std::move(q));
  }
  return out;
}

void SqsPoolQueue::remove(const std::string& resource_class, const std::string& receipt) {
  sqs_.delete_message(url(resource_class), receipt);
}

void SqsPoolQueue::remove_many(const std::string& resource_class, const std::vector<std::string>& receipts) {
  for (size_t i = 0; i < receipts.size(); i += 10) {
    std::vector<std::string> chunk(receipts.begin() + static_cast<std::ptrdiff_t>(i),
                                   receipts.begin() + static_cast<std::ptrdiff_t>(std::min(receipts.size(), i + 10)));
    for (const auto& [receipt, code] : sqs_.delete_message_batch(url(resource_class), chunk)) {
      spdlog::warn("could not delete a {} pool message ({}); the next reader drops it", resource_class, code);
    }
  }
}

void SqsPoolQueue::make_visible(const std::string& resource_class, const std::string& receipt) {
  sqs_.change_message_visibility(url(resource_class), receipt, 0);
}

void SqsPoolQueue::advertise(const std::string& resource_class, const pool::PoolMessage& message) {
  sqs_.send_message(url(resource_class), pool::pool_message_body(message));
}

QueueDepth SqsPoolQueue::depth(const std::string& resource_class) {
  aws::QueueAttributes a = sqs_.get_queue_attributes(
      url(resource_class), {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
  return QueueDepth{a.approximate_number_of_messages.value_or(0),
                    a.approximate_number_of_messages_not_visible.value_or(0)};
}

std::map<std::string, std::string> wake_queue_attributes() {
  return {{"MessageRetentionPeriod", "60"}, {"VisibilityTimeout", "30"}};
}

std::string SqsPoolQueue::any_url() {
  if (settings_.resource_classes.empty()) throw std::runtime_error("no resource class: no pool queue");
  return url(settings_.resource_classes.front().name);
}

std::string SqsPoolQueue::any_arn() {
  std::string u = any_url();
  std::lock_guard<std::mutex> lock(mu_);
  if (arn_.empty()) {
    auto a = sqs_.get_queue_attributes(u, {"QueueArn"});
    if (!a.queue_arn) throw std::runtime_error("the pool queue's attributes name no QueueArn");
    arn_ = *a.queue_arn;
  }
  return arn_;
}

void SqsPoolQueue::create_wake_queue(const std::string& instance_id) {
  auto name = pool::wake_queue_name(settings_.pool, instance_id);
  auto policy = pool::wake_queue_policy(any_arn(), settings_.pool, settings_.instance_role_id, instance_id);
  if (!name || !policy) throw std::runtime_error("no wake-up queue name or policy for " + instance_id);
  auto attributes = wake_queue_attributes();
  attributes["Policy"] = *policy;
  sqs_.create_queue(*name, attributes);
}

void SqsPoolQueue::wake(const std::string& instance_id) {
  auto name = pool::wake_queue_name(settings_.pool, instance_id);
  if (!name) return;  // no queue can have been made for it
  // Any pool queue's URL names the account and region; the wake-up queue is its sibling.
  sqs_.send_message(pool::sibling_queue_url(any_url(), *name), "wake");
}

std::vector<std::string> SqsPoolQueue::wake_queue_urls() {
  return sqs_.list_queues(pool::wake_queue_prefix(settings_.pool));
}

void SqsPoolQueue::delete_queue(const std::string& queue_url) {
  try {
    sqs_.delete_queue(queue_url);
  } catch (const aws::QueueDoesNotExistError&) {
    // Already gone, or still being deleted (SQS takes up to a minute, and lists it meanwhile).
  }
}

}  // namespace runpool::controller
