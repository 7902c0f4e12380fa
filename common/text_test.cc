#include "common/text.h"

#include <gtest/gtest.h>

namespace runpool::text {
namespace {

TEST(Text, LowerTurnsOnlyAsciiCapitals) {
  EXPECT_EQ(lower("Content-Type"), "content-type");
  EXPECT_EQ(lower("ABC-xyz_09"), "abc-xyz_09");
  EXPECT_EQ(lower(""), "");
  EXPECT_EQ(lower("\xC3\x89T\xC3\x89"), "\xC3\x89t\xC3\x89");  // UTF-8 bytes kept as they are
}

TEST(Text, TrimTakesOnlyTheGivenCharactersFromBothEnds) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim("\v\fx\f\v"), "x");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("\r\n key \r", " \t\r"), "\n key");
  EXPECT_EQ(trim("--x--", "-"), "x");
  EXPECT_EQ(trim("x"), "x");
}

TEST(Text, ExcerptCutsAndBlanksControlCharacters) {
  EXPECT_EQ(excerpt("short", 10), "short");
  EXPECT_EQ(excerpt("0123456789abc", 10), "0123456789…");
  EXPECT_EQ(excerpt("a\nb\tc\x01", 10), "a b c ");
}

TEST(Text, ParseIntTakesOnlyAWholeInt64) {
  EXPECT_EQ(parse_int("0"), 0);
  EXPECT_EQ(parse_int("-42"), -42);
  EXPECT_EQ(parse_int("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(parse_int("-9223372036854775808"), INT64_MIN);
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "1x", "0x10", "9223372036854775808", "99999999999999999999", "1.0"}) {
    EXPECT_EQ(parse_int(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace runpool::text
