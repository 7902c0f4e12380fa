#include "common/pool/sealed_field.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

TEST(SealedField, OpensForItsFieldAndGenerationOnly) {
  const SealKeys keys = make_seal_keys();
  const Secret sealed = seal_field(keys.public_key, 4, "reg_token", Secret("AABBCC"));
  EXPECT_TRUE(is_sealed(sealed));
  EXPECT_EQ(sealed.reveal().find("AABBCC"), std::string::npos);

  struct Case {
    int64_t generation;
    const char* field;
    bool opens;
  };
  for (const Case& c : {Case{4, "reg_token", true}, Case{5, "reg_token", false}, Case{3, "reg_token", false},
                        Case{4, "jit_config", false}, Case{4, "remove_token", false}, Case{44, "reg_token", false}}) {
    OpenedField o = open_field(keys, c.generation, c.field, sealed);
    EXPECT_EQ(o.value.has_value(), c.opens) << c.generation << " " << c.field << ": " << o.error;
    if (c.opens) {
      EXPECT_EQ(o.value->reveal(), "AABBCC");
    } else {
      EXPECT_EQ(o.error, "sealed for another assignment or field");
    }
  }
}

TEST(SealedField, EachSealIsFresh) {
  const SealKeys keys = make_seal_keys();
  EXPECT_NE(seal_field(keys.public_key, 1, "jit_config", Secret("x")),
            seal_field(keys.public_key, 1, "jit_config", Secret("x")));
}

TEST(SealedField, AnotherKeyOrAnAlteredBoxDoesNotOpen) {
  const SealKeys keys = make_seal_keys();
  const SealKeys other = make_seal_keys();
  const Secret sealed = seal_field(keys.public_key, 2, "remove_token", Secret("tok"));
  EXPECT_EQ(open_field(other, 2, "remove_token", sealed).error, "sealed to another key, or altered");

  std::string altered = sealed.reveal();
  char& c = altered[kSealedPrefix.size() + 10];
  c = c == 'A' ? 'B' : 'A';
  EXPECT_EQ(open_field(keys, 2, "remove_token", Secret(altered)).error, "sealed to another key, or altered");

  EXPECT_EQ(open_field(keys, 2, "remove_token", Secret("tok")).error, "not sealed");
  EXPECT_EQ(open_field(keys, 2, "remove_token", Secret(std::string(kSealedPrefix) + "!!")).error, "not a sealed box");
  EXPECT_EQ(open_field(keys, 2, "remove_token", Secret(std::string(kSealedPrefix) + "AAAA")).error,
            "not a sealed box");
  EXPECT_EQ(open_field(SealKeys{keys.public_key, Secret("short")}, 2, "remove_token", sealed).error,
            "no usable key");
}

TEST(SealedField, AnEmptyValueRoundTrips) {
  const SealKeys keys = make_seal_keys();
  OpenedField o = open_field(keys, 1, "reg_token", seal_field(keys.public_key, 1, "reg_token", Secret()));
  ASSERT_TRUE(o.value) << o.error;
  EXPECT_TRUE(o.value->empty());
}

TEST(SealedField, KeysMatchOnlyTheirOwnHalf) {
  const SealKeys a = make_seal_keys();
  const SealKeys b = make_seal_keys();
  EXPECT_TRUE(keys_match(a.public_key, a.private_key));
  EXPECT_FALSE(keys_match(a.public_key, b.private_key));
  EXPECT_FALSE(keys_match("", a.private_key));
  EXPECT_FALSE(keys_match(a.public_key, Secret("not base64 at all")));
  EXPECT_THROW(seal_field("AAAA", 1, "reg_token", Secret("x")), std::invalid_argument);
}

}  // namespace
}  // namespace runpool::pool
