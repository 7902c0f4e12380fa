#include "common/pool/runner_listing.h"

#include <gtest/gtest.h>

#include "common/pool/runner_name.h"

namespace runpool::pool {
namespace {

constexpr int64_t kMin = 60'000;

Lease marker(int64_t listed_ms, int64_t generation = 3) {
  return Lease{runner_listing_marker("ci"), "host-a", generation, listed_ms};
}

TEST(RunnerListing, DecisionTable) {
  const ListingPolicy p{30 * kMin, 5 * kMin};
  const int64_t now = 1000 * kMin;
  struct Case {
    const char* name;
    std::optional<Lease> marker;
    bool dry_run;
    ListingMode mode;
    bool write;
    bool create;
    int64_t read_generation;
    int64_t since_ms;
  };
  const Case cases[] = {
      {"never listed: list, create the marker", std::nullopt, false, ListingMode::kFull, true, true, 0, now - 5 * kMin},
      {"never listed, dry run: list, write nothing", std::nullopt, true, ListingMode::kFull, false, false, 0,
       now - 5 * kMin},
      {"listed 1 min ago: by id", marker(now - kMin), false, ListingMode::kById, false, false, 0, now - 6 * kMin},
      {"listed just under the interval ago: by id", marker(now - 30 * kMin + 1), false, ListingMode::kById, false,
       false, 0, now - 35 * kMin + 1},
      {"listed the interval ago: list, replace generation 3", marker(now - 30 * kMin), false, ListingMode::kFull, true,
       false, 3, now - 35 * kMin},
      {"listed long ago, dry run: list, write nothing", marker(now - 90 * kMin), true, ListingMode::kFull, false, false,
       0, now - 95 * kMin},
      {"marker ahead of this clock: by id", marker(now + kMin), false, ListingMode::kById, false, false, 0,
       now - 4 * kMin},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ListingDecision d = decide_runner_listing("ci", c.marker, now, "host-b", c.dry_run, p);
    EXPECT_EQ(d.mode, c.mode);
    EXPECT_EQ(d.write.has_value(), c.write);
    EXPECT_EQ(d.create, c.create);
    EXPECT_EQ(d.read_generation, c.read_generation);
    EXPECT_EQ(d.since_ms, c.since_ms);
    EXPECT_FALSE(d.why.empty());
    if (d.write) {
      EXPECT_EQ(d.write->name, "runner-listing/ci");
      EXPECT_EQ(d.write->holder, "host-b");
      EXPECT_EQ(d.write->expires_ms, now);
      EXPECT_EQ(d.write->generation, c.read_generation + 1);
    }
  }
}

TEST(RunnerListing, AFailedListingGivesTheMarkerBackDueAtOnce) {
  const ListingPolicy p{};
  const Lease written = marker(1000 * kMin, 4);
  const Lease back = listing_given_back(written);
  EXPECT_EQ(back.name, written.name);
  EXPECT_EQ(back.generation, 5);
  EXPECT_EQ(back.expires_ms, 0);
  EXPECT_EQ(decide_runner_listing("ci", back, 1000 * kMin + 1, "host-b", false, p).mode, ListingMode::kFull);
}

InstanceRecord rec(std::string id, State s, int64_t since_ms, int64_t runner_id, std::string pool = "ci") {
  InstanceRecord r;
  r.instance_id = std::move(id);
  r.pool = std::move(pool);
  r.state = s;
  r.generation = 2;
  r.state_since_ms = since_ms;
  r.runner_id = runner_id;
  return r;
}

TEST(RunnerListing, LooksUpSettledRecordsChangedSince) {
  const int64_t since = 500;
  const std::vector<InstanceRecord> records = {
      rec("i-01", State::kIdle, 500, 11),         // changed at since: looked up
      rec("i-02", State::kIdle, 499, 12),         // before: the last listing saw it
      rec("i-03", State::kTerminating, 900, 13),  // looked up
      rec("i-04", State::kTerminated, 900, 14),   // looked up
      rec("i-05", State::kRunning, 900, 15),      // serving: not a ghost
      rec("i-06", State::kDraining, 900, 16),     // not settled
      rec("i-07", State::kIdle, 900, 0),          // names no runner
      rec("i-08", State::kIdle, 900, 17, "other"),  // another pool's
      rec("i-09", State::kIdle, 900, 11),         // the same id twice: asked once
  };
  EXPECT_EQ(runners_to_look_up(records, "ci", since), (std::vector<int64_t>{11, 13, 14}));
  EXPECT_TRUE(runners_to_look_up({}, "ci", since).empty());
}

TEST(RunnerListing, FullListingWhenAnAgentWordNeedsConfirming) {
  auto with = [](State s, AgentSignal sig, int64_t sig_gen = 2) {
    InstanceRecord r = rec("i-01", s, 0, 11);
    r.signal = sig;
    r.signal_generation = sig_gen;
    return r;
  };
  struct Case {
    InstanceRecord r;
    bool full;
  };
  const Case cases[] = {
      {with(State::kRunning, AgentSignal::kFailed), true},
      {with(State::kCreated, AgentSignal::kFailed), true},
      {with(State::kClaimed, AgentSignal::kFailed), true},
      {with(State::kDraining, AgentSignal::kFailed), true},
      {with(State::kDraining, AgentSignal::kDrained), true},
      {with(State::kRunning, AgentSignal::kDrained), false},
      {with(State::kIdle, AgentSignal::kFailed), false},
      {with(State::kRunning, AgentSignal::kRegistered), false},
      {with(State::kRunning, AgentSignal::kFailed, 1), false},  // an older generation's word
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(state_name(c.r.state)) + " " + std::string(agent_signal_name(c.r.signal)));
    EXPECT_EQ(needs_full_listing({c.r}, "ci"), c.full);
    EXPECT_FALSE(needs_full_listing({c.r}, "other"));
  }
}

TEST(RunnerListing, AListingAfterTheScanKeepsOnlyRecordedInstancesRunners) {
  const std::vector<InstanceRecord> records = {rec("i-0000000a", State::kRunning, 0, 1),
                                               rec("i-0000000c", State::kIdle, 0, 3, "other")};
  const std::vector<RunnerView> runners = {
      {1, runner_name("ci", "i-0000000a", 2), false, true},
      {2, runner_name("ci", "i-0000000b", 1), false, true},     // no record: may be younger than the scan
      {3, runner_name("other", "i-0000000c", 1), false, true},  // another pool's
      {4, "laptop", true, true},                            // not a pool runner
  };
  auto kept = keep_recorded(runners, records, "ci");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].id, 1);
}

}  // namespace
}  // namespace runpool::pool
