// The lease store's contract, run against both implementations: DynamoLeaseStore on dynalite
// (through the SigV4-checking proxy) and MemoryLeaseStore. What only the table has — leases beside
// the records, passed over by the record readers — is tested on DynamoDB alone.
#include "common/pool/lease_store.h"

#include <gtest/gtest.h>

#include <memory>

#include "common/pool/dynamo_state_table.h"
#include "tests/support/local_cloud.h"
#include "tests/support/state_table_db.h"

namespace runpool::pool {
namespace {

testing::StateTableDb& dynamo() { return testing::StateTableDb::shared("lease-store-test"); }

class LeaseStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "dynamo") {
      store_ = std::make_unique<DynamoLeaseStore>(dynamo().db(), dynamo().table());
    } else {
      store_ = std::make_unique<MemoryLeaseStore>();
    }
  }
  std::unique_ptr<LeaseStore> store_;
};

INSTANTIATE_TEST_SUITE_P(Implementations, LeaseStoreTest, ::testing::Values("dynamo", "memory"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST_P(LeaseStoreTest, CreateIsOnceOnlyAndReadsBack) {
  EXPECT_FALSE(store_->get("scaleset/p/create"));
  const Lease a{"scaleset/p/create", "host-a/1", 1, 1'800'000'030'000};
  EXPECT_TRUE(store_->create(a));
  EXPECT_FALSE(store_->create({"scaleset/p/create", "host-b/2", 1, 1'800'000'030'000}));
  EXPECT_EQ(store_->get("scaleset/p/create"), a);
}

TEST_P(LeaseStoreTest, ReplaceLandsOnlyOnTheGenerationRead) {
  ASSERT_TRUE(store_->create({"scaleset/p/replace", "a", 1, 100}));
  // Two standbys read generation 1 expired; one takes over, the other's write fails.
  EXPECT_TRUE(store_->replace({"scaleset/p/replace", "b", 2, 200}, 1));
  EXPECT_FALSE(store_->replace({"scaleset/p/replace", "c", 2, 200}, 1));
  // The old holder's late renewal names generation 1: refused.
  EXPECT_FALSE(store_->replace({"scaleset/p/replace", "a", 1, 300}, 1));
  // The new holder renews (same generation) and releases (expires 0).
  EXPECT_TRUE(store_->replace({"scaleset/p/replace", "b", 2, 400}, 2));
  EXPECT_TRUE(store_->replace({"scaleset/p/replace", "b", 2, 0}, 2));
  EXPECT_EQ(store_->get("scaleset/p/replace"), (Lease{"scaleset/p/replace", "b", 2, 0}));
  EXPECT_FALSE(store_->replace({"scaleset/p/absent", "a", 1, 100}, 0)) << "no item: nothing to replace";
  EXPECT_FALSE(store_->get("scaleset/p/absent"));
}

TEST_P(LeaseStoreTest, AnEmptyNameIsRefused) {
  EXPECT_THROW(store_->create({"", "a", 1, 1}), std::invalid_argument);
}

TEST_P(LeaseStoreTest, ListGivesTheLeasesUnderAPrefixByName) {
  // Written out of order, with a neighbour whose name shares all but the separator.
  ASSERT_TRUE(store_->create({"scaleset/list/b", "h", 1, 10}));
  ASSERT_TRUE(store_->create({"scaleset/list/a", "h", 2, 20}));
  ASSERT_TRUE(store_->create({"scaleset/list-other/c", "h", 1, 30}));
  ASSERT_TRUE(store_->replace({"scaleset/list/b", "g", 2, 40}, 1));
  const std::vector<Lease> got = store_->list("scaleset/list/");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (Lease{"scaleset/list/a", "h", 2, 20}));
  EXPECT_EQ(got[1], (Lease{"scaleset/list/b", "g", 2, 40})) << "as last written";
  EXPECT_TRUE(store_->list("scaleset/list-none/").empty());
}

// Two contenders over the real store with the pure decision: never both holding it.
TEST_P(LeaseStoreTest, ContendersFollowingTheDecisionNeverOverlap) {
  const std::string name = "scaleset/p/contend";
  const LeaseTimes times{30'000, 10'000};
  std::optional<Lease> mine[2];
  const std::string who[2] = {"a", "b"};
  int64_t now = 1'800'000'000'000;
  int takeovers = 0;
  for (int step = 0; step < 60; ++step, now += 4'000) {
    for (int i = 0; i < 2; ++i) {
      if (i == (step / 20) % 2 && step % 20 >= 5 && step % 20 < 15) continue;  // paused past its lease
      std::optional<Lease> current = store_->get(name);
      LeaseDecision d = decide_lease(name, current, who[i], mine[i], now, times);
      if (d.move == LeaseMove::kCreate && store_->create(d.next)) mine[i] = d.next;
      if ((d.move == LeaseMove::kRenew || d.move == LeaseMove::kTakeOver) &&
          store_->replace(d.next, current->generation)) {
        takeovers += d.move == LeaseMove::kTakeOver;
        mine[i] = d.next;
      }
      if (d.move == LeaseMove::kLost) mine[i].reset();
    }
    const std::optional<Lease> current = store_->get(name);
    ASSERT_FALSE(mine[0] && mine[1] && lease_held(current, *mine[0], now) && lease_held(current, *mine[1], now))
        << "step " << step;
  }
  EXPECT_GE(takeovers, 2);
}

// ---- DynamoDB only: leases share the pool's table with the records

TEST(LeaseInTheStateTable, RecordReadersPassOverLeases) {
  DynamoStateTable table(dynamo().db(), dynamo().table(), testing::LocalCloud::shared().instance_role_id());
  DynamoLeaseStore leases(dynamo().db(), dynamo().table());
  InstanceRecord r;
  r.instance_id = "i-0beside1ease";
  r.state = State::kIdle;
  r.generation = 1;
  r.pool = "test";
  r.resource_class = "small";
  r.deadline_ms = 1'900'000'000'000;
  ASSERT_TRUE(table.create(r));
  ASSERT_TRUE(leases.create({"scaleset/p/beside", "a", 1, 1}));
  int seen = 0;
  ScanStats stats = table.scan([&](const InstanceRecord&) { ++seen; });
  EXPECT_EQ(stats.skipped, 0) << "a lease is runpool's own item, not a foreign one";
  EXPECT_GT(stats.items, seen) << "the leases were scanned and passed over";
  EXPECT_TRUE(table.get("i-0beside1ease"));
  for (const Lease& l : leases.list("")) EXPECT_NE(l.name, "i-0beside1ease") << "a record is never listed as a lease";
}

}  // namespace
}  // namespace runpool::pool
