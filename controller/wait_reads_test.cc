// The waits' reads of the table: provision's wait for `registered` and release's (drain_to_pool's)
// wait for `drained` read every record they wait for with ONE batch read per pass (one
// BatchGetItem per 100 on DynamoDB) — never one GetItem per record — and treat a failed batch read
// as a failed GetItem was treated. (Scale-down's drain wait: scale_down_test.cc.)
#include <gtest/gtest.h>

#include <algorithm>

#include "controller/provision.h"
#include "controller/release.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::State;
using testing::World;

ProvisionOptions on_demand_options(int count, const std::string& label = "ci-1-1-build") {
  ProvisionOptions o = testing::provision_options(count, label);
  o.usage = pool::UsageClass::kOnDemand;
  return o;
}

// The table's reads from the first batch read on.
std::vector<std::string> reads_from_first_batch(const testing::HookedTable& t) {
  auto first =
      std::find_if(t.reads.begin(), t.reads.end(), [](const std::string& r) { return r.starts_with("get_many"); });
  return {first, t.reads.end()};
}

TEST(WaitReads, ProvisionReadsEveryWaitedRecordWithOneBatchReadPerPass) {
  World w;
  w.add_idle("i-00000000000000aa1", 2, "small", pool::UsageClass::kOnDemand);
  w.add_idle("i-00000000000000aa2", 2, "small", pool::UsageClass::kOnDemand);
  // The agents stay quiet for three polls, then register.
  w.agents_on = false;
  w.on_tick = [&] {
    if (w.clock.sleeps == 3) w.agents_on = true;
  };
  ASSERT_EQ(run_provision(w.ctx, on_demand_options(5)), kExitOk) << w.out.str();
  EXPECT_EQ(w.compute.launched.size(), 3u);
  // Pass 1-3: nobody registered; pass 4 (after the agents' tick): all five marked running.
  ASSERT_EQ(w.clock.sleeps, 4);
  std::vector<std::string> expected = {"get_many 2"};  // the claim: the two pool messages' records
  expected.insert(expected.end(), 5, "get_many 5");
  EXPECT_EQ(reads_from_first_batch(w.table), expected)
      << "one batch read of the five per pass, and no single reads (before: five GetItems per pass)";
  w.table.scan([&](const pool::InstanceRecord& r) { EXPECT_EQ(r.state, State::kRunning) << r.instance_id; });
}

TEST(WaitReads, ProvisionReadsOnlyTheRecordsNotYetRunning) {
  World w;
  w.agents_on = false;
  // One agent registers after the first poll, the other two after the second.
  w.on_tick = [&] {
    if (w.clock.sleeps == 1) {
      const std::string& id = w.compute.launched.at(0);
      pool::InstanceRecord r = w.table.inner.get(id).value();
      w.table.inner.report(id, {.signal = pool::AgentSignal::kRegistered, .generation = r.generation});
      w.agents_on = true;  // the others at the next poll
    }
  };
  ASSERT_EQ(run_provision(w.ctx, on_demand_options(3)), kExitOk) << w.out.str();
  EXPECT_EQ(reads_from_first_batch(w.table), (std::vector<std::string>{"get_many 3", "get_many 3", "get_many 2"}));
}

TEST(WaitReads, AFailedBatchReadFailsTheProvisionAsAFailedGetItemDidAndCleansUp) {
  World w;
  w.add_idle("i-00000000000000aa1", 2, "small", pool::UsageClass::kOnDemand);
  w.table.pass_get_many = 1;  // the claim's read of the pool message's record
  w.table.fail_get_many = 1;  // the wait's first read
  ASSERT_EQ(run_provision(w.ctx, on_demand_options(2)), kExitFailed);
  EXPECT_NE(w.out.str().find("BatchGetItem"), std::string::npos) << w.out.str();
  ASSERT_EQ(w.compute.launched.size(), 1u);
  EXPECT_EQ(w.compute.terminated.count(w.compute.launched[0]), 1u) << "the launched one is terminated";
  EXPECT_EQ(w.record("i-00000000000000aa1").state, State::kIdle) << "the claimed one drains back to the pool";
}

TEST(WaitReads, ReleaseReadsEveryDrainingRecordWithOneBatchReadPerRoundAndRetriesAFailedOne) {
  World w;
  ASSERT_EQ(run_provision(w.ctx, on_demand_options(4)), kExitOk) << w.out.str();
  w.table.reads.clear();
  const int sleeps_before = w.clock.sleeps;
  w.table.fail_get_many = 2;  // the first two rounds' reads fail: warned about, read again
  ASSERT_EQ(run_release(w.ctx, {"ci-1-1-build", true, std::nullopt, false, {}}), kExitOk) << w.out.str();
  EXPECT_EQ(w.clock.sleeps - sleeps_before, 2);
  EXPECT_EQ(w.table.reads, std::vector<std::string>(3, "get_many 4"));
  for (const auto& id : w.compute.launched) EXPECT_EQ(w.record(id).state, State::kIdle) << id;
  EXPECT_EQ(w.queue.bodies("small").size(), 4u);
  EXPECT_TRUE(w.compute.terminated.empty());
}

}  // namespace
}  // namespace runpool::controller
