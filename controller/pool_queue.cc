#include "controller/pool_queue.h"

#include "common/pool/pool_message.h"

namespace runpool::controller {

std::string encode_pool_message(const pool::PoolMessage& message) { return pool::pool_message_body(message); }

std::optional<pool::PoolMessage> decode_pool_message(const std::string& body) {
  return pool::parse_pool_message(body);
}

}  // namespace runpool::controller
