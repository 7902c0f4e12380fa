#include "agent/sealed_record.h"

#include "common/pool/record_codec.h"

namespace runpool::agent {

KeyStep key_step(const std::optional<pool::SealKeys>& held, bool held_kept, const pool::InstanceRecord& r) {
  KeyStep k;
  k.keys = held;
  if (r.seal_key.empty()) return k;  // a record from before sealing
  if (held && held->public_key == r.seal_key) {
    k.store = !held_kept;
    k.take_open_key = !r.open_key.empty();  // taken once already, by an agent that stopped before removing it
    return k;
  }
  if (r.open_key.empty()) return k;
  if (pool::keys_match(r.seal_key, r.open_key)) {
    k.keys = pool::SealKeys{r.seal_key, r.open_key};
    k.store = true;
  } else {
    k.warning = "the record's open_key is not the private half of its seal_key: removing it unused";
  }
  k.take_open_key = true;
  return k;
}

namespace {

void open_one(Secret& token, const char* field, int64_t generation, const std::optional<pool::SealKeys>& keys,
              const std::string& seal_key, std::vector<std::string>& refused) {
  if (token.empty()) return;
  std::string why;
  if (!keys) {
    why = "this instance holds no key to open it";
  } else if (keys->public_key != seal_key) {
    why = "the record's seal key is not this instance's";
  } else {
    pool::OpenedField o = pool::open_field(*keys, generation, field, token);
    if (o.value) {
      token = *o.value;
      return;
    }
    why = o.error;
  }
  token = Secret();
  refused.push_back(std::string(field) + ": " + why);
}

}  // namespace

OpenedRecord open_record(pool::InstanceRecord r, const std::optional<pool::SealKeys>& keys) {
  OpenedRecord out;
  if (!r.seal_key.empty()) {
    open_one(r.reg_token, pool::attr::kRegToken, r.generation, keys, r.seal_key, out.refused);
    open_one(r.remove_token, pool::attr::kRemoveToken, r.generation, keys, r.seal_key, out.refused);
    open_one(r.jit_config, pool::attr::kJitConfig, r.generation, keys, r.seal_key, out.refused);
  }
  r.open_key = Secret();  // the rest of the agent never needs it
  out.record = std::move(r);
  return out;
}

}  // namespace runpool::agent
