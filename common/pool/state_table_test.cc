// StateTableWrapper: a wrapper that overrides one call changes that call only; every other call
// reaches the table it wraps, with its arguments and answer untouched.
#include "common/pool/state_table.h"

#include <gtest/gtest.h>

#include "common/pool/memory_state_table.h"

namespace runpool::pool {
namespace {

InstanceRecord record(const std::string& id, const std::string& label) {
  InstanceRecord r;
  r.instance_id = id;
  r.state = State::kClaimed;
  r.generation = 2;
  r.label = label;
  r.pool = "ci";
  return r;
}

// Refuses every create; counts reads.
class NoCreates final : public StateTableWrapper {
 public:
  using StateTableWrapper::StateTableWrapper;
  bool create(const InstanceRecord&) override { return false; }
  std::optional<InstanceRecord> get(const std::string& id) override {
    ++gets;
    return StateTableWrapper::get(id);
  }
  int gets = 0;
};

TEST(StateTableWrapper, OverridesOnlyWhatItChangesAndPassesTheRestThrough) {
  MemoryStateTable target;
  NoCreates table(target);
  EXPECT_EQ(&table.target(), &target);
  EXPECT_FALSE(table.create(record("i-1", "run-1")));
  EXPECT_FALSE(target.get("i-1")) << "the override decided: nothing reached the target";

  ASSERT_TRUE(target.create(record("i-1", "run-1")));
  ASSERT_TRUE(target.create(record("i-2", "run-2")));
  EXPECT_EQ(table.get("i-1")->label, "run-1");
  EXPECT_EQ(table.gets, 1);
  EXPECT_EQ(table.get_many({"i-1", "i-2", "i-3"}).size(), 2u);
  EXPECT_EQ(table.by_label("run-2").size(), 1u);
  int seen = 0;
  EXPECT_EQ(table.scan([&](const InstanceRecord&) { ++seen; }).items, 2);
  EXPECT_EQ(seen, 2);

  Expect claimed;
  claimed.states = {State::kClaimed};
  claimed.generation = 2;
  LifecycleChange run;
  run.state = State::kRunning;
  EXPECT_TRUE(table.transition("i-1", claimed, run));
  EXPECT_EQ(target.get("i-1")->state, State::kRunning);
  EXPECT_FALSE(table.transition("i-1", claimed, run)) << "the target's condition, answered as the target answers";

  AgentReport beat;
  beat.heartbeat_ms = 1234;
  EXPECT_TRUE(table.report("i-2", beat));
  EXPECT_EQ(target.get("i-2")->heartbeat_ms, 1234);
  EXPECT_TRUE(table.remove("i-2", claimed));
  EXPECT_FALSE(target.get("i-2"));
  EXPECT_EQ(table.gets, 1) << "only the wrapper's own get counted";
}

}  // namespace
}  // namespace runpool::pool
