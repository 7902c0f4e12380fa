// The state table's partition key. An instance's credentials reach AWS as the caller
// "<instance role's unique id>:<instance id>" (the `aws:userid` AWS gives every request signed
// with an EC2 instance role's credentials), and IAM can bind a request only to keys it can spell
// from such a variable: the instance policy allows `dynamodb:LeadingKeys` = `${aws:userid}`. So
// each record is stored under exactly that string, and an instance can reach its own item and
// no other. Records are otherwise addressed by instance id; this is the one place that maps.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace runpool::pool {

// A role's unique id as IAM gives it: "AROA" then upper-case letters and digits (21 characters on
// AWS today; 16 to 128 accepted, as IAM documents for unique ids).
bool is_role_unique_id(std::string_view s);

// "i-" and up to 62 letters or digits: what a record key's instance part may be (EC2's ids, and the
// tests' stand-ins).
bool is_plausible_instance_id(std::string_view id);

// "<role id>:<instance id>". Throws std::invalid_argument when either part is malformed: a key
// that IAM could never match must not be written.
std::string record_key(std::string_view instance_role_id, std::string_view instance_id);

struct ParsedRecordKey {
  std::string instance_role_id;  // empty for a key written before keys named the role
  std::string instance_id;
};

// The parts of a stored key; a bare instance id (tables written before keys named the role) has
// no role part. nullopt when neither form fits.
std::optional<ParsedRecordKey> parse_record_key(std::string_view key);

}  // namespace runpool::pool
