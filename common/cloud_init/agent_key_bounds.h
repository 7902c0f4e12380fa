// The bounds of the agent keys runpoolctl passes through into user-data (its agent_* keys): the
// agent checks them when it starts, and runpoolctl checks them when it reads its configuration,
// so a value the agent would refuse never reaches an instance. Both tables read them from here.
#pragma once

#include <chrono>

#include "common/clock.h"

namespace runpool::cloud_init {

struct DurationBounds {
  Duration min;
  Duration max;
};

inline constexpr DurationBounds kHeartbeatIntervalBounds{std::chrono::milliseconds(50), std::chrono::hours(1)};
inline constexpr DurationBounds kAssignmentPollIntervalBounds{std::chrono::milliseconds(20), std::chrono::minutes(5)};

}  // namespace runpool::cloud_init
