// MemoryStateTable's reads as the controller's tests count them: get_many answers like get() per id.
#include "common/pool/memory_state_table.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

InstanceRecord record(const std::string& id, int64_t generation) {
  InstanceRecord r;
  r.instance_id = id;
  r.state = State::kIdle;
  r.generation = generation;
  r.pool = "ci";
  return r;
}

TEST(MemoryStateTable, GetManyAnswersWhatGetWouldPerIdInOneCall) {
  MemoryStateTable table;
  ASSERT_TRUE(table.create(record("i-1", 3)));
  ASSERT_TRUE(table.create(record("i-2", 5)));
  ASSERT_TRUE(table.create(record("i-3", 7)));

  std::map<std::string, InstanceRecord> got = table.get_many({"i-2", "i-absent", "i-1", "i-2"});
  ASSERT_EQ(got.size(), 2u);  // no entry for the missing id; a repeated id once
  EXPECT_EQ(got.at("i-1").generation, 3);
  EXPECT_EQ(got.at("i-2").generation, 5);
  EXPECT_TRUE(table.get_many({}).empty());
  EXPECT_EQ(table.batch_gets(), 2u);
  EXPECT_EQ(table.gets(), 0u);

  // A copy, as get() returns: the table's record is not changed through it.
  got.at("i-1").generation = 99;
  EXPECT_EQ(table.get("i-1")->generation, 3);
  EXPECT_EQ(table.gets(), 1u);
}

}  // namespace
}  // namespace runpool::pool
