// runpoolctl status: the pool's instances as the table has them (instance, state, label, class,
// type, age, heartbeat age, busy, time to deadline) and each class's pool depth.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <json/json.h>

#include "common/pool/instance_record.h"
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

struct StatusView {
  int64_t now_ms = 0;
  std::vector<pool::InstanceRecord> records;  // this pool's, sorted by state then age
  std::vector<ClassDepth> classes;
  long skipped = 0;  // foreign or corrupted items the scan passed over
};

StatusView collect_status(Context& ctx, const StatusOptions& options);
int run_status(Context& ctx, const StatusOptions& options);

// "42s", "3m", "2h5m", "1d3h"; negative as "-…" (a passed deadline).
std::string short_age(int64_t ms);
std::string status_text(const StatusView& v);
Json::Value status_json(const StatusView& v);

}  // namespace runpool::controller
