// The state table's contract, run against both implementations: DynamoStateTable on dynalite
// (through the SigV4-checking proxy) and MemoryStateTable, the in-memory one the unit tests use —
// so the fake is shown to answer every conditional write, report and read as the real one does.
// What only DynamoDB has (foreign items in the table, batching into requests) is tested on it alone.
#include "common/pool/dynamo_state_table.h"

#include <gtest/gtest.h>

#include <memory>

#include "common/pool/memory_state_table.h"
#include "common/pool/record_codec.h"
#include "common/pool/record_key.h"
#include "common/pool/transitions.h"
#include "tests/support/local_cloud.h"
#include "tests/support/state_table_db.h"

namespace runpool::pool {
namespace {

testing::StateTableDb& dynamo() { return testing::StateTableDb::shared("state-table-test"); }

InstanceRecord record(const std::string& id, State s, int64_t gen, const std::string& label = "") {
  InstanceRecord r;
  r.instance_id = id;
  r.state = s;
  r.generation = gen;
  r.label = label;
  r.pool = "test";
  r.resource_class = "small";
  r.deadline_ms = 1'900'000'000'000;
  return r;
}

// The contract: each test runs once per implementation ("dynamo", "memory").
class StateTableTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "dynamo") {
      table_ = std::make_unique<DynamoStateTable>(dynamo().db(), dynamo().table(),
                                                  testing::LocalCloud::shared().instance_role_id());
    } else {
      table_ = std::make_unique<MemoryStateTable>();
    }
  }
  std::unique_ptr<StateTable> table_;
};

INSTANTIATE_TEST_SUITE_P(Implementations, StateTableTest, ::testing::Values("dynamo", "memory"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST_P(StateTableTest, CreateIsOnceOnly) {
  EXPECT_TRUE(table_->create(record("i-create1", State::kCreated, 1, "L1")));
  EXPECT_FALSE(table_->create(record("i-create1", State::kIdle, 5)));
  EXPECT_EQ(table_->get("i-create1")->state, State::kCreated);
  EXPECT_FALSE(table_->get("i-missing"));
}

TEST_P(StateTableTest, ClaimWinsOnceAndStaleGenerationsLose) {
  ASSERT_TRUE(table_->create(record("i-claim1", State::kIdle, 3)));
  Expect idle_at_3{.states = {State::kIdle}, .generation = 3};
  LifecycleChange claim{.state = State::kClaimed, .generation = 4, .label = "run-a", .reg_token = Secret("tok")};
  EXPECT_TRUE(table_->transition("i-claim1", idle_at_3, claim));
  // A second claimer that read the same idle record loses.
  LifecycleChange other = claim;
  other.label = "run-b";
  EXPECT_FALSE(table_->transition("i-claim1", idle_at_3, other));
  auto r = table_->get("i-claim1");
  EXPECT_EQ(r->label, "run-a");
  EXPECT_EQ(r->generation, 4);
  EXPECT_EQ(r->reg_token.reveal(), "tok");
  EXPECT_FALSE(table_->transition("i-absent", idle_at_3, claim)) << "a missing item never meets a condition";
}

TEST_P(StateTableTest, LabelIndexAndRemovingTheLabel) {
  ASSERT_TRUE(table_->create(record("i-lab1", State::kRunning, 1, "run-lab")));
  ASSERT_TRUE(table_->create(record("i-lab2", State::kRunning, 1, "run-lab")));
  ASSERT_TRUE(table_->create(record("i-lab3", State::kRunning, 1, "run-other")));
  EXPECT_EQ(table_->by_label("run-lab").size(), 2u);
  ASSERT_TRUE(table_->transition("i-lab2", {.states = {State::kRunning}, .label = "run-lab"},
                                {.state = State::kIdle, .label = ""}));
  auto left = table_->by_label("run-lab");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].instance_id, "i-lab1");
  EXPECT_TRUE(table_->get("i-lab2")->label.empty());
}

TEST_P(StateTableTest, AgentReportsAreBoundToTheGeneration) {
  ASSERT_TRUE(table_->create(record("i-agent1", State::kClaimed, 2, "run-x")));
  ASSERT_TRUE(table_->transition("i-agent1", {.states = {State::kClaimed}}, {.reg_token = Secret("reg")}));
  EXPECT_TRUE(table_->report("i-agent1", {.heartbeat_ms = 123, .busy = false}));
  // An agent still acting on generation 1 fails.
  EXPECT_FALSE(table_->report("i-agent1", {.signal = AgentSignal::kRegistered, .generation = 1}));
  EXPECT_TRUE(table_->report("i-agent1", {.signal = AgentSignal::kRegistered, .runner_id = 99,
                                         .runner_name = "n", .take_reg_token = true, .generation = 2}));
  auto r = table_->get("i-agent1");
  EXPECT_EQ(r->signal, AgentSignal::kRegistered);
  EXPECT_EQ(r->signal_generation, 2);
  EXPECT_EQ(r->runner_id, 99);
  EXPECT_TRUE(r->reg_token.empty());
  EXPECT_EQ(r->heartbeat_ms, 123);
  // The controller's transition can require the signal.
  EXPECT_TRUE(table_->transition("i-agent1",
                                {.states = {State::kClaimed}, .generation = 2, .signal = AgentSignal::kRegistered,
                                 .signal_generation = 2},
                                {.state = State::kRunning}));
  EXPECT_FALSE(table_->report("i-gone", {.heartbeat_ms = 1})) << "no item, no write";
}

// A job lost to spot: the agent writes it for its generation; the controller's mark is written
// once (the first write requires none), then its outcome over its own mark.
TEST_P(StateTableTest, TheSpotJobIsTheAgentsAndTheReRunMarkIsWrittenOnce) {
  ASSERT_TRUE(table_->create(record("i-spot1", State::kRunning, 4, "run-s")));
  EXPECT_FALSE(table_->report("i-spot1", {.spot_job = "build", .generation = 3})) << "an old generation's agent";
  EXPECT_TRUE(table_->report("i-spot1", {.signal = AgentSignal::kInterrupted, .spot_job = "build", .generation = 4}));
  EXPECT_TRUE(table_->report("i-spot1", {.spot_job_result = "Canceled"}));
  auto r = table_->get("i-spot1");
  EXPECT_EQ(r->spot_job, "build");
  EXPECT_EQ(r->spot_generation, 4);
  EXPECT_EQ(r->spot_job_result, "Canceled");
  EXPECT_EQ(r->spot_rerun, "");

  EXPECT_TRUE(table_->transition("i-spot1", {.spot_rerun = ""}, {.spot_rerun = "requested 9"}));
  EXPECT_FALSE(table_->transition("i-spot1", {.spot_rerun = ""}, {.spot_rerun = "requested 9"})) << "never twice";
  EXPECT_FALSE(table_->transition("i-spot1", {.spot_rerun = "requested 8"}, {.spot_rerun = "rerun 8"}));
  EXPECT_TRUE(table_->transition("i-spot1", {.spot_rerun = "requested 9"}, {.spot_rerun = "rerun 9"}));
  EXPECT_EQ(table_->get("i-spot1")->spot_rerun, "rerun 9");
  EXPECT_TRUE(table_->transition("i-spot1", {.generation = 4, .label = "run-s"}, {.spot_run = "acme/app 7"}));
  EXPECT_EQ(table_->get("i-spot1")->spot_run, "acme/app 7");
}

// A scale-set assignment's JIT configuration: written by the controller, taken by the agent of
// that generation only, and gone with the assignment.
TEST_P(StateTableTest, TheJitConfigurationIsTakenByTheAgentOfItsGeneration) {
  ASSERT_TRUE(table_->create(record("i-jit1", State::kIdle, 3, "")));
  auto idle = table_->get("i-jit1");
  ASSERT_TRUE(idle);
  pool::Step claim = pool::claim_jit(*idle, "ss-linux", Secret("eyJqaXQiOiIxIn0="), "https://github.com/o", 1000,
                                     pool::Timeouts{});
  ASSERT_TRUE(table_->transition("i-jit1", claim.expect, claim.change));
  auto r = table_->get("i-jit1");
  EXPECT_EQ(r->jit_config.reveal(), "eyJqaXQiOiIxIn0=");
  EXPECT_TRUE(r->reg_token.empty());
  EXPECT_EQ(r->generation, 4);
  EXPECT_THROW(table_->report("i-jit1", {.take_jit_config = true}), std::invalid_argument) << "it names its generation";
  EXPECT_FALSE(table_->report("i-jit1", {.take_jit_config = true, .generation = 3}));
  EXPECT_EQ(table_->get("i-jit1")->jit_config.reveal(), "eyJqaXQiOiIxIn0=");
  EXPECT_TRUE(table_->report("i-jit1", {.take_jit_config = true, .generation = 4}));
  EXPECT_TRUE(table_->get("i-jit1")->jit_config.empty());
  // One the agent never took leaves with the assignment.
  ASSERT_TRUE(table_->transition("i-jit1", {}, {.jit_config = Secret("again")}));
  r = table_->get("i-jit1");
  pool::Step end = pool::begin_terminate(*r, 2000, pool::Timeouts{});
  ASSERT_TRUE(table_->transition("i-jit1", end.expect, end.change));
  EXPECT_TRUE(table_->get("i-jit1")->jit_config.empty());
}

TEST_P(StateTableTest, AgentNotBusyAndTheOrphanBypassAndKeepMarks) {
  InstanceRecord shared = record("i-shared1", State::kRunning, 1, "self-hosted,linux,small");
  shared.shared = true;
  shared.os = "linux";
  ASSERT_TRUE(table_->create(shared));
  const Expect idle_runner{.states = {State::kRunning}, .generation = 1, .agent_not_busy = true};
  // busy absent counts as not busy; the agent's busy report makes the same write fail.
  ASSERT_TRUE(table_->transition("i-shared1", idle_runner, {.orphan_since_ms = 1'700'000'000'000}));
  ASSERT_TRUE(table_->report("i-shared1", {.busy = true}));
  EXPECT_FALSE(table_->transition("i-shared1", idle_runner, {.state = State::kDraining}));
  ASSERT_TRUE(table_->report("i-shared1", {.busy = false}));
  EXPECT_TRUE(table_->transition("i-shared1", idle_runner, {.orphan_since_ms = 0, .bypass_removal = true}));
  auto r = table_->get("i-shared1");
  EXPECT_TRUE(r->shared);
  EXPECT_EQ(r->os, "linux");
  EXPECT_EQ(r->orphan_since_ms, 0) << "0 removes the mark";
  EXPECT_TRUE(r->bypass_removal);
  ASSERT_TRUE(table_->transition("i-shared1", {.states = {State::kRunning}}, {.bypass_removal = false}));
  EXPECT_FALSE(table_->get("i-shared1")->bypass_removal);
  // keep_failed's mark: set, read back, removed by 0.
  ASSERT_TRUE(table_->transition("i-shared1", {.states = {State::kRunning}}, {.kept_until_ms = 1'700'000'360'000}));
  EXPECT_EQ(table_->get("i-shared1")->kept_until_ms, 1'700'000'360'000);
  ASSERT_TRUE(table_->transition("i-shared1", {.states = {State::kRunning}}, {.kept_until_ms = 0}));
  EXPECT_EQ(table_->get("i-shared1")->kept_until_ms, 0) << "0 removes the mark";
}

// An operator's mark (runpoolctl retire's retire_pending, keep_failed's kept_until) written after
// a caller read the record fails that caller's return to the pool and its claim: never undone.
TEST_P(StateTableTest, AMarkWrittenSinceTheReadFailsTheReturnAndTheClaim) {
  ASSERT_TRUE(table_->create(record("i-mark1", State::kDraining, 5, "run-m")));
  ASSERT_TRUE(table_->report("i-mark1", {.signal = AgentSignal::kDrained, .generation = 5}));
  const InstanceRecord drained = *table_->get("i-mark1");
  const Timeouts t;
  const Step back = return_to_pool(drained, 1000, t);
  const LifecycleChange unmark{.kept_until_ms = 0, .retire_pending = false};
  ASSERT_TRUE(table_->transition("i-mark1", mark_retire(drained).expect, mark_retire(drained).change));
  EXPECT_FALSE(table_->transition("i-mark1", back.expect, back.change)) << "retire mark since the read";
  ASSERT_TRUE(table_->transition("i-mark1", {}, unmark));
  ASSERT_TRUE(table_->transition("i-mark1", {}, {.kept_until_ms = 1'900'000'000'000}));
  EXPECT_FALSE(table_->transition("i-mark1", back.expect, back.change)) << "keep mark since the read";
  EXPECT_EQ(table_->get("i-mark1")->state, State::kDraining);
  ASSERT_TRUE(table_->transition("i-mark1", {}, unmark));
  ASSERT_TRUE(table_->transition("i-mark1", back.expect, back.change)) << "marks removed: the same read returns it";

  const InstanceRecord idle = *table_->get("i-mark1");
  const Step take = claim(idle, "run-n", Secret("reg"), "https://github.com/o/r", 1000, t);
  ASSERT_TRUE(table_->transition("i-mark1", mark_retire(idle).expect, mark_retire(idle).change));
  EXPECT_FALSE(table_->transition("i-mark1", take.expect, take.change)) << "retire mark since the read";
  EXPECT_EQ(table_->get("i-mark1")->state, State::kIdle);
  ASSERT_TRUE(table_->transition("i-mark1", {}, unmark));
  EXPECT_TRUE(table_->transition("i-mark1", take.expect, take.change));
  EXPECT_EQ(table_->get("i-mark1")->label, "run-n");
}

// A provision's wait for a drain (await_drain): one at a time until it lapses; the return ends it.
TEST_P(StateTableTest, OneProvisionAtATimeWaitsForADrain) {
  ASSERT_TRUE(table_->create(record("i-await1", State::kDraining, 4, "run-w")));
  const InstanceRecord r = *table_->get("i-await1");
  const Step first = await_drain(r, 5000, 1000), second = await_drain(r, 6000, 4999), later = await_drain(r, 9000, 5000);
  ASSERT_TRUE(table_->transition("i-await1", first.expect, first.change));
  EXPECT_EQ(table_->get("i-await1")->awaited_until_ms, 5000);
  EXPECT_FALSE(table_->transition("i-await1", second.expect, second.change)) << "the first provision's wait holds";
  ASSERT_TRUE(table_->transition("i-await1", later.expect, later.change)) << "lapsed: another may wait";
  ASSERT_TRUE(table_->report("i-await1", {.signal = AgentSignal::kDrained, .generation = 4}));
  const Step back = return_to_pool(*table_->get("i-await1"), 6000, Timeouts{});
  ASSERT_TRUE(table_->transition("i-await1", back.expect, back.change));
  EXPECT_EQ(table_->get("i-await1")->awaited_until_ms, 0) << "returned: no wait left on it";
  EXPECT_FALSE(table_->transition("i-await1", later.expect, later.change)) << "only a draining record is waited for";
}

TEST_P(StateTableTest, ScanSeesEveryRecordAndRemoveIsConditional) {
  ASSERT_TRUE(table_->create(record("i-scan1", State::kTerminated, 1)));
  bool seen = false;
  ScanStats stats = table_->scan([&](const InstanceRecord& r) { seen = seen || r.instance_id == "i-scan1"; });
  EXPECT_TRUE(seen);
  EXPECT_GE(stats.items, 1);
  EXPECT_FALSE(table_->remove("i-scan1", {.states = {State::kIdle}}));
  EXPECT_TRUE(table_->remove("i-scan1", {.states = {State::kTerminated}}));
  EXPECT_FALSE(table_->get("i-scan1"));
  EXPECT_FALSE(table_->remove("i-scan1", {.states = {State::kTerminated}})) << "gone: nothing meets a condition";
}

TEST_P(StateTableTest, GetManyAnswersAsGetDoesPerIdAndSeesTheLatestWrite) {
  std::vector<std::string> ids;
  for (int i = 0; i < 130; ++i) {
    std::string id = "i-many" + std::to_string(i);
    ASSERT_TRUE(table_->create(record(id, State::kRunning, 1 + i % 4, "run-many")));
    ids.push_back(id);
  }
  for (int i = 0; i < 20; ++i) ids.push_back("i-manyabsent" + std::to_string(i));
  ids.push_back("i-many0");  // twice
  std::map<std::string, InstanceRecord> got = table_->get_many(ids);
  ASSERT_EQ(got.size(), 130u) << "absent ids have no entry";
  for (int i = 0; i < 130; ++i) {
    std::string id = "i-many" + std::to_string(i);
    ASSERT_TRUE(got.count(id)) << id;
    EXPECT_EQ(encode_record(got.at(id)), encode_record(*table_->get(id))) << id;
  }
  EXPECT_TRUE(table_->get_many({}).empty());
  // Strongly consistent: a transition is seen by the next batch read.
  ASSERT_TRUE(table_->transition("i-many7", {.states = {State::kRunning}}, {.state = State::kDraining}));
  EXPECT_EQ(table_->get_many({"i-many7"}).at("i-many7").state, State::kDraining);
}

// ---- DynamoDB only: what the in-memory table has no notion of

class DynamoOnly : public ::testing::Test {
 protected:
  DynamoStateTable table_{dynamo().db(), dynamo().table(), testing::LocalCloud::shared().instance_role_id()};
};

TEST_F(DynamoOnly, ScanAndReadsSkipItemsThatAreNotRecords) {
  ASSERT_TRUE(table_.create(record("i-foreignneighbour", State::kIdle, 1)));
  aws::Item foreign{{attr::kInstanceId, aws::AttributeValue::string("not-ours")},
                    {"whatever", aws::AttributeValue::number(1)}};
  dynamo().db().put_item({.table = dynamo().table(), .item = foreign});
  aws::Item keyed{{attr::kInstanceId, aws::AttributeValue::string(record_key(table_.instance_role_id(), "i-foreign"))},
                  {"whatever", aws::AttributeValue::number(1)}};
  dynamo().db().put_item({.table = dynamo().table(), .item = keyed});
  int seen = 0;
  ScanStats stats = table_.scan([&](const InstanceRecord&) { ++seen; });
  EXPECT_GE(stats.skipped, 2);
  EXPECT_EQ(stats.items, seen + stats.skipped);
  EXPECT_FALSE(table_.get_many({"i-foreign", "i-foreignneighbour"}).count("i-foreign"));
  EXPECT_EQ(table_.get_many({"i-foreign", "i-foreignneighbour"}).size(), 1u);
}

TEST_F(DynamoOnly, GetManyAsksForAHundredKeysPerRequest) {
  std::vector<std::string> ids;
  for (int i = 0; i < 130; ++i) {
    std::string id = "i-batch" + std::to_string(i);
    ASSERT_TRUE(table_.create(record(id, State::kRunning, 1, "run-batch")));
    ids.push_back(id);
  }
  for (int i = 0; i < 21; ++i) ids.push_back("i-batchabsent" + std::to_string(i));
  long sent_before = dynamo().caller().requests_sent();
  EXPECT_EQ(table_.get_many(ids).size(), 130u);
  EXPECT_EQ(dynamo().caller().requests_sent() - sent_before, 2) << "151 distinct ids: two BatchGetItem requests";
}

}  // namespace
}  // namespace runpool::pool
