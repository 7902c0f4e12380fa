// A pool message's body: `{"instance_id":"i-…","generation":N}`, the instance and the idle
// generation it advertises (docs/design.md, "Pool messages"). Parsing is strict: anything else in
// a pool queue is malformed and gets deleted, never half-read.
#pragma once

#include <optional>
#include <string>

#include "common/pool/claim.h"

namespace runpool::pool {

std::string pool_message_body(const PoolMessage& message);

// nullopt for anything but a JSON object holding a valid instance id and a generation >= 1 (other
// members are ignored, so a later version may add some). `error` says why, for the warning.
std::optional<PoolMessage> parse_pool_message(const std::string& body, std::string* error = nullptr);

}  // namespace runpool::pool
