#include "common/pool/pool_message.h"

#include "common/json.h"
#include "common/pool/runner_name.h"

namespace runpool::pool {

std::string pool_message_body(const PoolMessage& message) {
  Json::Value v(Json::objectValue);
  v["instance_id"] = message.instance_id;
  v["generation"] = Json::Int64(message.generation);
  return write_json(v);
}

std::optional<PoolMessage> parse_pool_message(const std::string& body, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<PoolMessage> {
    if (error) *error = why;
    return std::nullopt;
  };
  auto json = try_parse_json(body);
  if (!json) return fail("not JSON");
  if (!json->isObject()) return fail("not a JSON object");
  const Json::Value& id = (*json)["instance_id"];
  if (!id.isString()) return fail("instance_id missing or not a string");
  if (!is_instance_id(id.asString())) return fail("instance_id is not an instance id");
  const Json::Value& generation = (*json)["generation"];
  if (!generation.isIntegral() || !generation.isInt64()) return fail("generation missing or not an integer");
  if (generation.asInt64() < 1) return fail("generation is not positive");
  return PoolMessage{id.asString(), generation.asInt64()};
}

}  // namespace runpool::pool
