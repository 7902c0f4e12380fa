#include "common/github/json_fields.h"

#include <cctype>

#include "common/json.h"

namespace runpool::github {

bool require_bool(const Json::Value& obj, const char* key, const std::string& what) {
  const Json::Value& v = require_member(obj, key, what);
  if (!v.isBool()) throw JsonError(what + ": field '" + key + "' is not a boolean");
  return v.asBool();
}

bool optional_bool(const Json::Value& obj, const char* key, bool fallback, const std::string& what) {
  if (!obj.isObject() || !obj.isMember(key) || obj[key].isNull()) return fallback;
  if (!obj[key].isBool()) throw JsonError(what + ": field '" + key + "' is not a boolean");
  return obj[key].asBool();
}

bool parse_github_time(const std::string& text, WallTime* out) {
  size_t t = text.find('T');
  if (t == std::string::npos) return false;
  size_t sign = text.find_first_of("+-", t);
  if (sign == std::string::npos) return parse_iso8601(text, out);
  std::string offset = text.substr(sign + 1);
  if (offset.size() == 5 && offset[2] == ':') offset.erase(2, 1);
  if (offset.size() != 4) return false;
  for (char c : offset) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  int hours = std::stoi(offset.substr(0, 2));
  int minutes = std::stoi(offset.substr(2, 2));
  if (hours > 23 || minutes > 59) return false;
  WallTime local;
  if (!parse_iso8601(text.substr(0, sign) + "Z", &local)) return false;
  auto shift = std::chrono::hours(hours) + std::chrono::minutes(minutes);
  *out = text[sign] == '+' ? local - shift : local + shift;  // local = UTC + offset
  return true;
}

WallTime require_time(const Json::Value& obj, const char* key, const std::string& what) {
  std::string text = require_string(obj, key, what);
  WallTime t;
  if (!parse_github_time(text, &t)) throw JsonError(what + ": field '" + key + "' is not an ISO 8601 time");
  return t;
}

}  // namespace runpool::github
