#include "common/json.h"

#include <gtest/gtest.h>

namespace runpool {
namespace {

TEST(Json, ParsesAndWritesCompactly) {
  Json::Value v = parse_json(R"({"a": [1, 2], "b": "x"})", "test");
  EXPECT_EQ(write_json(v), R"({"a":[1,2],"b":"x"})");
}

TEST(Json, MalformedInputNamesTheSource) {
  for (const char* bad : {"", "{", "{\"a\":}", "[1,2", "{\"a\":1} trailing", "\x01\x02"}) {
    try {
      parse_json(bad, "GetItem response");
      FAIL() << "accepted: " << bad;
    } catch (const JsonError& e) {
      EXPECT_NE(std::string(e.what()).find("GetItem response: malformed JSON"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(try_parse_json("{").has_value());
}

// Found by the fuzzers: jsoncpp throws its own exception past 1,000 levels of nesting. Deep
// documents are malformed JSON like any other (a pool message of 1,000 '[' is dropped, not fatal).
TEST(Json, DeepNestingIsMalformedNotAnException) {
  for (const std::string& deep : {std::string(1100, '['), std::string(1100, '[') + std::string(1100, ']'),
                                  std::string(5000, '{')}) {
    EXPECT_FALSE(try_parse_json(deep).has_value());
    EXPECT_THROW(parse_json(deep, "deep"), JsonError);
  }
  EXPECT_TRUE(try_parse_json(std::string(100, '[') + std::string(100, ']')).has_value());
}

TEST(Json, TypedAccessReportsMissingAndWrongTypes) {
  Json::Value v = parse_json(R"({"s": "x", "n": 5, "f": 1.5, "null": null})", "doc");
  EXPECT_EQ(require_string(v, "s", "doc"), "x");
  EXPECT_EQ(require_int(v, "n", "doc"), 5);
  EXPECT_THROW(require_string(v, "n", "doc"), JsonError);
  EXPECT_THROW(require_int(v, "f", "doc"), JsonError);
  EXPECT_THROW(require_string(v, "missing", "doc"), JsonError);
  EXPECT_THROW(require_string(Json::Value("scalar"), "s", "doc"), JsonError);
  EXPECT_FALSE(optional_string(v, "missing", "doc"));
  EXPECT_FALSE(optional_string(v, "null", "doc"));
  EXPECT_THROW(optional_int(v, "s", "doc"), JsonError);
  EXPECT_EQ(*optional_int(v, "n", "doc"), 5);
  Json::Value huge = parse_json(R"({"big": 18446744073709551615})", "doc");
  EXPECT_THROW(require_int(huge, "big", "doc"), JsonError);
  EXPECT_THROW(optional_int(huge, "big", "doc"), JsonError);
}

}  // namespace
}  // namespace runpool
