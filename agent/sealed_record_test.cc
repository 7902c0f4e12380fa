#include "agent/sealed_record.h"

#include <gtest/gtest.h>

namespace runpool::agent {
namespace {

using pool::SealKeys;

pool::InstanceRecord record_with(const SealKeys& k, bool open_key_in_record) {
  pool::InstanceRecord r;
  r.instance_id = "i-1";
  r.generation = 3;
  r.seal_key = k.public_key;
  if (open_key_in_record) r.open_key = k.private_key;
  return r;
}

TEST(KeyStep, AdoptsOnlyTheSealKeysOwnPrivateHalf) {
  const SealKeys mine = pool::make_seal_keys();
  const SealKeys other = pool::make_seal_keys();
  struct Case {
    const char* name;
    std::optional<SealKeys> held;
    bool held_kept;
    pool::InstanceRecord record;
    bool store;
    bool take;
    std::optional<std::string> keys_public;  // nullopt: none held after
    bool warns;
  };
  pool::InstanceRecord forged = record_with(mine, false);
  forged.open_key = other.private_key;  // a thief's key written with the instance role's credentials
  pool::InstanceRecord legacy;
  legacy.generation = 3;
  const Case cases[] = {
      {"first read at boot", std::nullopt, false, record_with(mine, true), true, true, mine.public_key, false},
      {"already held, record still has it", mine, true, record_with(mine, true), false, true, mine.public_key, false},
      {"held but its file failed: kept again", mine, false, record_with(mine, true), true, true, mine.public_key, false},
      {"already held, taken", mine, true, record_with(mine, false), false, false, mine.public_key, false},
      {"nothing held, nothing offered", std::nullopt, false, record_with(mine, false), false, false, std::nullopt, false},
      {"a forged open key is removed, not adopted", std::nullopt, false, forged, false, true, std::nullopt, true},
      {"a forged open key beside the held one is removed", mine, true, forged, false, true, mine.public_key, false},
      {"a record from before sealing", std::nullopt, false, legacy, false, false, std::nullopt, false},
  };
  for (const Case& c : cases) {
    KeyStep k = key_step(c.held, c.held_kept, c.record);
    EXPECT_EQ(k.store, c.store) << c.name;
    EXPECT_EQ(k.take_open_key, c.take) << c.name;
    EXPECT_EQ(k.keys.has_value(), c.keys_public.has_value()) << c.name;
    if (k.keys && c.keys_public) {
      EXPECT_EQ(k.keys->public_key, *c.keys_public) << c.name;
    }
    EXPECT_EQ(!k.warning.empty(), c.warns) << c.name;
  }
}

TEST(OpenRecord, OpensWhatWasSealedForThisAssignmentAndDropsTheRest) {
  const SealKeys mine = pool::make_seal_keys();
  const SealKeys thief = pool::make_seal_keys();
  struct Case {
    const char* name;
    Secret stored;
    std::optional<SealKeys> keys;
    const char* opened;  // "" = dropped
    const char* why;
  };
  const Case cases[] = {
      {"sealed for it", pool::seal_field(mine.public_key, 3, "reg_token", Secret("T3")), mine, "T3", ""},
      {"plain: written with stolen credentials", Secret("T-plain"), mine, "", "reg_token: not sealed"},
      {"a previous assignment's", pool::seal_field(mine.public_key, 2, "reg_token", Secret("T2")), mine, "",
       "reg_token: sealed for another assignment or field"},
      {"another field's", pool::seal_field(mine.public_key, 3, "remove_token", Secret("R3")), mine, "",
       "reg_token: sealed for another assignment or field"},
      {"no key held", pool::seal_field(mine.public_key, 3, "reg_token", Secret("T3")), std::nullopt, "",
       "reg_token: this instance holds no key to open it"},
      {"another instance's key held", pool::seal_field(mine.public_key, 3, "reg_token", Secret("T3")), thief, "",
       "reg_token: the record's seal key is not this instance's"},
  };
  for (const Case& c : cases) {
    pool::InstanceRecord r = record_with(mine, true);
    r.reg_token = c.stored;
    OpenedRecord o = open_record(r, c.keys);
    EXPECT_EQ(o.record.reg_token.reveal(), c.opened) << c.name;
    if (*c.why) {
      ASSERT_EQ(o.refused.size(), 1u) << c.name;
      EXPECT_EQ(o.refused[0], c.why) << c.name;
    } else {
      EXPECT_TRUE(o.refused.empty()) << c.name;
    }
    EXPECT_TRUE(o.record.open_key.empty()) << c.name;
  }
}

TEST(OpenRecord, EveryTokenIsOpenedAndALegacyRecordIsLeftAlone) {
  const SealKeys mine = pool::make_seal_keys();
  pool::InstanceRecord r = record_with(mine, false);
  r.remove_token = pool::seal_field(mine.public_key, 3, "remove_token", Secret("R"));
  r.jit_config = pool::seal_field(mine.public_key, 3, "jit_config", Secret("J"));
  OpenedRecord o = open_record(r, mine);
  EXPECT_EQ(o.record.remove_token.reveal(), "R");
  EXPECT_EQ(o.record.jit_config.reveal(), "J");
  EXPECT_TRUE(o.refused.empty());

  pool::InstanceRecord legacy;
  legacy.generation = 3;
  legacy.reg_token = Secret("plain");
  EXPECT_EQ(open_record(legacy, std::nullopt).record.reg_token.reveal(), "plain");
}

}  // namespace
}  // namespace runpool::agent
