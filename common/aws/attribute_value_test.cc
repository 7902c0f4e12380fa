#include "common/aws/attribute_value.h"

#include <gtest/gtest.h>

#include <climits>

#include "common/json.h"

namespace runpool::aws {
namespace {

using Type = AttributeValue::Type;

AttributeValue parse(const std::string& text) { return AttributeValue::from_json(parse_json(text, "test"), "value"); }

std::string wire(const AttributeValue& v) { return write_json(v.to_json()); }

TEST(AttributeValue, ScalarsOnTheWire) {
  EXPECT_EQ(wire(AttributeValue::string("idle")), R"({"S":"idle"})");
  EXPECT_EQ(wire(AttributeValue::number(-42)), R"({"N":"-42"})");
  EXPECT_EQ(wire(AttributeValue::number_text("3.25")), R"({"N":"3.25"})");
  EXPECT_EQ(wire(AttributeValue::boolean(false)), R"({"BOOL":false})");
  EXPECT_EQ(wire(AttributeValue::null()), R"({"NULL":true})");
  EXPECT_EQ(wire(AttributeValue()), R"({"NULL":true})");
}

TEST(AttributeValue, BinaryIsBase64OnTheWireOnly) {
  // RFC 4648 test vectors, and bytes that are not text.
  const std::pair<std::string, std::string> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"foobar", "Zm9vYmFy"},
                                                         {std::string("\x00\xff\x10", 3), "AP8Q"}};
  for (const auto& [bytes, b64] : vectors) {
    AttributeValue v = AttributeValue::binary(bytes);
    EXPECT_EQ(v.to_json()["B"].asString(), b64);
    AttributeValue back = parse(R"({"B":")" + b64 + R"("})");
    EXPECT_EQ(back.as_binary(), bytes);
    EXPECT_EQ(back, v);
  }
}

TEST(AttributeValue, NestedRoundTrip) {
  AttributeValue v = AttributeValue::map({
      {"state", AttributeValue::string("claimed")},
      {"gen", AttributeValue::number(7)},
      {"tags", AttributeValue::string_set({"b", "a", "b"})},
      {"ports", AttributeValue::number_set({443, 80})},
      {"blobs", AttributeValue::binary_set({"x", "y"})},
      {"history", AttributeValue::list({AttributeValue::boolean(true), AttributeValue::null(),
                                        AttributeValue::map({{"k", AttributeValue::string("v")}})})},
  });
  AttributeValue back = AttributeValue::from_json(parse_json(wire(v), "test"), "value");
  EXPECT_EQ(back, v);
  EXPECT_EQ(back.type(), Type::kMap);
  const Item& m = back.as_map();
  EXPECT_EQ(get_string(m, "state"), "claimed");
  EXPECT_EQ(get_int(m, "gen"), 7);
  EXPECT_EQ(m.at("tags").as_string_set(), (std::vector<std::string>{"a", "b"}));  // sorted, no duplicates
  EXPECT_EQ(m.at("ports").as_number_set(), (std::vector<std::string>{"443", "80"}));
  EXPECT_EQ(m.at("history").as_list().size(), 3u);
  EXPECT_EQ(get_string(m.at("history").as_list()[2].as_map(), "k"), "v");
  EXPECT_EQ(parse(R"({"SS":["b","a"]})"), AttributeValue::string_set({"a", "b"}));
}

TEST(AttributeValue, ItemRoundTrip) {
  Item item{{"id", AttributeValue::string("i-1")}, {"n", AttributeValue::number(INT64_MIN)}};
  Json::Value json = item_to_json(item);
  EXPECT_EQ(write_json(json), R"({"id":{"S":"i-1"},"n":{"N":"-9223372036854775808"}})");
  Item back = item_from_json(json, "item");
  EXPECT_EQ(back, item);
  EXPECT_EQ(get_int(back, "n"), INT64_MIN);
}

TEST(AttributeValue, NumbersKeepTheirTextAndConvertOnlyWhenIntegral) {
  EXPECT_EQ(parse(R"({"N":"12345678901234567890123456789012345678"})").as_number_text(),
            "12345678901234567890123456789012345678");
  EXPECT_THROW(parse(R"({"N":"12345678901234567890"})").as_int(), AttributeTypeError);  // > int64
  EXPECT_THROW(parse(R"({"N":"1.5"})").as_int(), AttributeTypeError);
  EXPECT_EQ(parse(R"({"N":"+5"})").as_int(), 5);
  EXPECT_EQ(parse(R"({"N":"9223372036854775807"})").as_int(), INT64_MAX);
  for (const char* ok : {"0", "-1", "1.", ".5", "1e10", "-2.5E-3", "1E+2"}) EXPECT_TRUE(is_dynamodb_number(ok)) << ok;
  for (const char* bad : {"", "abc", "1..2", "--1", "1e", "0x10", " 1", "NaN", "Infinity", "1,5"}) {
    EXPECT_FALSE(is_dynamodb_number(bad)) << bad;
  }
  EXPECT_THROW(AttributeValue::number_text("abc"), std::invalid_argument);
  EXPECT_THROW(AttributeValue::number_set_text({"1", "x"}), std::invalid_argument);
}

TEST(AttributeValue, EmptySetsDoNotExist) {
  EXPECT_THROW(AttributeValue::string_set({}), std::invalid_argument);
  EXPECT_THROW(AttributeValue::number_set({}), std::invalid_argument);
  EXPECT_THROW(AttributeValue::binary_set({}), std::invalid_argument);
}

TEST(AttributeValue, MalformedWireValuesAreRejectedClearly) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"N":"abc"})", "valid number"},
      {R"({"N":5})", "valid number"},
      {R"({"S":"x","N":"1"})", "exactly one type key"},
      {R"({})", "exactly one type key"},
      {R"("x")", "exactly one type key"},
      {R"(["S","x"])", "exactly one type key"},
      {R"(null)", "exactly one type key"},
      {R"({"X":"1"})", "unknown attribute type 'X'"},
      {R"({"s":"x"})", "unknown attribute type 's'"},
      {R"({"S":1})", "S must be a string"},
      {R"({"B":"!!!!"})", "base64"},
      {R"({"B":"Zg="})", "base64"},
      {R"({"B":"Zg=a"})", "base64"},
      {R"({"B":"Zg==Zg=="})", "base64"},
      {R"({"BOOL":"true"})", "true or false"},
      {R"({"NULL":false})", "must be true"},
      {R"({"L":{}})", "must be an array"},
      {R"({"L":[{"S":"ok"},{"N":"x"}]})", "value[1]"},
      {R"({"M":[]})", "must be a JSON object"},
      {R"({"M":{"inner":{"BOOL":1}}})", "attribute 'inner'"},
      {R"({"SS":[]})", "non-empty array"},
      {R"({"SS":"a"})", "non-empty array"},
      {R"({"SS":["a",1]})", "strings"},
      {R"({"NS":["1","x"]})", "valid number"},
      {R"({"BS":["@@@@"]})", "base64"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      parse(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const JsonError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << text << " -> " << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("value", 0), 0u) << e.what();  // names what was parsed
    }
  }
}

TEST(AttributeValue, ErrorsNeverEchoTheValue) {
  // Items can hold registration credentials: a bad value must not end up in a message or log.
  for (const char* text : {R"({"N":"ghs_secret"})", R"({"B":"ghs_secret"})", R"({"NS":["ghs_secret"]})"}) {
    try {
      parse(text);
      ADD_FAILURE() << text;
    } catch (const JsonError& e) {
      EXPECT_EQ(std::string(e.what()).find("ghs_secret"), std::string::npos) << e.what();
    }
  }
}

TEST(AttributeValue, TypedGettersNameTheAttribute) {
  Item item{{"state", AttributeValue::string("idle")},
            {"gen", AttributeValue::number(3)},
            {"busy", AttributeValue::boolean(true)},
            {"runner", AttributeValue::null()},
            {"meta", AttributeValue::map({})}};
  EXPECT_EQ(get_string(item, "state"), "idle");
  EXPECT_EQ(get_int(item, "gen"), 3);
  EXPECT_TRUE(get_bool(item, "busy"));
  EXPECT_TRUE(get_map(item, "meta").empty());
  try {
    get_int(item, "state");
    ADD_FAILURE();
  } catch (const AttributeTypeError& e) {
    EXPECT_STREQ(e.what(), "attribute 'state': expected N, found S");
  }
  try {
    get_string(item, "deadline");
    ADD_FAILURE();
  } catch (const AttributeTypeError& e) {
    EXPECT_STREQ(e.what(), "attribute 'deadline' missing");
  }
  EXPECT_THROW(get_string(item, "runner"), AttributeTypeError);  // NULL is not a string
  EXPECT_THROW(get_bool(item, "gen"), AttributeTypeError);
  EXPECT_THROW(get_map(item, "gen"), AttributeTypeError);

  EXPECT_EQ(find_string(item, "state"), "idle");
  EXPECT_EQ(find_string(item, "absent"), std::nullopt);
  EXPECT_EQ(find_string(item, "runner"), std::nullopt);  // NULL reads as absent
  EXPECT_EQ(find_int(item, "gen"), 3);
  EXPECT_EQ(find_bool(item, "busy"), true);
  EXPECT_EQ(find_attribute(item, "absent"), nullptr);
  try {
    find_int(item, "busy");
    ADD_FAILURE();
  } catch (const AttributeTypeError& e) {
    EXPECT_STREQ(e.what(), "attribute 'busy': expected N, found BOOL");
  }
}

TEST(AttributeValue, ValueLevelGettersCheckTheType) {
  AttributeValue s = AttributeValue::string("x");
  EXPECT_THROW(s.as_number_text(), AttributeTypeError);
  EXPECT_THROW(s.as_binary(), AttributeTypeError);
  EXPECT_THROW(s.as_list(), AttributeTypeError);
  EXPECT_THROW(s.as_map(), AttributeTypeError);
  EXPECT_THROW(s.as_string_set(), AttributeTypeError);
  EXPECT_THROW(s.as_number_set(), AttributeTypeError);
  EXPECT_THROW(s.as_binary_set(), AttributeTypeError);
  EXPECT_THROW(AttributeValue::number(1).as_string(), AttributeTypeError);
  EXPECT_NE(AttributeValue::string("1"), AttributeValue::number(1));
  EXPECT_NE(AttributeValue::list({}), AttributeValue::map({}));
  EXPECT_EQ(AttributeValue::list({}), AttributeValue::list({}));
}

}  // namespace
}  // namespace runpool::aws
