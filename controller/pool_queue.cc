#include "controller/pool_queue.h"

#include <spdlog/spdlog.h>

namespace runpool::controller {

void wake_agents(PoolQueue& queue, const std::vector<std::string>& instance_ids) {
  for (const auto& id : instance_ids) {
    try {
      queue.wake(id);
    } catch (const std::exception& e) {
      spdlog::info("no wake-up for {} ({}); its agent sees the change at its next poll", id, e.what());
    }
  }
}

}  // namespace runpool::controller
