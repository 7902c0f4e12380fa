// Typed reads of GitHub JSON beyond common/json.h: booleans and timestamps. GitHub writes
// timestamps both as "2026-01-22T12:13:35Z" and with an offset and fraction
// ("2020-01-22T12:13:35.123-08:00", as its registration-token examples show).
#pragma once

#include <string>

#include <json/json.h>

#include "common/clock.h"

namespace runpool::github {

bool require_bool(const Json::Value& obj, const char* key, const std::string& what);
// `fallback` when absent or null; JsonError when present with another type.
bool optional_bool(const Json::Value& obj, const char* key, bool fallback, const std::string& what);

// ISO 8601 with "Z" or a ±HH:MM / ±HHMM offset and an optional fraction; false on anything else.
bool parse_github_time(const std::string& text, WallTime* out);
// JsonError when missing, not a string, or not such a timestamp (the value is not quoted).
WallTime require_time(const Json::Value& obj, const char* key, const std::string& what);

}  // namespace runpool::github
