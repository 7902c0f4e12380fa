#include "common/pool/pool_message.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

TEST(PoolMessageBody, RoundTrips) {
  PoolMessage m{"i-0123456789abcdef0", 42};
  std::string body = pool_message_body(m);
  EXPECT_EQ(body, R"({"generation":42,"instance_id":"i-0123456789abcdef0"})");
  auto parsed = parse_pool_message(body);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->instance_id, m.instance_id);
  EXPECT_EQ(parsed->generation, 42);
}

TEST(PoolMessageBody, ExtraMembersAreIgnored) {
  auto parsed = parse_pool_message(R"({"instance_id":"i-0123abcd","generation":3,"v":2})");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->generation, 3);
}

TEST(PoolMessageBody, MalformedBodiesAreRefusedWithAReason) {
  for (const std::string body : {
           "", "null", "[]", "42", "\"i-0123abcd\"", "{", "{}", R"({"instance_id":"i-0123abcd"})",
           R"({"generation":3})", R"({"instance_id":7,"generation":3})", R"({"instance_id":"i-XYZ","generation":3})",
           R"({"instance_id":"i-0123abcd; rm -rf /","generation":3})", R"({"instance_id":"i-0123abcd","generation":"3"})",
           R"({"instance_id":"i-0123abcd","generation":0})", R"({"instance_id":"i-0123abcd","generation":-3})",
           R"({"instance_id":"i-0123abcd","generation":1.5})", R"({"instance_id":"i-0123abcd","generation":true})",
           R"({"instance_id":"i-0123abcd","generation":18446744073709551616})",
           R"({"instance_id":"i-0123abcd","generation":3} trailing)", R"({"instance_id":null,"generation":3})"}) {
    std::string error;
    EXPECT_FALSE(parse_pool_message(body, &error)) << body;
    EXPECT_FALSE(error.empty()) << body;
  }
}

}  // namespace
}  // namespace runpool::pool
