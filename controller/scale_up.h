// runpoolctl scale-up: tops a pool up to its idle quota — the schedule's of the moment, or --to N.
// A shared pool (pool_mode = shared) gets runners that register once with the pool's static labels
// and then serve any workflow's jobs until scale-down drains them; a run-scoped pool gets instances
// warmed into it (controller/warm_up.h).
#pragma once

#include <optional>
#include <string>

#include "controller/context.h"

namespace runpool::controller {

struct ScaleUpOptions {
  std::optional<int> to{};     // idle runners per class to reach; else the schedule's quota
  std::string resource_class{};  // "": every class of resource_classes
  bool wait = true;            // wait until the new runners registered, and mark them running
  std::optional<Duration> timeout{};  // of the wait (default provision_timeout)
  bool json = false;
};

// Exit 0 when every class reached its quota (or was there), 1 when a launch or a registration
// fell short, 2 when an option is wrong.
int run_scale_up(Context& ctx, const ScaleUpOptions& options);

}  // namespace runpool::controller
