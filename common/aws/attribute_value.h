// DynamoDB's typed values, so callers never build its JSON by hand. An AttributeValue is immutable
// and cheap to copy (lists and maps are shared). Numbers keep DynamoDB's decimal text — it has 38
// digits of precision, more than any C++ type — with int64 helpers for the common case.
#pragma once

#include <json/json.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace runpool::aws {

class AttributeValue;
using Item = std::map<std::string, AttributeValue>;

// A value read as the wrong type, or a required attribute that is missing. Thrown by the typed
// getters; the message names the attribute when the getter knows it.
class AttributeTypeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class AttributeValue {
 public:
  // The wire tags: S, N, B, BOOL, NULL, L, M, SS, NS, BS.
  enum class Type { kString, kNumber, kBinary, kBool, kNull, kList, kMap, kStringSet, kNumberSet, kBinarySet };

  AttributeValue();  // NULL

  static AttributeValue string(std::string s);
  static AttributeValue number(int64_t n);
  // A number from its decimal text ("12", "-3.5", "1E+3"); std::invalid_argument when not a number.
  static AttributeValue number_text(const std::string& decimal);
  static AttributeValue binary(std::string bytes);  // raw bytes; base64 only on the wire
  static AttributeValue boolean(bool b);
  static AttributeValue null();
  static AttributeValue list(std::vector<AttributeValue> items);
  static AttributeValue map(Item entries);
  // Sets are stored sorted without duplicates; DynamoDB has no empty sets (std::invalid_argument).
  static AttributeValue string_set(std::vector<std::string> members);
  static AttributeValue number_set(const std::vector<int64_t>& members);
  static AttributeValue number_set_text(const std::vector<std::string>& members);
  static AttributeValue binary_set(std::vector<std::string> members);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }

  // Typed reads: AttributeTypeError ("expected N, found S") on another type.
  const std::string& as_string() const;
  const std::string& as_number_text() const;
  int64_t as_int() const;  // also AttributeTypeError when the number is not an int64
  const std::string& as_binary() const;
  bool as_bool() const;
  const std::vector<AttributeValue>& as_list() const;
  const Item& as_map() const;
  const std::vector<std::string>& as_string_set() const;
  const std::vector<std::string>& as_number_set() const;  // decimal texts
  const std::vector<std::string>& as_binary_set() const;

  // {"S":"x"}, {"N":"1"}, {"M":{…}}, …
  Json::Value to_json() const;
  // Strict: exactly one known type key with a value of the right shape; throws JsonError naming
  // `what` otherwise ({"N":"abc"}, two keys, an unknown tag, bad base64, an empty set…).
  static AttributeValue from_json(const Json::Value& json, const std::string& what);

  bool operator==(const AttributeValue& other) const;
  bool operator!=(const AttributeValue& other) const { return !(*this == other); }

 private:
  explicit AttributeValue(Type type) : type_(type) {}
  [[noreturn]] void wrong_type(Type wanted) const;

  Type type_;
  bool bool_ = false;
  std::string text_;              // S, N (decimal text), B (raw bytes)
  std::vector<std::string> set_;  // SS, NS, BS
  std::shared_ptr<const std::vector<AttributeValue>> list_;
  std::shared_ptr<const Item> map_;
};

// "S", "N", "BOOL", … for messages.
const char* type_tag(AttributeValue::Type type);
// True when `text` is a number DynamoDB accepts (decimal, optional sign, fraction and exponent).
bool is_dynamodb_number(const std::string& text);

Json::Value item_to_json(const Item& item);
// An item ({"name": {"S": …}, …}); JsonError naming `what` and the attribute on bad input.
Item item_from_json(const Json::Value& json, const std::string& what);

// Typed access to an item's attributes. The get_* forms throw AttributeTypeError naming the
// attribute when it is missing or of another type; the find_* forms return nullopt when it is
// missing (or NULL) and throw only when it has another type.
const AttributeValue& get_attribute(const Item& item, const std::string& name);
const std::string& get_string(const Item& item, const std::string& name);
int64_t get_int(const Item& item, const std::string& name);
bool get_bool(const Item& item, const std::string& name);
const Item& get_map(const Item& item, const std::string& name);
const AttributeValue* find_attribute(const Item& item, const std::string& name);
std::optional<std::string> find_string(const Item& item, const std::string& name);
std::optional<int64_t> find_int(const Item& item, const std::string& name);
std::optional<bool> find_bool(const Item& item, const std::string& name);

}  // namespace runpool::aws
