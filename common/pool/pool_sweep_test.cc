#include "common/pool/pool_sweep.h"

#include <gtest/gtest.h>

#include "common/pool/pool_message.h"

namespace runpool::pool {
namespace {

constexpr int64_t kSweepNow = 1'800'000'000'000;
constexpr int64_t kGrace = 60'000;

InstanceRecord idle(const std::string& id, int64_t generation = 3) {
  InstanceRecord r;
  r.instance_id = id;
  r.pool = "ci";
  r.state = State::kIdle;
  r.generation = generation;
  r.resource_class = "small";
  r.state_since_ms = kSweepNow - 600'000;
  r.deadline_ms = kSweepNow + 3'600'000;
  return r;
}

ReceivedMessage msg(const std::string& message_id, const std::string& instance_id, int64_t generation,
                    const std::string& receipt = "") {
  return {message_id, receipt.empty() ? "rh-" + message_id : receipt,
          pool_message_body({instance_id, generation})};
}

PoolView view(std::vector<ReceivedMessage> messages, std::vector<InstanceRecord> fresh, bool complete = true) {
  PoolView v;
  v.pool = "ci";
  v.resource_class = "small";
  v.messages = std::move(messages);
  v.complete = complete;
  for (auto& r : fresh) v.fresh[r.instance_id] = r;
  return v;
}

const MessageVerdict& verdict(const SweepPlan& p, const std::string& message_id) {
  for (const auto& v : p.messages) {
    if (v.message.message_id == message_id) return v;
  }
  throw std::runtime_error("no verdict for " + message_id);
}

TEST(NeedsSweep, WhenDepthDiffers) {
  EXPECT_FALSE(needs_sweep(0, 0));
  EXPECT_FALSE(needs_sweep(3, 3));
  EXPECT_TRUE(needs_sweep(4, 3));
  EXPECT_TRUE(needs_sweep(2, 3));
}

TEST(PlanPoolSweep, ValidMessageIsReleasedAndNothingReadvertised) {
  auto p = plan_pool_sweep(view({msg("m1", "i-0000000a", 3)}, {idle("i-0000000a")}), {idle("i-0000000a")}, {},
                           kSweepNow, kGrace);
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_EQ(p.messages[0].fate, SweepFate::kRelease);
  EXPECT_EQ(p.messages[0].rule, "pool.valid");
  EXPECT_TRUE(p.advertise.empty());
  EXPECT_TRUE(p.mark_advertised.empty());
}

TEST(PlanPoolSweep, StaleMessagesAreDeleted) {
  InstanceRecord claimed = idle("i-0000000b", 4);
  claimed.state = State::kClaimed;
  InstanceRecord other_class = idle("i-0000000c");
  other_class.resource_class = "large";
  InstanceRecord other_pool = idle("i-0000000e");
  other_pool.pool = "other";
  PoolView v = view({msg("old-gen", "i-0000000a", 2), msg("claimed", "i-0000000b", 3),
                     msg("wrong-class", "i-0000000c", 3), msg("no-record", "i-0000000d", 1),
                     msg("other-pool", "i-0000000e", 3)},
                    {idle("i-0000000a"), claimed, other_class, other_pool});
  v.fresh["i-0000000d"] = std::nullopt;
  auto p = plan_pool_sweep(v, {}, {}, kSweepNow, kGrace);
  for (const char* id : {"old-gen", "claimed", "wrong-class", "no-record", "other-pool"}) {
    EXPECT_EQ(verdict(p, id).fate, SweepFate::kDelete) << id;
    EXPECT_EQ(verdict(p, id).rule, "pool.stale") << id;
  }
  EXPECT_NE(verdict(p, "old-gen").reason.find("generation 2"), std::string::npos);
}

TEST(PlanPoolSweep, MalformedBodiesAreDeleted) {
  PoolView v = view({{"bad1", "rh1", "not json"}, {"bad2", "rh2", R"({"instance_id":"i-0000000a"})"},
                     {"bad3", "rh3", ""}},
                    {idle("i-0000000a")});
  auto p = plan_pool_sweep(v, {idle("i-0000000a")}, {}, kSweepNow, kGrace);
  for (const char* id : {"bad1", "bad2", "bad3"}) {
    EXPECT_EQ(verdict(p, id).fate, SweepFate::kDelete);
    EXPECT_EQ(verdict(p, id).rule, "pool.malformed");
    EXPECT_TRUE(verdict(p, id).instance_id.empty());
  }
  ASSERT_EQ(p.advertise.size(), 1u) << "the record behind a malformed message is still advertised";
}

TEST(PlanPoolSweep, DuplicatesKeepOneMessage) {
  auto p = plan_pool_sweep(view({msg("m1", "i-0000000a", 3), msg("m2", "i-0000000a", 3), msg("m3", "i-0000000a", 3)},
                                {idle("i-0000000a")}),
                           {idle("i-0000000a")}, {}, kSweepNow, kGrace);
  EXPECT_EQ(verdict(p, "m1").rule, "pool.valid");
  EXPECT_EQ(verdict(p, "m2").rule, "pool.duplicate");
  EXPECT_EQ(verdict(p, "m3").rule, "pool.duplicate");
  EXPECT_EQ(verdict(p, "m2").fate, SweepFate::kDelete);
}

TEST(PlanPoolSweep, AMessageReceivedTwiceIsOneMessageWithItsLatestReceipt) {
  auto p = plan_pool_sweep(view({msg("m1", "i-0000000a", 3, "first"), msg("m1", "i-0000000a", 3, "second")},
                                {idle("i-0000000a")}),
                           {idle("i-0000000a")}, {}, kSweepNow, kGrace);
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_EQ(p.messages[0].rule, "pool.valid");
  EXPECT_EQ(p.messages[0].message.receipt_handle, "second");
}

TEST(PlanPoolSweep, RetiringInstancesLoseTheirMessageAndAreNeverAdvertised) {
  auto p = plan_pool_sweep(view({msg("m1", "i-0000000a", 3)}, {idle("i-0000000a"), idle("i-0000000b")}),
                           {idle("i-0000000a"), idle("i-0000000b")}, {"i-0000000a", "i-0000000b"}, kSweepNow, kGrace);
  EXPECT_EQ(verdict(p, "m1").rule, "pool.retiring");
  EXPECT_EQ(verdict(p, "m1").fate, SweepFate::kDelete);
  EXPECT_TRUE(p.advertise.empty());
}

TEST(PlanPoolSweep, LostMessageIsReadvertisedWithTheFreshGeneration) {
  InstanceRecord fresh = idle("i-0000000a", 5);
  auto p = plan_pool_sweep(view({}, {fresh}), {idle("i-0000000a", 5)}, {}, kSweepNow, kGrace);
  ASSERT_EQ(p.advertise.size(), 1u);
  EXPECT_EQ(p.advertise[0].rule, "pool.lost");
  EXPECT_EQ(p.advertise[0].record.generation, 5);
}

TEST(PlanPoolSweep, IncompleteSweepNeverReadvertises) {
  auto p = plan_pool_sweep(view({}, {idle("i-0000000a")}, /*complete=*/false), {idle("i-0000000a")}, {}, kSweepNow,
                           kGrace);
  EXPECT_TRUE(p.advertise.empty());
  EXPECT_EQ(p.notes.size(), 1u);
}

// Found by the crash-point suite: a refresh killed mid-sweep hides the pool's messages for the
// sweep's visibility timeout; a release killed right after returning an instance (flag set, no
// message) must still be re-advertised by the next refresh, not only once those come back.
TEST(PlanPoolSweep, IncompleteSweepStillReadvertisesAnUnconfirmedRelease) {
  InstanceRecord r = idle("i-0000000a");
  r.advertise_pending = true;
  r.state_since_ms = kSweepNow - kGrace;
  auto p = plan_pool_sweep(view({}, {r, idle("i-0000000b")}, /*complete=*/false), {r, idle("i-0000000b")}, {}, kSweepNow,
                           kGrace);
  ASSERT_EQ(p.advertise.size(), 1u) << "only the unconfirmed one: i-0000000b's message may be in flight";
  EXPECT_EQ(p.advertise[0].record.instance_id, "i-0000000a");
  EXPECT_EQ(p.advertise[0].rule, "pool.lost");
  r.state_since_ms = kSweepNow - kGrace + 1;  // its release may still be sending it
  auto young = plan_pool_sweep(view({}, {r}, /*complete=*/false), {r}, {}, kSweepNow, kGrace);
  EXPECT_TRUE(young.advertise.empty());
}

TEST(PlanPoolSweep, RecordsThatMovedOnOrCouldNotBeReadAreLeftAlone) {
  InstanceRecord claimed = idle("i-0000000a", 4);
  claimed.state = State::kClaimed;
  PoolView v = view({msg("m9", "i-0000000f", 1)}, {claimed});
  v.fresh["i-0000000c"] = std::nullopt;
  auto p = plan_pool_sweep(v, {idle("i-0000000a"), idle("i-0000000b"), idle("i-0000000c")}, {}, kSweepNow, kGrace);
  EXPECT_TRUE(p.advertise.empty());
  EXPECT_EQ(verdict(p, "m9").fate, SweepFate::kRelease) << "unverified messages stay";
  EXPECT_EQ(verdict(p, "m9").rule, "pool.unverified");
}

TEST(PlanPoolSweep, AdvertisePendingGraceEdges) {
  InstanceRecord r = idle("i-0000000a");
  r.advertise_pending = true;
  r.state_since_ms = kSweepNow - kGrace + 1;  // a release is still sending it
  auto young = plan_pool_sweep(view({}, {r}), {r}, {}, kSweepNow, kGrace);
  EXPECT_TRUE(young.advertise.empty());
  r.state_since_ms = kSweepNow - kGrace;  // the grace is over: the release is presumed dead
  auto old = plan_pool_sweep(view({}, {r}), {r}, {}, kSweepNow, kGrace);
  ASSERT_EQ(old.advertise.size(), 1u);
  EXPECT_EQ(old.advertise[0].rule, "pool.lost");
}

TEST(PlanPoolSweep, PendingFlagWithAMessageIsOnlyCleared) {
  InstanceRecord r = idle("i-0000000a");
  r.advertise_pending = true;
  auto p = plan_pool_sweep(view({msg("m1", "i-0000000a", 3)}, {r}), {r}, {}, kSweepNow, kGrace);
  EXPECT_TRUE(p.advertise.empty());
  ASSERT_EQ(p.mark_advertised.size(), 1u);
  EXPECT_EQ(p.mark_advertised[0].rule, "pool.advertised");
}

TEST(PlanPoolSweep, AMessageForAnotherQueueDoesNotCountForThisOne) {
  InstanceRecord large = idle("i-0000000a");
  large.resource_class = "large";
  PoolView v = view({msg("m1", "i-0000000a", 3)}, {large});
  auto p = plan_pool_sweep(v, {}, {}, kSweepNow, kGrace);
  EXPECT_EQ(verdict(p, "m1").fate, SweepFate::kDelete);
  EXPECT_TRUE(p.advertise.empty()) << "it is advertised in its own class's sweep";
}

}  // namespace
}  // namespace runpool::pool
