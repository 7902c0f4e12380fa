#include "common/aws/attribute_value.h"

#include <algorithm>
#include <charconv>
#include <regex>

#include "common/json.h"

namespace runpool::aws {
namespace {

using Type = AttributeValue::Type;

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(const std::string& in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {kB64[n >> 18], kB64[(n >> 12) & 63], kB64[(n >> 6) & 63], kB64[n & 63]};
  }
  if (size_t rest = in.size() - i; rest > 0) {
    uint32_t n = uint8_t(in[i]) << 16;
    if (rest == 2) n |= uint8_t(in[i + 1]) << 8;
    out += kB64[n >> 18];
    out += kB64[(n >> 12) & 63];
    out += rest == 2 ? kB64[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// Strict: padded, standard alphabet, nothing else. nullopt on any deviation.
std::optional<std::string> base64_decode(const std::string& in) {
  if (in.size() % 4 != 0) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    bool final_group = i + 4 == in.size();
    int pad = (in[i + 3] == '=') + (in[i + 2] == '=' && in[i + 3] == '=');
    if (pad && !final_group) return std::nullopt;
    uint32_t n = 0;
    for (int k = 0; k < 4; ++k) {
      int v = k >= 4 - pad ? 0 : value(in[i + k]);
      if (v < 0) return std::nullopt;
      n = (n << 6) | uint32_t(v);
    }
    out += char(n >> 16);
    if (pad < 2) out += char((n >> 8) & 0xff);
    if (pad < 1) out += char(n & 0xff);
  }
  return out;
}

std::vector<std::string> sorted_unique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

const char* type_tag(Type type) {
  switch (type) {
    case Type::kString:
      return "S";
    case Type::kNumber:
      return "N";
    case Type::kBinary:
      return "B";
    case Type::kBool:
      return "BOOL";
    case Type::kNull:
      return "NULL";
    case Type::kList:
      return "L";
    case Type::kMap:
      return "M";
    case Type::kStringSet:
      return "SS";
    case Type::kNumberSet:
      return "NS";
    case Type::kBinarySet:
      return "BS";
  }
  return "?";
}

bool is_dynamodb_number(const std::string& text) {
  static const std::regex re(R"([+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?)");
  return text.size() <= 100 && std::regex_match(text, re);
}

AttributeValue::AttributeValue() : type_(Type::kNull) {}

AttributeValue AttributeValue::string(std::string s) {
  AttributeValue v(Type::kString);
  v.text_ = std::move(s);
  return v;
}

AttributeValue AttributeValue::number(int64_t n) {
  AttributeValue v(Type::kNumber);
  v.text_ = std::to_string(n);
  return v;
}

AttributeValue AttributeValue::number_text(const std::string& decimal) {
  if (!is_dynamodb_number(decimal)) throw std::invalid_argument("not a DynamoDB number");
  AttributeValue v(Type::kNumber);
  v.text_ = decimal;
  return v;
}

AttributeValue AttributeValue::binary(std::string bytes) {
  AttributeValue v(Type::kBinary);
  v.text_ = std::move(bytes);
  return v;
}

AttributeValue AttributeValue::boolean(bool b) {
  AttributeValue v(Type::kBool);
  v.bool_ = b;
  return v;
}

AttributeValue AttributeValue::null() { return AttributeValue(); }

AttributeValue AttributeValue::list(std::vector<AttributeValue> items) {
  AttributeValue v(Type::kList);
  v.list_ = std::make_shared<const std::vector<AttributeValue>>(std::move(items));
  return v;
}

AttributeValue AttributeValue::map(Item entries) {
  AttributeValue v(Type::kMap);
  v.map_ = std::make_shared<const Item>(std::move(entries));
  return v;
}

AttributeValue AttributeValue::string_set(std::vector<std::string> members) {
  if (members.empty()) throw std::invalid_argument("DynamoDB sets cannot be empty");
  AttributeValue v(Type::kStringSet);
  v.set_ = sorted_unique(std::move(members));
  return v;
}

AttributeValue AttributeValue::number_set(const std::vector<int64_t>& members) {
  std::vector<std::string> texts;
  for (int64_t n : members) texts.push_back(std::to_string(n));
  return number_set_text(texts);
}

AttributeValue AttributeValue::number_set_text(const std::vector<std::string>& members) {
  if (members.empty()) throw std::invalid_argument("DynamoDB sets cannot be empty");
  for (const auto& m : members) {
    if (!is_dynamodb_number(m)) throw std::invalid_argument("not a DynamoDB number in a number set");
  }
  AttributeValue v(Type::kNumberSet);
  v.set_ = sorted_unique(members);
  return v;
}

AttributeValue AttributeValue::binary_set(std::vector<std::string> members) {
  if (members.empty()) throw std::invalid_argument("DynamoDB sets cannot be empty");
  AttributeValue v(Type::kBinarySet);
  v.set_ = sorted_unique(std::move(members));
  return v;
}

void AttributeValue::wrong_type(Type wanted) const {
  throw AttributeTypeError(std::string("expected ") + type_tag(wanted) + ", found " + type_tag(type_));
}

const std::string& AttributeValue::as_string() const {
  if (type_ != Type::kString) wrong_type(Type::kString);
  return text_;
}

const std::string& AttributeValue::as_number_text() const {
  if (type_ != Type::kNumber) wrong_type(Type::kNumber);
  return text_;
}

int64_t AttributeValue::as_int() const {
  const std::string& t = as_number_text();
  int64_t out = 0;
  const char* begin = t.data() + (!t.empty() && t[0] == '+');
  auto [end, ec] = std::from_chars(begin, t.data() + t.size(), out);
  if (ec != std::errc() || end != t.data() + t.size()) {
    throw AttributeTypeError("number is not a 64-bit integer");
  }
  return out;
}

const std::string& AttributeValue::as_binary() const {
  if (type_ != Type::kBinary) wrong_type(Type::kBinary);
  return text_;
}

bool AttributeValue::as_bool() const {
  if (type_ != Type::kBool) wrong_type(Type::kBool);
  return bool_;
}

const std::vector<AttributeValue>& AttributeValue::as_list() const {
  if (type_ != Type::kList) wrong_type(Type::kList);
  return *list_;
}

const Item& AttributeValue::as_map() const {
  if (type_ != Type::kMap) wrong_type(Type::kMap);
  return *map_;
}

const std::vector<std::string>& AttributeValue::as_string_set() const {
  if (type_ != Type::kStringSet) wrong_type(Type::kStringSet);
  return set_;
}

const std::vector<std::string>& AttributeValue::as_number_set() const {
  if (type_ != Type::kNumberSet) wrong_type(Type::kNumberSet);
  return set_;
}

const std::vector<std::string>& AttributeValue::as_binary_set() const {
  if (type_ != Type::kBinarySet) wrong_type(Type::kBinarySet);
  return set_;
}

Json::Value AttributeValue::to_json() const {
  Json::Value out(Json::objectValue);
  const char* tag = type_tag(type_);
  switch (type_) {
    case Type::kString:
    case Type::kNumber:
      out[tag] = text_;
      break;
    case Type::kBinary:
      out[tag] = base64_encode(text_);
      break;
    case Type::kBool:
      out[tag] = bool_;
      break;
    case Type::kNull:
      out[tag] = true;
      break;
    case Type::kList: {
      Json::Value arr(Json::arrayValue);
      for (const auto& v : *list_) arr.append(v.to_json());
      out[tag] = std::move(arr);
      break;
    }
    case Type::kMap:
      out[tag] = item_to_json(*map_);
      break;
    case Type::kStringSet:
    case Type::kNumberSet:
    case Type::kBinarySet: {
      Json::Value arr(Json::arrayValue);
      for (const auto& m : set_) arr.append(type_ == Type::kBinarySet ? base64_encode(m) : m);
      out[tag] = std::move(arr);
      break;
    }
  }
  return out;
}

AttributeValue AttributeValue::from_json(const Json::Value& json, const std::string& what) {
  if (!json.isObject() || json.size() != 1) {
    throw JsonError(what + ": an attribute value must be an object with exactly one type key");
  }
  const std::string tag = json.begin().name();
  const Json::Value& v = *json.begin();
  auto bad = [&](const std::string& why) { return JsonError(what + ": " + tag + " " + why); };
  auto set_members = [&](bool numbers, bool binary) {
    if (!v.isArray() || v.empty()) throw bad("must be a non-empty array");
    std::vector<std::string> members;
    for (const auto& m : v) {
      if (!m.isString()) throw bad("members must be strings");
      if (numbers && !is_dynamodb_number(m.asString())) throw bad("member is not a valid number");
      if (binary) {
        auto bytes = base64_decode(m.asString());
        if (!bytes) throw bad("member is not valid base64");
        members.push_back(std::move(*bytes));
      } else {
        members.push_back(m.asString());
      }
    }
    return sorted_unique(std::move(members));
  };

  if (tag == "S") {
    if (!v.isString()) throw bad("must be a string");
    return string(v.asString());
  }
  if (tag == "N") {
    if (!v.isString() || !is_dynamodb_number(v.asString())) throw bad("must be a string holding a valid number");
    AttributeValue out(Type::kNumber);
    out.text_ = v.asString();
    return out;
  }
  if (tag == "B") {
    auto bytes = v.isString() ? base64_decode(v.asString()) : std::nullopt;
    if (!bytes) throw bad("must be a base64 string");
    return binary(std::move(*bytes));
  }
  if (tag == "BOOL") {
    if (!v.isBool()) throw bad("must be true or false");
    return boolean(v.asBool());
  }
  if (tag == "NULL") {
    if (!v.isBool() || !v.asBool()) throw bad("must be true");
    return null();
  }
  if (tag == "L") {
    if (!v.isArray()) throw bad("must be an array");
    std::vector<AttributeValue> items;
    items.reserve(v.size());
    for (Json::ArrayIndex i = 0; i < v.size(); ++i)
      items.push_back(from_json(v[i], what + "[" + std::to_string(i) + "]"));
    return list(std::move(items));
  }
  if (tag == "M") return map(item_from_json(v, what));
  if (tag == "SS" || tag == "NS" || tag == "BS") {
    AttributeValue out(tag == "SS" ? Type::kStringSet : tag == "NS" ? Type::kNumberSet : Type::kBinarySet);
    out.set_ = set_members(tag == "NS", tag == "BS");
    return out;
  }
  throw JsonError(what + ": unknown attribute type '" + tag.substr(0, 20) + "'");
}

bool AttributeValue::operator==(const AttributeValue& o) const {
  if (type_ != o.type_) return false;
  switch (type_) {
    case Type::kString:
    case Type::kNumber:
    case Type::kBinary:
      return text_ == o.text_;
    case Type::kBool:
      return bool_ == o.bool_;
    case Type::kNull:
      return true;
    case Type::kList:
      return *list_ == *o.list_;
    case Type::kMap:
      return *map_ == *o.map_;
    default:
      return set_ == o.set_;
  }
}

Json::Value item_to_json(const Item& item) {
  Json::Value out(Json::objectValue);
  for (const auto& [name, value] : item) out[name] = value.to_json();
  return out;
}

Item item_from_json(const Json::Value& json, const std::string& what) {
  if (!json.isObject()) throw JsonError(what + ": an item must be a JSON object");
  Item item;
  for (auto it = json.begin(); it != json.end(); ++it) {
    item.emplace(it.name(), AttributeValue::from_json(*it, what + ": attribute '" + it.name() + "'"));
  }
  return item;
}

const AttributeValue* find_attribute(const Item& item, const std::string& name) {
  auto it = item.find(name);
  return it == item.end() ? nullptr : &it->second;
}

const AttributeValue& get_attribute(const Item& item, const std::string& name) {
  const AttributeValue* v = find_attribute(item, name);
  if (!v) throw AttributeTypeError("attribute '" + name + "' missing");
  return *v;
}

namespace {

// Runs a typed read and names the attribute in any type error.
template <typename F>
auto read_named(const std::string& name, F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const AttributeTypeError& e) {
    throw AttributeTypeError("attribute '" + name + "': " + e.what());
  }
}

}  // namespace

const std::string& get_string(const Item& item, const std::string& name) {
  const AttributeValue& v = get_attribute(item, name);
  return read_named(name, [&]() -> const std::string& { return v.as_string(); });
}

int64_t get_int(const Item& item, const std::string& name) {
  const AttributeValue& v = get_attribute(item, name);
  return read_named(name, [&] { return v.as_int(); });
}

bool get_bool(const Item& item, const std::string& name) {
  const AttributeValue& v = get_attribute(item, name);
  return read_named(name, [&] { return v.as_bool(); });
}

const Item& get_map(const Item& item, const std::string& name) {
  const AttributeValue& v = get_attribute(item, name);
  return read_named(name, [&]() -> const Item& { return v.as_map(); });
}

std::optional<std::string> find_string(const Item& item, const std::string& name) {
  const AttributeValue* v = find_attribute(item, name);
  if (!v || v->is_null()) return std::nullopt;
  return read_named(name, [&] { return v->as_string(); });
}

std::optional<int64_t> find_int(const Item& item, const std::string& name) {
  const AttributeValue* v = find_attribute(item, name);
  if (!v || v->is_null()) return std::nullopt;
  return read_named(name, [&] { return v->as_int(); });
}

std::optional<bool> find_bool(const Item& item, const std::string& name) {
  const AttributeValue* v = find_attribute(item, name);
  if (!v || v->is_null()) return std::nullopt;
  return read_named(name, [&] { return v->as_bool(); });
}

}  // namespace runpool::aws
