#include "common/json.h"

#include <memory>

namespace runpool {

std::optional<Json::Value> read_json(const Json::CharReaderBuilder& builder, const std::string& text,
                                     std::string* errors) {
  std::unique_ptr<Json::CharReader> reader(builder.newCharReader());
  Json::Value value;
  errors->clear();
  try {
    if (!reader->parse(text.data(), text.data() + text.size(), &value, errors)) return std::nullopt;
  } catch (const Json::Exception& e) {
    *errors = e.what();
    return std::nullopt;
  }
  return value;
}

std::optional<Json::Value> try_parse_json(const std::string& text) {
  Json::CharReaderBuilder builder;
  builder["collectComments"] = false;
  builder["failIfExtra"] = true;
  builder["rejectDupKeys"] = false;
  std::string errors;
  return read_json(builder, text, &errors);
}

Json::Value parse_json(const std::string& text, const std::string& what) {
  Json::CharReaderBuilder builder;
  builder["collectComments"] = false;
  builder["failIfExtra"] = true;
  std::string errors;
  std::optional<Json::Value> value = read_json(builder, text, &errors);
  if (!value) {
    std::string excerpt = text.substr(0, 120);
    for (char& c : excerpt) {
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    }
    throw JsonError(what + ": malformed JSON (" + errors.substr(0, errors.find('\n')) + ") in \"" +
                    excerpt + (text.size() > 120 ? "…" : "") + "\"");
  }
  return *value;
}

std::string write_json(const Json::Value& value) {
  Json::StreamWriterBuilder builder;
  builder["indentation"] = "";
  builder["emitUTF8"] = true;
  return Json::writeString(builder, value);
}

const Json::Value& require_member(const Json::Value& obj, const char* key, const std::string& what) {
  if (!obj.isObject()) throw JsonError(what + ": expected a JSON object");
  const Json::Value* v = obj.find(key, key + std::char_traits<char>::length(key));
  if (!v) throw JsonError(what + ": field '" + key + "' missing");
  return *v;
}

const Json::Value& require_array(const Json::Value& obj, const char* key, const std::string& what) {
  const Json::Value& v = require_member(obj, key, what);
  if (!v.isArray()) throw JsonError(what + ": field '" + key + "' is not an array");
  return v;
}

std::string require_string(const Json::Value& obj, const char* key, const std::string& what) {
  const Json::Value& v = require_member(obj, key, what);
  if (!v.isString()) throw JsonError(what + ": field '" + key + "' is not a string");
  return v.asString();
}

int64_t require_int(const Json::Value& obj, const char* key, const std::string& what) {
  const Json::Value& v = require_member(obj, key, what);
  if (!v.isIntegral() || !v.isInt64()) throw JsonError(what + ": field '" + key + "' is not a 64-bit integer");
  return v.asInt64();
}

std::optional<std::string> optional_string(const Json::Value& obj, const char* key, const std::string& what) {
  if (!obj.isObject() || !obj.isMember(key) || obj[key].isNull()) return std::nullopt;
  if (!obj[key].isString()) throw JsonError(what + ": field '" + key + "' is not a string");
  return obj[key].asString();
}

std::optional<int64_t> optional_int(const Json::Value& obj, const char* key, const std::string& what) {
  if (!obj.isObject() || !obj.isMember(key) || obj[key].isNull()) return std::nullopt;
  if (!obj[key].isIntegral() || !obj[key].isInt64()) {
    throw JsonError(what + ": field '" + key + "' is not a 64-bit integer");
  }
  return obj[key].asInt64();
}

}  // namespace runpool
