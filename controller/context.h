// What every runpoolctl command works with: the settings, the AWS clock (every time written to or
// compared with the table), the state table, the pool queues, EC2 and GitHub — each behind an
// interface so the commands can run against in-memory fakes in unit tests — plus where to print,
// whether a cancellation (SIGINT/SIGTERM) was asked for, and where metric events go.
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>
#include <stdexcept>

#include "common/clock.h"
#include "common/metrics/sink.h"
#include "common/pool/run_assignment_store.h"
#include "common/pool/state_table.h"
#include "controller/compute.h"
#include "controller/pool_queue.h"
#include "controller/runners.h"
#include "controller/settings.h"

namespace runpool::controller {

struct Context {
  const Settings& settings;
  Clock& clock;  // the AWS clock (common/aws_clock.h) in the binary; a FakeClock in tests
  pool::StateTable& table;
  PoolQueue& queue;
  Compute& compute;
  Runners& github;  // the real one is built on first use: status never needs GitHub credentials
  std::ostream& out;  // the command's result (text or JSON); logs go to stderr
  const std::atomic<bool>& cancelled;  // set by SIGINT/SIGTERM; long waits check it
  metrics::MetricsSink& metrics = metrics::no_metrics();  // controller/metrics.h builds the real one
  // What each provision was for, kept for re-runs (common/pool/run_assignment.h). null: not kept
  // (unit tests of other things); the binary always has it.
  pool::RunAssignmentStore* runs = nullptr;

  int64_t now_ms() const { return to_epoch_ms(clock.now()); }
};

// A command used wrongly (a bad flag value, an unknown resource class): exit code 2, like a
// configuration error.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Exit codes (docs/runpoolctl.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

}  // namespace runpool::controller
