// Pure decisions of a launch: which usage classes to try and in what order, which instance types,
// the CreateFleet request for a shortfall, its idempotency token, and what a fleet's answer means.
#pragma once

#include <string>
#include <vector>

#include "common/aws/ec2_types.h"
#include "common/pool/instance_record.h"
#include "controller/settings.h"

namespace runpool::controller {

// Spot with fallback: spot, then on-demand. Otherwise the requested class only.
std::vector<pool::UsageClass> launch_usages(pool::UsageClass requested, bool on_demand_fallback);

// Which warm instances a provision may claim: exactly the requested usage class, except that a
// spot request that may fall back to on-demand takes either (nullopt).
std::optional<pool::UsageClass> claim_usage_filter(pool::UsageClass requested, bool on_demand_fallback);

// The class's instance types that match one of `globs` (all when empty), in the class's order.
std::vector<std::string> launch_types(const ResourceClass& rc, const std::vector<std::string>& globs);

// The ClientToken of one CreateFleet call: derived from everything that defines it (pool, label,
// usage class, round, capacity), so a retried call — or a re-run provision that finds the same
// shortfall — gets EC2's first answer instead of a second fleet. ≤ 64 ASCII characters.
std::string fleet_client_token(const std::string& pool, const std::string& label, pool::UsageClass usage, int round,
                               int count);

// CreateFleet (instant) for `count` instances of `usage`: the pool's launch template, one
// override per type × subnet, tags on the instances (pool, table,
// label, class) and on the fleet.
aws::CreateFleetRequest fleet_request(const Settings& s, const std::string& resource_class,
                                      const std::vector<std::string>& types, pool::UsageClass usage, int count,
                                      const std::string& label, const std::string& client_token);

// EC2's capacity errors: try another usage class (or a later round), never the same call again.
bool is_capacity_error(const std::string& code);

struct LaunchedInstance {
  std::string instance_id;
  std::string instance_type;
  pool::UsageClass usage = pool::UsageClass::kOnDemand;
};

// The instances a fleet answer holds, with the usage class from the answer's lifecycle (else
// `requested`).
// The AMI a launch of `resource_class` asks for: the class's own image, else image_id (the launch
// template's). What a record's ami_id holds; "" when neither is configured.
std::string launch_image(const Settings& s, const std::string& resource_class);

std::vector<LaunchedInstance> fleet_instances(const aws::CreateFleetResult& result, pool::UsageClass requested);

// Whether another round with the same usage class is worth it: it launched something but not
// everything (partial fulfilment tops up). Nothing launched, or only capacity errors: move on.
bool retry_same_usage(size_t launched_this_round, int still_needed);

}  // namespace runpool::controller
