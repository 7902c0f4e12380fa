// runpoolctl status: the pool's instances as the table has them (instance, state, label, class,
// type, age, heartbeat age, busy, time to deadline), each class's pool depth, and the scale set
// runpoolctl serve serves: its runners by phase and who holds it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <json/json.h>

#include "common/pool/demand_plan.h"
#include "common/pool/instance_record.h"
#include "common/pool/lease_store.h"
#include "controller/context.h"

namespace runpool::controller {

struct StatusOptions {
  bool json = false;
  bool all = false;  // include terminated records
};

struct ClassDepth {
  std::string resource_class;
  std::string queue;
  std::optional<QueueDepth> depth;  // nullopt: could not be read
  std::string error;
  int idle_records = 0;
};

// A scale set runpoolctl serve serves from this pool: its runners by phase, and who holds its lease.
struct ScaleSetView {
  std::string name;
  std::vector<pool::ScaleSetRunner> runners;
  std::optional<pool::Lease> lease;  // nullopt: never held (or not read: see error)
  std::string error;
};

struct StatusView {
  int64_t now_ms = 0;
  // Every scale set served from this pool (its lease was ever written), and the configured one
  // (scale_set_name) when a record is assigned to it; by name.
  std::vector<ScaleSetView> scale_sets;
  std::vector<pool::InstanceRecord> records;  // this pool's, sorted by state then age
  std::vector<ClassDepth> classes;
  long skipped = 0;  // foreign or corrupted items the scan passed over
};

// `leases`: where serve's leases are (nullptr: the configured scale set is shown from the records
// alone).
StatusView collect_status(Context& ctx, const StatusOptions& options, pool::LeaseStore* leases = nullptr);
int run_status(Context& ctx, const StatusOptions& options, pool::LeaseStore* leases = nullptr);

// "42s", "3m", "2h5m", "1d3h"; negative as "-…" (a passed deadline).
std::string short_age(int64_t ms);
std::string status_text(const StatusView& v);
Json::Value status_json(const StatusView& v);

}  // namespace runpool::controller
