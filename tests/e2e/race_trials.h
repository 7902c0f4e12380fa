// Seeded randomized trials for the reliability e2e suites: one base seed per run (from the
// environment, else random), printed so a failure can be replayed; trial i uses base + i. A
// replay repeats a trial's schedule (which commands, when, which kills), not its interleaving:
// the processes still race on a busy machine.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

namespace runpool::controller::e2e {

// `seed_var` (e.g. RUNPOOL_RACE_SEED) if set, else a fresh random seed.
inline uint64_t base_seed(const char* seed_var) {
  if (const char* s = std::getenv(seed_var); s && *s) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 20) ^ rd();
}

// `trials_var` if set; else `full` trials with RUNPOOL_RELIABILITY_FULL=1, `ci` otherwise.
inline int trial_count(const char* trials_var, int ci, int full) {
  if (const char* s = std::getenv(trials_var); s && *s) return std::max(1, std::atoi(s));
  const char* f = std::getenv("RUNPOOL_RELIABILITY_FULL");
  return f && std::string(f) == "1" ? full : ci;
}

// The line that names a trial in every failure and tells how to replay it alone.
inline std::string replay_hint(const char* seed_var, const char* trials_var, uint64_t trial_seed,
                               const std::string& test) {
  return "trial seed " + std::to_string(trial_seed) + " (replay: " + seed_var + "=" + std::to_string(trial_seed) +
         " " + trials_var + "=1 ctest -R " + test + ")";
}

// Uniform integer in [lo, hi].
inline int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
inline bool chance(std::mt19937_64& rng, double p) { return std::bernoulli_distribution(p)(rng); }

}  // namespace runpool::controller::e2e
