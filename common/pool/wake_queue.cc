#include "common/pool/wake_queue.h"

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
