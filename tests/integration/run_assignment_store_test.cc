// The run-assignment store's contract, run against both implementations: DynamoRunAssignmentStore
// on dynalite (through the SigV4-checking proxy) and MemoryRunAssignmentStore. What only the table
// has — the items beside the records, passed over by the record readers and the by_label index —
// is tested on DynamoDB alone.
#include "common/pool/run_assignment_store.h"

#include <gtest/gtest.h>

#include <memory>

#include "common/pool/dynamo_state_table.h"
#include "tests/support/local_cloud.h"
#include "tests/support/state_table_db.h"

namespace runpool::pool {
namespace {

testing::StateTableDb& dynamo() { return testing::StateTableDb::shared("run-assignment-store-test"); }

RunAssignment sample(const std::string& label) {
  RunAssignment a;
  a.label = label;
  a.repository = "acme/app";
  a.run_id = 17'000'000'001;
  a.attempt = 1;
  a.resource_class = "large";
  a.usage_class = "spot";
  a.allowed_types = "c7i.* m7i.large";
  a.count = 3;
  a.created_ms = 1'800'000'000'000;
  return a;
}

class RunAssignmentStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "dynamo") {
      store_ = std::make_unique<DynamoRunAssignmentStore>(dynamo().db(), dynamo().table());
    } else {
      store_ = std::make_unique<MemoryRunAssignmentStore>();
    }
  }
  std::unique_ptr<RunAssignmentStore> store_;
};

INSTANTIATE_TEST_SUITE_P(Implementations, RunAssignmentStoreTest, ::testing::Values("dynamo", "memory"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST_P(RunAssignmentStoreTest, PutReadsBackWholeAndReplaces) {
  EXPECT_FALSE(store_->get("ci-put-1-provision"));
  RunAssignment a = sample("ci-put-1-provision");
  store_->put(a);
  EXPECT_EQ(store_->get("ci-put-1-provision"), a);
  // Settings left to the pool read back empty.
  RunAssignment b = sample("ci-put-1-provision");
  b.resource_class = b.usage_class = b.allowed_types = "";
  b.count = 1;
  store_->put(b);
  EXPECT_EQ(store_->get("ci-put-1-provision"), b);
}

TEST_P(RunAssignmentStoreTest, EndMarksOnlyWhatExists) {
  store_->put(sample("ci-end-1-provision"));
  EXPECT_TRUE(store_->end("ci-end-1-provision", 1'800'000'060'000));
  EXPECT_EQ(store_->get("ci-end-1-provision")->ended_ms, 1'800'000'060'000);
  EXPECT_FALSE(store_->end("ci-end-absent", 1));
  EXPECT_FALSE(store_->get("ci-end-absent")) << "end creates nothing";
}

TEST_P(RunAssignmentStoreTest, MoveAttemptLandsOnlyOnTheAttemptRead) {
  RunAssignment a = sample("ci-move-1-provision");
  a.ended_ms = 5;
  store_->put(a);
  // Two refreshes saw attempt 2 queued: one serves it, the other's write fails.
  EXPECT_TRUE(store_->move_attempt("ci-move-1-provision", 1, 2, 0));
  EXPECT_FALSE(store_->move_attempt("ci-move-1-provision", 1, 2, 0));
  RunAssignment got = *store_->get("ci-move-1-provision");
  EXPECT_EQ(got.attempt, 2);
  EXPECT_EQ(got.ended_ms, 0) << "served again";
  // Its provision failed: back to the attempt before, ended, for the next pass to try again.
  EXPECT_TRUE(store_->move_attempt("ci-move-1-provision", 2, 1, 9));
  EXPECT_EQ(store_->get("ci-move-1-provision")->attempt, 1);
  EXPECT_FALSE(store_->move_attempt("ci-move-absent", 0, 1, 0));
}

TEST_P(RunAssignmentStoreTest, RemoveOnlyWhatEndedWhenRead) {
  RunAssignment a = sample("ci-remove-1-provision");
  a.ended_ms = 100;
  store_->put(a);
  EXPECT_FALSE(store_->remove("ci-remove-1-provision", 99)) << "served again since it was read";
  EXPECT_TRUE(store_->remove("ci-remove-1-provision", 100));
  EXPECT_FALSE(store_->get("ci-remove-1-provision"));
  EXPECT_FALSE(store_->remove("ci-remove-1-provision", 100));
}

TEST_P(RunAssignmentStoreTest, ListGivesEveryOneByLabel) {
  const std::string p = "ci-list-" + GetParam() + "-";
  store_->put(sample(p + "b"));
  store_->put(sample(p + "a"));
  std::vector<std::string> labels;
  for (const RunAssignment& a : store_->list()) {
    if (a.label.rfind(p, 0) == 0) labels.push_back(a.label);
  }
  EXPECT_EQ(labels, (std::vector<std::string>{p + "a", p + "b"}));
}

TEST_P(RunAssignmentStoreTest, AnEmptyLabelIsRefused) {
  EXPECT_THROW(store_->put(sample("")), std::invalid_argument);
}

// ---- DynamoDB only: the items share the pool's table with the records

TEST(RunAssignmentInTheStateTable, RecordReadersAndTheLabelIndexPassOverThem) {
  DynamoStateTable table(dynamo().db(), dynamo().table(), testing::LocalCloud::shared().instance_role_id());
  DynamoRunAssignmentStore runs(dynamo().db(), dynamo().table());
  InstanceRecord r;
  r.instance_id = "i-0beside1run";
  r.state = State::kRunning;
  r.label = "ci-beside-1-provision";
  r.generation = 1;
  r.pool = "test";
  r.resource_class = "small";
  r.deadline_ms = 1'900'000'000'000;
  ASSERT_TRUE(table.create(r));
  runs.put(sample("ci-beside-1-provision"));
  int seen = 0;
  ScanStats stats = table.scan([&](const InstanceRecord&) { ++seen; });
  EXPECT_EQ(stats.skipped, 0) << "a run assignment is runpool's own item, not a foreign one";
  EXPECT_GT(stats.items, seen);
  std::vector<InstanceRecord> by_label = table.by_label("ci-beside-1-provision");
  ASSERT_EQ(by_label.size(), 1u) << "the index lists the instance alone";
  EXPECT_EQ(by_label[0].instance_id, "i-0beside1run");
}

}  // namespace
}  // namespace runpool::pool
