#include "common/pool/record_key.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

constexpr const char* kRole = "AROA3XFRBF535PLBIFPI4";

TEST(RecordKey, IsWhatAwsGivesAsTheCallersUserId) {
  // aws:userid of a request signed with an instance role's credentials: "<role id>:<instance id>".
  EXPECT_EQ(record_key(kRole, "i-0123456789abcdef0"), "AROA3XFRBF535PLBIFPI4:i-0123456789abcdef0");
}

TEST(RecordKey, RefusesPartsIamCouldNeverMatch) {
  EXPECT_THROW(record_key("", "i-0123456789abcdef0"), std::invalid_argument);
  EXPECT_THROW(record_key("AIDA3XFRBF535PLBIFPI4", "i-0123456789abcdef0"), std::invalid_argument);  // a user's id
  EXPECT_THROW(record_key("aroa3xfrbf535plbifpi4", "i-0123456789abcdef0"), std::invalid_argument);
  EXPECT_THROW(record_key("AROA3XFR:BF535PLBIFPI4", "i-0123456789abcdef0"), std::invalid_argument);
  EXPECT_THROW(record_key("AROASHORT", "i-0123456789abcdef0"), std::invalid_argument);
  EXPECT_THROW(record_key(kRole, ""), std::invalid_argument);
  EXPECT_THROW(record_key(kRole, "i-0123:x"), std::invalid_argument);
  EXPECT_THROW(record_key(kRole, "arn:aws:ec2:us-east-1:1:instance/i-1"), std::invalid_argument);
}

TEST(RecordKey, ParsesBothTheRoleBoundAndTheBareForm) {
  auto k = parse_record_key("AROA3XFRBF535PLBIFPI4:i-0123456789abcdef0");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->instance_role_id, kRole);
  EXPECT_EQ(k->instance_id, "i-0123456789abcdef0");
  auto bare = parse_record_key("i-0123456789abcdef0");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->instance_role_id, "");
  EXPECT_EQ(bare->instance_id, "i-0123456789abcdef0");
}

TEST(RecordKey, ParseRefusesAnythingElse) {
  for (const char* bad : {"", ":", "AROA3XFRBF535PLBIFPI4:", ":i-0123456789abcdef0", "x:i-0123456789abcdef0",
                          "AROA3XFRBF535PLBIFPI4:i-1:i-2", "AROA3XFRBF535PLBIFPI4:j-1", "i-", "i-\n1",
                          "AROA3XFRBF535PLBIFPI4:i-0123456789abcdef0 "}) {
    EXPECT_FALSE(parse_record_key(bad)) << bad;
  }
}

TEST(RecordKey, RoundTrips) {
  for (const char* id : {"i-0123456789abcdef0", "i-12345678", "i-test1"}) {
    auto k = parse_record_key(record_key(kRole, id));
    ASSERT_TRUE(k) << id;
    EXPECT_EQ(k->instance_id, id);
    EXPECT_EQ(k->instance_role_id, kRole);
  }
}

}  // namespace
}  // namespace runpool::pool
