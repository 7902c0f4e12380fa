// Wake-up queues: each agent long-polls an SQS queue of its own, `<pool>-wake-<instance id>`,
// which runpoolctl creates when it launches the instance. A message there (any body) makes it read its record at once instead
// of at its next idle poll, so an idle agent can read its record rarely and still take a claim
// within a fraction of a second. The record stays the only truth: a wake-up that is lost or
// forged costs a poll's delay or one read, nothing else. runpoolctl sends one after each claim
// and drain request, and refresh deletes the queues whose instance has no live record.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace runpool::pool {

// SQS allows at most 80 characters in a queue name.
inline constexpr size_t kMaxQueueName = 80;

// "<pool>-wake-"; a resource class must not start with "wake-" (its pool queue would share it).
std::string wake_queue_prefix(std::string_view pool);

// nullopt when the name would be longer than SQS allows (a pool name over 55 characters).
std::optional<std::string> wake_queue_name(std::string_view pool, std::string_view instance_id);

// The URL of queue `name` in the same account and region as `sibling_url` (any queue URL of the
// pool): SQS queue URLs end in "/<account>/<name>", so only the last path segment changes. This
// spares a GetQueueUrl per wake-up.
std::string sibling_queue_url(std::string_view sibling_url, std::string_view name);

// The queue policy a wake-up queue is created with: only requests made with the credentials of
// instance `instance_id` (aws:userid "<instance role id>:<instance id>", in the queue's account)
// may get its URL, receive and delete — the resource policy alone admits it, so the instance role
// itself needs no SQS permission at all. `sibling_queue_arn` is any queue ARN of the pool
// ("arn:<partition>:sqs:<region>:<account>:<name>"), which names the partition, region and
// account; nullopt when it is not one, or the role id or instance id is malformed.
std::optional<std::string> wake_queue_policy(std::string_view sibling_queue_arn, std::string_view pool,
                                             std::string_view instance_role_id, std::string_view instance_id);

// The instance a wake queue URL (or name) belongs to; nullopt for any other queue, e.g. one of
// another pool whose name merely starts the same way.
std::optional<std::string> wake_queue_instance(std::string_view pool, std::string_view queue_url);

// Which of the listed wake queues to delete: those whose instance has no live record (none at
// all, or one that is terminated). Queues that are not this pool's wake queues are never chosen.
std::vector<std::string> stale_wake_queues(std::string_view pool, const std::vector<std::string>& queue_urls,
                                           const std::set<std::string>& live_instances);

}  // namespace runpool::pool
