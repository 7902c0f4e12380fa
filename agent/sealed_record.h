// The agent's side of sealed tokens (common/pool/sealed_field.h), as pure decisions: which key the
// agent holds after reading its record, and the record as the rest of the agent sees it — every
// token opened, or dropped when it cannot be trusted.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/pool/instance_record.h"
#include "common/pool/sealed_field.h"

namespace runpool::agent {

struct KeyStep {
  std::optional<pool::SealKeys> keys;  // what the agent holds from now on
  bool store = false;                  // keys came from the record: keep them root-only before taking them
  bool take_open_key = false;          // remove the record's open_key (taken, or not the seal key's half)
  std::string warning;                 // something in the record to log (never a key)
};
// `held`: the keys the agent already holds (memory or its file); `held_kept`: they are in its file.
// The record's open_key is adopted only when it is the private half of the record's seal_key, which
// the instance role cannot write, and taken from the record only once kept (a failed write is
// tried again at the next read, the key still in the record for an agent started meanwhile).
KeyStep key_step(const std::optional<pool::SealKeys>& held, bool held_kept, const pool::InstanceRecord& r);

struct OpenedRecord {
  pool::InstanceRecord record;        // reg_token, remove_token and jit_config in clear, or empty
  std::vector<std::string> refused;   // "<field>: <why>" for each token dropped
};
// A record with a seal key has every token sealed for its field and generation; a token that is
// plain (written by someone holding the instance role's credentials), sealed for another
// assignment, or unopenable with `keys`, is dropped as if absent. A record from before sealing
// (no seal key) is returned as it is.
OpenedRecord open_record(pool::InstanceRecord r, const std::optional<pool::SealKeys>& keys);

}  // namespace runpool::agent
