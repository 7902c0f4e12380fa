// The heartbeat's waits and writes: a beat before the record exists is retried within seconds,
// then less often, and every write of the agent's loop carries a heartbeat too.
#include "agent/heartbeat.h"

#include <gtest/gtest.h>

#include "common/pool/memory_state_table.h"

namespace runpool::agent {
namespace {

using namespace std::chrono_literals;

TEST(NextBeatWait, AWrittenBeatWaitsTheInterval) {
  Duration retry{};
  EXPECT_EQ(next_beat_wait(true, 30s, retry), 30s);
}

TEST(NextBeatWait, AMissedBeatIsRetriedSoonThenBackingOffToTheInterval) {
  Duration retry{};
  std::vector<Duration> waits;
  for (int i = 0; i < 7; ++i) waits.push_back(next_beat_wait(false, 30s, retry));
  EXPECT_EQ(waits, (std::vector<Duration>{1s, 2s, 4s, 8s, 16s, 30s, 30s}));
  // One written beat starts the back-off over.
  EXPECT_EQ(next_beat_wait(true, 30s, retry), 30s);
  EXPECT_EQ(next_beat_wait(false, 30s, retry), 1s);
}

TEST(NextBeatWait, AnIntervalShorterThanTheFirstRetryIsKept) {
  Duration retry{};
  EXPECT_EQ(next_beat_wait(false, 500ms, retry), 500ms);
  EXPECT_EQ(next_beat_wait(false, 500ms, retry), 500ms);
}

TEST(Heartbeat, ABeatBeforeTheRecordExistsIsNotWrittenAndOneAfterIs) {
  pool::MemoryStateTable table;
  FakeClock clock;
  TableHealth health(clock);
  Heartbeat beat(table, "i-0123456789abcdef0", clock, 30s, [] { return true; }, health);
  EXPECT_FALSE(beat.beat()) << "no record yet: nothing is created";
  EXPECT_FALSE(table.get("i-0123456789abcdef0").has_value());

  pool::InstanceRecord r;
  r.instance_id = "i-0123456789abcdef0";
  r.pool = "ci";
  ASSERT_TRUE(table.create(r));
  clock.advance(5s);
  EXPECT_TRUE(beat.beat());
  auto got = table.get("i-0123456789abcdef0");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->heartbeat_ms, to_epoch_ms(clock.now()));
  EXPECT_TRUE(got->busy);
}

}  // namespace
}  // namespace runpool::agent
