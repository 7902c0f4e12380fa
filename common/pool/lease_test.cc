#include "common/pool/lease.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

constexpr int64_t kLeaseNow = 1'800'000'000'000;
const LeaseTimes kTimes{30'000, 10'000};

Lease held_by(const std::string& holder, int64_t generation, int64_t expires_ms) {
  return {"scaleset/p/linux", holder, generation, expires_ms};
}

LeaseDecision decide(const std::optional<Lease>& current, const std::optional<Lease>& mine, int64_t now = kLeaseNow) {
  return decide_lease("scaleset/p/linux", current, "a", mine, now, kTimes);
}

TEST(Lease, NobodyHoldingItCreatesGenerationOne) {
  LeaseDecision d = decide(std::nullopt, std::nullopt);
  EXPECT_EQ(d.move, LeaseMove::kCreate);
  EXPECT_EQ(d.next, held_by("a", 1, kLeaseNow + 30'000));
}

TEST(Lease, AnotherLiveHolderIsWaitedOutUntilItsExpiry) {
  LeaseDecision d = decide(held_by("b", 4, kLeaseNow + 5'000), std::nullopt);
  EXPECT_EQ(d.move, LeaseMove::kWait);
  EXPECT_EQ(d.recheck_ms, kLeaseNow + 5'000);
  EXPECT_NE(d.why.find("b"), std::string::npos);
}

TEST(Lease, AnExpiredHolderIsTakenOverWithTheNextGeneration) {
  for (int64_t expires : {kLeaseNow, kLeaseNow - 1, kLeaseNow - 3'600'000}) {
    LeaseDecision d = decide(held_by("b", 4, expires), std::nullopt);
    EXPECT_EQ(d.move, LeaseMove::kTakeOver) << expires;
    EXPECT_EQ(d.next, held_by("a", 5, kLeaseNow + 30'000));
  }
}

TEST(Lease, OurOwnNameWithoutKnowingTheGenerationIsTreatedAsAnothers) {
  // A restarted process under the same holder name must not act on its predecessor's generation.
  EXPECT_EQ(decide(held_by("a", 4, kLeaseNow + 5'000), std::nullopt).move, LeaseMove::kWait);
  LeaseDecision d = decide(held_by("a", 4, kLeaseNow - 1), std::nullopt);
  EXPECT_EQ(d.move, LeaseMove::kTakeOver);
  EXPECT_EQ(d.next.generation, 5);
}

TEST(Lease, OursIsRenewedFromRenewBeforeExpiryOnKeepingTheGeneration) {
  const Lease mine = held_by("a", 7, kLeaseNow + 10'001);
  LeaseDecision early = decide(mine, mine);
  EXPECT_EQ(early.move, LeaseMove::kWait);
  EXPECT_EQ(early.recheck_ms, kLeaseNow + 1);
  for (int64_t expires : {kLeaseNow + 10'000, kLeaseNow + 1, kLeaseNow, kLeaseNow - 60'000}) {
    const Lease m = held_by("a", 7, expires);
    LeaseDecision d = decide(m, m);
    EXPECT_EQ(d.move, LeaseMove::kRenew) << expires;  // late too: the generation is still ours
    EXPECT_EQ(d.next, held_by("a", 7, kLeaseNow + 30'000));
  }
}

TEST(Lease, OursTakenOverOrDeletedIsLost) {
  const Lease mine = held_by("a", 7, kLeaseNow + 20'000);
  LeaseDecision taken = decide(held_by("b", 8, kLeaseNow + 30'000), mine);
  EXPECT_EQ(taken.move, LeaseMove::kLost);
  EXPECT_NE(taken.why.find("b"), std::string::npos);
  // A newer generation under our own name (a restarted process took it over) is not ours either.
  EXPECT_EQ(decide(held_by("a", 8, kLeaseNow + 30'000), mine).move, LeaseMove::kLost);
  EXPECT_EQ(decide(std::nullopt, mine).move, LeaseMove::kLost);
}

TEST(Lease, HeldOnlyWhileTheReadLeaseIsOursAndLive) {
  const Lease mine = held_by("a", 7, kLeaseNow + 1'000);
  EXPECT_TRUE(lease_held(mine, mine, kLeaseNow));
  EXPECT_FALSE(lease_held(mine, mine, kLeaseNow + 1'000));
  EXPECT_FALSE(lease_held(std::nullopt, mine, kLeaseNow));
  EXPECT_FALSE(lease_held(held_by("a", 8, kLeaseNow + 1'000), mine, kLeaseNow));
  EXPECT_FALSE(lease_held(held_by("b", 7, kLeaseNow + 1'000), mine, kLeaseNow));
}

// Two contenders stepping over one lease with the writes' conditions: at no time do both hold it.
TEST(Lease, TwoContendersNeverHoldItAtOnce) {
  std::optional<Lease> item;  // the table
  std::optional<Lease> mine[2];
  const std::string names[2] = {"a", "b"};
  int64_t now = kLeaseNow;
  int takeovers = 0;
  for (int step = 0; step < 400; ++step, now += 3'000) {
    for (int i = 0; i < 2; ++i) {
      // Each in turn is paused for a minute (a stalled process, past its lease), then resumes.
      if (i == (step / 50) % 2 && step % 50 >= 20 && step % 50 < 40) continue;
      LeaseDecision d = decide_lease("scaleset/p/linux", item, names[i], mine[i], now, kTimes);
      switch (d.move) {
        case LeaseMove::kCreate:
          if (!item) item = d.next, mine[i] = d.next;
          break;
        case LeaseMove::kRenew:
        case LeaseMove::kTakeOver:
          if (item && item->generation == (d.move == LeaseMove::kRenew ? d.next.generation : d.next.generation - 1)) {
            takeovers += d.move == LeaseMove::kTakeOver;
            item = d.next, mine[i] = d.next;
          }
          break;
        case LeaseMove::kLost: mine[i].reset(); break;
        case LeaseMove::kWait: break;
      }
    }
    const bool a = mine[0] && lease_held(item, *mine[0], now);
    const bool b = mine[1] && lease_held(item, *mine[1], now);
    ASSERT_FALSE(a && b) << "step " << step;
  }
  EXPECT_GT(takeovers, 0);
}

TEST(Lease, MovesHaveNames) {
  for (LeaseMove m : {LeaseMove::kCreate, LeaseMove::kRenew, LeaseMove::kTakeOver, LeaseMove::kWait, LeaseMove::kLost}) {
    EXPECT_STRNE(lease_move_name(m), "unknown");
  }
}

}  // namespace
}  // namespace runpool::pool
