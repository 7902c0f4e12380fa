#include "controller/pool_queue.h"

#include "common/json.h"

namespace runpool::controller {

std::string encode_pool_message(const pool::PoolMessage& message) {
  Json::Value v(Json::objectValue);
  v["instance_id"] = message.instance_id;
  v["generation"] = static_cast<Json::Int64>(message.generation);
  return write_json(v);
}

std::optional<pool::PoolMessage> decode_pool_message(const std::string& body) {
  auto doc = try_parse_json(body);
  if (!doc || !doc->isObject()) return std::nullopt;
  try {
    pool::PoolMessage m;
    m.instance_id = require_string(*doc, "instance_id", "pool message");
    m.generation = require_int(*doc, "generation", "pool message");
    if (m.instance_id.rfind("i-", 0) != 0 || m.instance_id.size() > 32 || m.generation < 1) return std::nullopt;
    return m;
  } catch (const JsonError&) {
    return std::nullopt;
  }
}

}  // namespace runpool::controller
