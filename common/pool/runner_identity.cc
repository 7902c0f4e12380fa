#include "common/pool/runner_identity.h"

#include "common/pool/runner_name.h"

namespace runpool::pool {

std::string records_runner_name(const InstanceRecord& r) { return runner_name(r.pool, r.instance_id, r.generation); }

bool is_records_runner(const InstanceRecord& r, std::string_view github_name) {
  // An empty pool or instance id makes no name the controller ever gave.
  return !r.pool.empty() && !r.instance_id.empty() && github_name == records_runner_name(r);
}

}  // namespace runpool::pool
