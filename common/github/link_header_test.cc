#include "common/github/link_header.h"

#include <gtest/gtest.h>

namespace runpool::github {
namespace {

TEST(LinkHeader, GithubsOwnShape) {
  std::string h =
      "<https://api.github.com/repositories/1/actions/runners?per_page=100&page=2>; rel=\"next\", "
      "<https://api.github.com/repositories/1/actions/runners?per_page=100&page=5>; rel=\"last\"";
  EXPECT_EQ(next_link(h), "https://api.github.com/repositories/1/actions/runners?per_page=100&page=2");
  EXPECT_EQ(find_link(h, "last"), "https://api.github.com/repositories/1/actions/runners?per_page=100&page=5");
  EXPECT_EQ(find_link(h, "prev"), std::nullopt);
  auto entries = parse_link_header(h);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].rels, std::vector<std::string>{"last"});
}

TEST(LinkHeader, LastPageHasNoNext) {
  std::string h = "<https://x/r?page=1>; rel=\"prev\", <https://x/r?page=1>; rel=\"first\"";
  EXPECT_EQ(next_link(h), std::nullopt);
}

TEST(LinkHeader, EmptyAndGarbageGiveNothing) {
  for (const char* h : {"", "   ", ",,,", "garbage", "rel=\"next\"", "<unterminated; rel=\"next\"", "<>; rel=next",
                        "\"<https://x>; rel=next\"", ";;;", "<", ">", "\"", "<a>;", "<a>; rel", "<a>; rel="}) {
    EXPECT_EQ(next_link(h), std::nullopt) << h;
  }
}

TEST(LinkHeader, OddSpacingCaseAndUnquotedRel) {
  EXPECT_EQ(next_link("  < https://x/a?page=2 >  ;  REL = next  "), "https://x/a?page=2");
  EXPECT_EQ(next_link("<https://x/a?page=2>;rel=NEXT"), "https://x/a?page=2");
  EXPECT_EQ(next_link("<https://x/a?page=2>\t;\trel=\"Next\""), "https://x/a?page=2");
}

TEST(LinkHeader, MultipleRelsAndOtherParameters) {
  std::string h = "<https://x/a?page=3>; title=\"a, b; c\"; rel=\"last next\"; type=\"text/html\"";
  EXPECT_EQ(next_link(h), "https://x/a?page=3");
  EXPECT_EQ(find_link(h, "last"), "https://x/a?page=3");
  // Only the first rel parameter counts.
  EXPECT_EQ(next_link("<https://x/1>; rel=\"prev\"; rel=\"next\""), std::nullopt);
}

TEST(LinkHeader, CommasInsideUrlsDoNotSplitEntries) {
  std::string h = "<https://x/a?labels=a,b&page=2>; rel=\"next\", <https://x/a?labels=a,b&page=9>; rel=\"last\"";
  EXPECT_EQ(next_link(h), "https://x/a?labels=a,b&page=2");
  EXPECT_EQ(find_link(h, "last"), "https://x/a?labels=a,b&page=9");
}

TEST(LinkHeader, GarbageBetweenEntriesIsSkipped) {
  std::string h = "junk, <https://x/1>; rel=\"prev\" trailing junk, <https://x/2>; rel=\"next\"";
  EXPECT_EQ(next_link(h), "https://x/2");
  EXPECT_EQ(find_link(h, "prev"), "https://x/1");  // what was read before the junk is kept
}

TEST(LinkHeader, EscapedQuotesAndUnterminatedQuotes) {
  EXPECT_EQ(next_link("<https://x/1>; title=\"say \\\"hi\\\"\"; rel=next"), "https://x/1");
  EXPECT_EQ(next_link("<https://x/1>; rel=\"next"), "https://x/1");  // unterminated: runs to the end
}

TEST(LinkHeader, RepeatedHeadersJoinedWithCommas) {
  // HttpResponse joins repeated Link headers with ", ".
  EXPECT_EQ(next_link("<https://x/1>; rel=\"first\", <https://x/3>; rel=\"next\""), "https://x/3");
}

TEST(LinkHeader, FirstMatchingEntryWins) {
  EXPECT_EQ(next_link("<https://x/2>; rel=next, <https://x/3>; rel=next"), "https://x/2");
}

}  // namespace
}  // namespace runpool::github
