// A coarse, readable time span for the plans' reasons and logs: "45s", "12m", "3h".
#pragma once

#include <cstdint>
#include <string>

namespace runpool::pool {

inline std::string span(int64_t ms) {
  if (ms < 0) ms = 0;
  if (ms < 120'000) return std::to_string(ms / 1000) + "s";
  if (ms < 2 * 3'600'000) return std::to_string(ms / 60'000) + "m";
  return std::to_string(ms / 3'600'000) + "h";
}

}  // namespace runpool::pool
