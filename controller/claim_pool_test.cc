// Claiming from the pool for a scale set: runner configurations made a batch at once, and what
// becomes of them when a claim is lost, fails or stops; the time budget that a claim in progress
// extends. (Provision's claims are covered through provision_test.cc.)
#include "controller/claim_pool.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <set>
#include <stdexcept>

#include "common/pool/runner_name.h"
#include "common/pool/transitions.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::State;
using testing::World;

std::string id_of(int i) { return fmt::format("i-{:017x}", 0xcc000 + i); }

struct JitWorld : World {
  std::vector<std::vector<std::string>> mint_calls;  // the names of each call
  std::set<std::string> fail;                         // names whose configuration cannot be made
  std::vector<std::string> discarded;

  void fill(int n) {
    for (int i = 0; i < n; ++i) add_idle(id_of(i), 2);
  }
  ClaimPlan plan(int count) {
    ClaimPlan p;
    p.resource_class = "small";
    p.count = count;
    p.label = "linux-set";
    p.reg_url = "https://github.com/octo";
    p.deadline = clock.steady_now() + std::chrono::seconds(10);
    p.jit_configs = [this](const std::vector<std::string>& names) {
      mint_calls.push_back(names);
      std::vector<MintedJit> out;
      for (const std::string& n : names) {
        out.push_back(fail.count(n) ? MintedJit{std::nullopt, "HTTP 500"} : MintedJit{Secret("jit:" + n), ""});
      }
      return out;
    };
    p.jit_discard = [this](const std::string& name) { discarded.push_back(name); };
    return p;
  }
  std::string runner(int i, int64_t generation = 3) { return pool::runner_name(settings.pool, id_of(i), generation); }
};

TEST(ClaimPool, AScaleSetsConfigurationsAreMadeABatchAtOnce) {
  JitWorld w;
  w.fill(25);
  ClaimOutcome c = claim_from_pool(w.ctx, w.plan(23));
  ASSERT_EQ(c.claimed.size(), 23u) << c.error;
  // Batches of 10, 10 and 3 (the count left), each one call.
  ASSERT_EQ(w.mint_calls.size(), 3u);
  EXPECT_EQ(w.mint_calls[0].size(), 10u);
  EXPECT_EQ(w.mint_calls[1].size(), 10u);
  EXPECT_EQ(w.mint_calls[2].size(), 3u);
  EXPECT_EQ(w.mint_calls[0][0], w.runner(0)) << "named for the claim's generation";
  for (const pool::InstanceRecord& r : c.claimed) {
    EXPECT_EQ(w.record(r.instance_id).state, State::kClaimed);
    pool::OpenedField jit = pool::open_field(testing::test_seal_keys(), 3, "jit_config", w.record(r.instance_id).jit_config);
    EXPECT_EQ(jit.value.value_or(Secret()).reveal(), "jit:" + pool::runner_name(w.settings.pool, r.instance_id, 3))
        << jit.error;
  }
  EXPECT_TRUE(w.discarded.empty());
  EXPECT_EQ(w.queue.bodies("small").size(), 2u) << "the two not needed stay in the pool";
  EXPECT_TRUE(w.queue.all_visible());
}

TEST(ClaimPool, AConfigurationThatCannotBeMadeLeavesItsInstanceInThePoolAndStopsAfterTheBatch) {
  JitWorld w;
  w.fill(15);
  w.fail = {w.runner(3)};
  ClaimOutcome c = claim_from_pool(w.ctx, w.plan(15));
  EXPECT_EQ(c.claimed.size(), 9u) << "the rest of the batch is claimed with the configurations made";
  EXPECT_NE(c.error.find("HTTP 500"), std::string::npos) << c.error;
  EXPECT_EQ(w.mint_calls.size(), 1u) << "no further batch";
  EXPECT_EQ(w.record(id_of(3)).state, State::kIdle);
  EXPECT_EQ(w.queue.bodies("small").size(), 6u) << "its message and the unread five stay";
  EXPECT_TRUE(w.queue.all_visible());
}

TEST(ClaimPool, ALostRaceDiscardsItsRunnerAndTheNextInstanceGetsOneMade) {
  JitWorld w;
  w.fill(3);
  w.table.before_transition = [&](const std::string& id, const pool::Expect&, const pool::LifecycleChange& ch) {
    if (id != id_of(0) || !ch.state || *ch.state != State::kClaimed) return;
    auto r = *w.table.inner.get(id);  // another controller claims it first
    auto step = pool::claim(r, "other", Secret("t"), "u", w.now(), w.settings.timeouts);
    ASSERT_TRUE(w.table.inner.transition(id, step.expect, step.change));
  };
  ClaimOutcome c = claim_from_pool(w.ctx, w.plan(2));
  ASSERT_EQ(c.claimed.size(), 2u) << c.error;
  EXPECT_EQ(w.discarded, std::vector<std::string>{w.runner(0)});
  ASSERT_EQ(w.mint_calls.size(), 2u);
  EXPECT_EQ(w.mint_calls[0], (std::vector<std::string>{w.runner(0), w.runner(1)}));
  EXPECT_EQ(w.mint_calls[1], std::vector<std::string>{w.runner(2)}) << "made when needed";
}

TEST(ClaimPool, StoppingMidBatchRemovesTheRunnersMadeForTheRest) {
  JitWorld w;
  w.fill(5);
  ClaimPlan p = w.plan(5);
  int asked = 0;
  p.keep_going = [&] { return ++asked <= 3; };  // the batch's check, then two claims
  ClaimOutcome c = claim_from_pool(w.ctx, p);
  EXPECT_EQ(c.claimed.size(), 2u);
  EXPECT_EQ(std::set<std::string>(w.discarded.begin(), w.discarded.end()),
            (std::set<std::string>{w.runner(2), w.runner(3), w.runner(4)}));
  for (int i = 2; i < 5; ++i) EXPECT_EQ(w.record(id_of(i)).state, State::kIdle);
  EXPECT_EQ(w.queue.bodies("small").size(), 3u);
  EXPECT_TRUE(w.queue.all_visible());
}

TEST(ClaimPool, AnErrorMidBatchRemovesTheRunnersMadeForTheRest) {
  JitWorld w;
  w.fill(4);
  w.table.before_transition = [&](const std::string& id, const pool::Expect&, const pool::LifecycleChange&) {
    if (id == id_of(1)) throw std::runtime_error("DynamoDB unreachable");
  };
  ClaimOutcome c = claim_from_pool(w.ctx, w.plan(4));
  EXPECT_EQ(c.claimed.size(), 1u);
  EXPECT_EQ(c.error, "DynamoDB unreachable");
  EXPECT_EQ(std::set<std::string>(w.discarded.begin(), w.discarded.end()),
            (std::set<std::string>{w.runner(1), w.runner(2), w.runner(3)}))
      << "the one whose write failed too";
  EXPECT_TRUE(w.queue.all_visible());
}

// Each claim takes 2 s here. A budget of 5 s alone ends the claim after its first batch; extended
// by every claim, it goes on while claims keep coming.
TEST(ClaimPool, ClaimsInProgressExtendTheBudget) {
  for (bool extend : {false, true}) {
    JitWorld w;
    w.fill(25);
    w.table.before_transition = [&](const std::string&, const pool::Expect&, const pool::LifecycleChange&) {
      w.clock.clock.sleep_for(std::chrono::seconds(2));
    };
    ClaimPlan p = w.plan(25);
    p.deadline = w.clock.steady_now() + std::chrono::seconds(5);
    if (extend) p.extend_per_claim = std::chrono::seconds(5);
    ClaimOutcome c = claim_from_pool(w.ctx, p);
    EXPECT_EQ(c.claimed.size(), extend ? 25u : 10u) << "extend " << extend;
  }
}

TEST(ClaimPool, ADuplicateMessageIsNotGivenARunner) {
  JitWorld w;
  w.fill(2);
  w.queue.advertise("small", {id_of(0), 2});  // sent twice
  ClaimOutcome c = claim_from_pool(w.ctx, w.plan(3));
  EXPECT_EQ(c.claimed.size(), 2u);
  ASSERT_FALSE(w.mint_calls.empty());
  EXPECT_EQ(w.mint_calls[0], (std::vector<std::string>{w.runner(0), w.runner(1)}));
  EXPECT_TRUE(w.discarded.empty());
}

TEST(ClaimPool, ClaimedInstancesAreTaggedWithTheirNewLabelInOneCall) {
  JitWorld w;
  w.fill(3);
  ClaimOutcome c = claim_from_pool(w.ctx, w.plan(2));
  ASSERT_EQ(c.claimed.size(), 2u) << c.error;
  EXPECT_EQ(w.compute.tag_calls, 1);
  ASSERT_EQ(w.compute.relabelled.size(), 2u);
  for (const pool::InstanceRecord& r : c.claimed) EXPECT_EQ(w.compute.relabelled[r.instance_id], "linux-set");
  // Tagging is for cost reports only: its failure leaves the claim as it is.
  w.compute.fail_tag = true;
  ClaimOutcome d = claim_from_pool(w.ctx, w.plan(1));
  EXPECT_EQ(d.claimed.size(), 1u);
  EXPECT_TRUE(d.error.empty()) << d.error;
  // Nothing claimed, nothing tagged.
  ClaimOutcome none = claim_from_pool(w.ctx, w.plan(1));
  EXPECT_TRUE(none.claimed.empty());
  EXPECT_EQ(w.compute.tag_calls, 2);
}

}  // namespace
}  // namespace runpool::controller
