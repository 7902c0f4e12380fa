#include "common/pool/wake_queue.h"

#include <vector>

#include "common/json.h"
#include "common/pool/record_key.h"
#include "common/pool/runner_name.h"

namespace runpool::pool {

std::string wake_queue_prefix(std::string_view pool) { return std::string(pool) + "-wake-"; }

std::optional<std::string> wake_queue_name(std::string_view pool, std::string_view instance_id) {
  std::string name = wake_queue_prefix(pool) + std::string(instance_id);
  if (name.size() > kMaxQueueName) return std::nullopt;
  return name;
}

std::string sibling_queue_url(std::string_view sibling_url, std::string_view name) {
  size_t slash = sibling_url.rfind('/');
  std::string base(slash == std::string_view::npos ? std::string_view{} : sibling_url.substr(0, slash + 1));
  return base + std::string(name);
}

std::optional<std::string> wake_queue_policy(std::string_view sibling_queue_arn, std::string_view pool,
                                             std::string_view instance_role_id, std::string_view instance_id) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (int i = 0; i < 5; ++i) {
    size_t colon = sibling_queue_arn.find(':', start);
    if (colon == std::string_view::npos) return std::nullopt;
    parts.emplace_back(sibling_queue_arn.substr(start, colon - start));
    start = colon + 1;
  }
  // arn : partition : sqs : region : account : name
  if (parts[0] != "arn" || parts[1].empty() || parts[2] != "sqs" || parts[3].empty() || parts[4].empty()) {
    return std::nullopt;
  }
  auto name = wake_queue_name(pool, instance_id);
  if (!name || !is_instance_id(instance_id) || !is_role_unique_id(instance_role_id)) return std::nullopt;
  const std::string& partition = parts[1];
  const std::string& region = parts[3];
  const std::string& account = parts[4];
  // A queue policy that names the account as principal only delegates to identity policies, and
  // the instance role has no SQS permission: it would admit no one. Any principal, then, but only
  // the caller AWS knows as "<instance role id>:<instance id>" — the credentials delivered to
  // this instance — in this account.
  Json::Value statement(Json::objectValue);
  statement["Sid"] = "ItsInstanceOnly";
  statement["Effect"] = "Allow";
  statement["Principal"]["AWS"] = "*";
  for (const char* a : {"sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage"}) statement["Action"].append(a);
  statement["Resource"] = "arn:" + partition + ":sqs:" + region + ":" + account + ":" + *name;
  statement["Condition"]["StringEquals"]["aws:PrincipalAccount"] = account;
  statement["Condition"]["StringEquals"]["aws:userid"] = record_key(instance_role_id, instance_id);
  Json::Value policy(Json::objectValue);
  policy["Version"] = "2012-10-17";
  policy["Statement"].append(statement);
  return write_json(policy);
}

std::optional<std::string> wake_queue_instance(std::string_view pool, std::string_view queue_url) {
  size_t slash = queue_url.rfind('/');
  std::string_view name = slash == std::string_view::npos ? queue_url : queue_url.substr(slash + 1);
  const std::string prefix = wake_queue_prefix(pool);
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view id = name.substr(prefix.size());
  if (!is_instance_id(id)) return std::nullopt;
  return std::string(id);
}

std::vector<std::string> stale_wake_queues(std::string_view pool, const std::vector<std::string>& queue_urls,
                                           const std::set<std::string>& live_instances) {
  std::vector<std::string> out;
  for (const auto& url : queue_urls) {
    auto id = wake_queue_instance(pool, url);
    if (id && !live_instances.count(*id)) out.push_back(url);
  }
  return out;
}

}  // namespace runpool::pool
