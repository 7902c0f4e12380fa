// Pool messages (common/pool/pool_message.*): any body is either a valid message or refused with a
// reason; a valid one round-trips; and judging it against the record it names never claims what
// it must not (a stale generation, another pool's instance, no record).
#include "common/pool/claim.h"
#include "common/pool/pool_message.h"
#include "common/pool/sealed_field.h"
#include "common/pool/runner_name.h"
#include "tests/fuzz/fuzz_support.h"

using namespace runpool;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body = fuzz::text(data, size);
  std::string error;
  auto m = pool::parse_pool_message(body, &error);
  if (!m) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  FUZZ_CHECK(pool::is_instance_id(m->instance_id));
  FUZZ_CHECK(m->generation >= 1);
  auto again = pool::parse_pool_message(pool::pool_message_body(*m));
  FUZZ_CHECK(again && again->instance_id == m->instance_id && again->generation == m->generation);

  pool::InstanceRecord r;
  r.instance_id = m->instance_id;
  r.pool = "p";
  r.state = pool::State::kIdle;
  r.generation = m->generation == INT64_MAX ? 1 : m->generation + 1;  // never the message's
  r.resource_class = "small";
  r.usage_class = pool::UsageClass::kSpot;
  r.instance_type = "c7i.large";
  r.deadline_ms = INT64_MAX;
  static const std::string seal_key = pool::make_seal_keys().public_key;  // launched with sealed tokens
  r.seal_key = seal_key;
  pool::ClaimRequest req;
  req.resource_class = "small";
  req.pool = "p";
  auto stale = pool::judge_pool_message(*m, r, req);
  FUZZ_CHECK(stale.fate != pool::MessageFate::kClaim);
  auto missing = pool::judge_pool_message(*m, std::nullopt, req);
  FUZZ_CHECK(missing.fate != pool::MessageFate::kClaim);
  // The right generation, but another pool's instance: never claimed either.
  r.generation = m->generation;
  r.pool = "q";
  FUZZ_CHECK(pool::judge_pool_message(*m, r, req).fate != pool::MessageFate::kClaim);
  r.pool = "p";
  FUZZ_CHECK(pool::judge_pool_message(*m, r, req).fate == pool::MessageFate::kClaim);
  return 0;
}
