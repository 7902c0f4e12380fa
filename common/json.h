// jsoncpp helpers: strict parsing with a clear error, compact writing, and typed field access
// that reports what was missing or of the wrong type instead of crashing on a foreign document.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include <json/json.h>

namespace runpool {

class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses a whole document; throws JsonError naming `what` (e.g. "DynamoDB GetItem response").
Json::Value parse_json(const std::string& text, const std::string& what);
// Like parse_json, but returns nullopt instead of throwing.
std::optional<Json::Value> try_parse_json(const std::string& text);
// A whole document read with `builder`'s settings (strict mode, say); nullopt with jsoncpp's
// message in `errors` when it is not one. Never throws: past its nesting limit jsoncpp throws
// rather than fails, which no caller expects (found by the fuzzers).
std::optional<Json::Value> read_json(const Json::CharReaderBuilder& builder, const std::string& text,
                                     std::string* errors);
// Compact one-line JSON.
std::string write_json(const Json::Value& value);

// Typed access: throw JsonError("<what>: field 'x' missing / is not a string") on mismatch.
const Json::Value& require_member(const Json::Value& obj, const char* key, const std::string& what);
std::string require_string(const Json::Value& obj, const char* key, const std::string& what);
const Json::Value& require_array(const Json::Value& obj, const char* key, const std::string& what);
int64_t require_int(const Json::Value& obj, const char* key, const std::string& what);
// Optional variants: nullopt when absent; JsonError when present but of the wrong type.
std::optional<std::string> optional_string(const Json::Value& obj, const char* key, const std::string& what);
std::optional<int64_t> optional_int(const Json::Value& obj, const char* key, const std::string& what);

}  // namespace runpool
