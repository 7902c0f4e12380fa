#include "agent/tenant_users.h"

#include <gtest/gtest.h>

namespace runpool::agent {
namespace {

TEST(TenantUsers, ParsesUidRanges) {
  auto r = parse_uid_range("1000000000-1099999999");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 1000000000u);
  EXPECT_EQ(r->last, 1099999999u);
  EXPECT_TRUE(r->contains(1000000000));
  EXPECT_FALSE(r->contains(1100000000));
  for (const char* bad : {"", "5", "0-10", "10-5", "1-2147483647", "a-b", "1-", "-5", " 1-5", "1-5 "}) {
    EXPECT_FALSE(parse_uid_range(bad)) << bad;
  }
  EXPECT_TRUE(parse_uid_range("7-7"));
}

TEST(TenantUsers, StateRoundTripsAndRefusesWhatItCannotRead) {
  TenantState st{1000000005, 1000000004};
  auto back = parse_tenant_state(format_tenant_state(st));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->next, 1000000005u);
  EXPECT_EQ(back->current, std::optional<uid_t>(1000000004));
  auto none = parse_tenant_state("next 9\n");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->current);
  EXPECT_EQ(parse_tenant_state("")->next, 0u);
  EXPECT_TRUE(parse_tenant_state("comment line\nother 5\n"));
  EXPECT_FALSE(parse_tenant_state("next x\n"));
  EXPECT_FALSE(parse_tenant_state("current -1\n"));
  EXPECT_FALSE(parse_tenant_state("current 0\n"));
}

TEST(TenantUsers, HandsOutEachUidOnceSkippingTakenOnes) {
  UidRange range{100, 104};
  auto none_taken = [](uid_t) { return false; };
  EXPECT_EQ(next_tenant_uid({0, {}}, range, none_taken), std::optional<uid_t>(100));
  EXPECT_EQ(next_tenant_uid({102, {}}, range, none_taken), std::optional<uid_t>(102));
  EXPECT_EQ(next_tenant_uid({102, {}}, range, [](uid_t u) { return u == 102 || u == 103; }), std::optional<uid_t>(104));
  EXPECT_FALSE(next_tenant_uid({105, {}}, range, none_taken));  // used up: never wraps around
  EXPECT_FALSE(next_tenant_uid({100, {}}, range, [](uid_t) { return true; }));
}

TEST(TenantUsers, NamesAreValidUserNames) {
  EXPECT_EQ(tenant_name(1000000042), "runpool-j1000000042");
  EXPECT_LE(tenant_name(2147483646).size(), 32u);
}

}  // namespace
}  // namespace runpool::agent
