// An assignment's secrets (registration token, remove token, JIT configuration) sealed to the
// instance's own key, so that whoever holds the instance role's credentials — which a job may
// steal and keep for hours — reads nothing usable in the record (docs/security.md, "The record").
//
// At launch the controller makes a key pair for the instance: the public half (`seal_key`) is a
// lifecycle field the instance role cannot write; the private half (`open_key`) is in the record
// only until the agent has read it, before any job has run there, and then lives root-only on
// the instance. Every secret written after that is a libsodium sealed box (X25519 +
// XSalsa20-Poly1305, an ephemeral sender key per value) of "<generation>\n<field>\n<value>", so a
// value opens only for the assignment and the attribute it was written for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/secret.h"

namespace runpool::pool {

// Both halves as standard base64 of libsodium's 32-byte X25519 keys.
struct SealKeys {
  std::string public_key;
  Secret private_key;
};

SealKeys make_seal_keys();
// Whether `private_key` is the private half of `public_key` (false for anything malformed).
bool keys_match(const std::string& public_key, const Secret& private_key);

// Sealed values begin with this; nothing else in the record does.
inline constexpr std::string_view kSealedPrefix = "sealed1:";
bool is_sealed(const Secret& stored);

// `value` sealed to `public_key` for `field` of `generation`. Throws std::invalid_argument on a
// malformed key.
Secret seal_field(const std::string& public_key, int64_t generation, std::string_view field, const Secret& value);

struct OpenedField {
  std::optional<Secret> value;  // set when it opened and was written for this field and generation
  std::string error;            // why not, for a log line (never the value)
};
OpenedField open_field(const SealKeys& keys, int64_t generation, std::string_view field, const Secret& stored);

}  // namespace runpool::pool
