#include "common/github/json_fields.h"

#include <gtest/gtest.h>

#include "common/json.h"

namespace runpool::github {
namespace {

WallTime at(int64_t secs) { return WallTime{std::chrono::seconds(secs)}; }

TEST(GithubTime, ZuluOffsetsAndFractions) {
  WallTime t;
  ASSERT_TRUE(parse_github_time("2020-01-22T20:13:35Z", &t));
  EXPECT_EQ(t, at(1579724015));
  ASSERT_TRUE(parse_github_time("2020-01-22T12:13:35.123-08:00", &t));  // GitHub's documented example
  EXPECT_EQ(t, at(1579724015));
  ASSERT_TRUE(parse_github_time("2020-01-23T01:43:35+05:30", &t));
  EXPECT_EQ(t, at(1579724015));
  ASSERT_TRUE(parse_github_time("2020-01-22T20:13:35+0000", &t));
  EXPECT_EQ(t, at(1579724015));
  for (const char* bad : {"", "2020-01-22", "2020-01-22T20:13:35", "2020-01-22T20:13:35+8", "2020-01-22T20:13:35+25:00",
                          "2020-01-22T20:13:35-08:0x", "yesterday", "2020-01-22T20:13:35Zjunk"}) {
    EXPECT_FALSE(parse_github_time(bad, &t)) << bad;
  }
}

TEST(JsonFields, BooleansAndTimesReportTheFieldNotTheValue) {
  Json::Value v = parse_json(R"({"busy":true,"n":1,"when":"2020-01-22T20:13:35Z","bad":"ghs_secretvalue"})", "t");
  EXPECT_TRUE(require_bool(v, "busy", "t"));
  EXPECT_THROW(require_bool(v, "n", "t"), JsonError);
  EXPECT_THROW(require_bool(v, "missing", "t"), JsonError);
  EXPECT_TRUE(optional_bool(v, "missing", true, "t"));
  EXPECT_THROW(optional_bool(v, "n", false, "t"), JsonError);
  EXPECT_EQ(require_time(v, "when", "t"), at(1579724015));
  try {
    require_time(v, "bad", "t");
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_EQ(std::string(e.what()).find("ghs_secretvalue"), std::string::npos);
  }
}

}  // namespace
}  // namespace runpool::github
