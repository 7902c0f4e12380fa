#include "controller/await_agents.h"

#include <gtest/gtest.h>

#include "common/pool/transitions.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::AgentSignal;
using pool::State;
using pool::Verdict;

// FakeCompute that counts DescribeInstances calls and the ids each asked about, and can fail.
class CountingCompute final : public Compute {
 public:
  explicit CountingCompute(testing::FakeCompute& inner) : inner_(inner) {}
  aws::CreateFleetResult create_fleet(const aws::CreateFleetRequest& r) override { return inner_.create_fleet(r); }
  void terminate(const std::vector<std::string>& ids) override { inner_.terminate(ids); }
  void tag_label(const std::vector<std::string>& ids, const std::string& l) override { inner_.tag_label(ids, l); }
  std::vector<aws::Instance> describe(const std::vector<std::string>& ids) override {
    asked.push_back(ids.size());
    if (fail) throw aws::AwsError("ec2", "DescribeInstances", 500, "InternalError", "injected");
    return inner_.describe(ids);
  }
  std::vector<aws::Instance> pool_instances() override { return inner_.pool_instances(); }
  std::vector<size_t> asked;  // ids per call
  bool fail = false;

 private:
  testing::FakeCompute& inner_;
};

class AwaitAgents : public ::testing::Test {
 protected:
  void SetUp() override {
    w.agents_on = false;
    for (int i = 1; i <= 3; ++i) {
      const std::string id = "i-" + std::to_string(i);
      pool::InstanceRecord r = pool::launched_record(id, "ci", "run-1", "small", pool::UsageClass::kSpot, "c7i.large",
                                                     Secret("reg"), "https://github.com/acme", w.now(), {});
      w.table.inner.create(r);
      w.compute.launched.push_back(id);
      items.push_back(AwaitItem{r, false});
    }
  }
  // The agent of `id` reports `registered` for its generation.
  void registers(const std::string& id) {
    pool::AgentReport a;
    a.generation = w.table.inner.get(id)->generation;  // unlogged: the reads are the wait's
    a.signal = AgentSignal::kRegistered;
    w.table.inner.report(id, a);
  }
  AwaitOptions options(Duration timeout) {
    AwaitOptions o;
    o.awaited = pool::Awaited::kRegistered;
    o.deadline = w.clock.steady_now() + timeout;
    return o;
  }
  // Marks running on `write`, finishes on `done`, waits otherwise; records every verdict.
  AwaitResult run(const AwaitOptions& o) {
    Context ctx{w.settings, w.clock, w.table, w.queue, ec2, w.github, w.out, w.cancelled};
    return await_agents(ctx, items, o, [&](const pool::HandshakeFacts& f, const pool::HandshakeDecision& d) {
      seen.push_back(f.written->instance_id + " " + std::string(pool::verdict_name(d.verdict)));
      switch (d.verdict) {
        case Verdict::kWrite: {
          pool::Step s = pool::mark_running(*f.current, w.now(), {});
          w.table.transition(f.current->instance_id, s.expect, s.change);
          return AwaitAction::kKeep;
        }
        case Verdict::kWait: return AwaitAction::kKeep;
        default: return AwaitAction::kResolve;
      }
    });
  }

  testing::World w;
  CountingCompute ec2{w.compute};
  std::vector<AwaitItem> items;
  std::vector<std::string> seen;
};

TEST_F(AwaitAgents, OneBatchReadPerRoundOfWhatIsStillWaitedFor) {
  int round = 0;
  w.on_tick = [&] {
    ++round;
    if (round == 1) registers("i-1");
    if (round == 2) {
      registers("i-2");
      registers("i-3");
    }
  };
  AwaitResult r = run(options(std::chrono::minutes(1)));
  EXPECT_EQ(r.end, AwaitEnd::kAllResolved);
  EXPECT_TRUE(r.pending.empty());
  // round 0: 3 wait; 1: i-1 written; 2: i-1 done, i-2 and i-3 written; 3: both done.
  EXPECT_EQ(w.table.reads, (std::vector<std::string>{"get_many 3", "get_many 3", "get_many 3", "get_many 2"}));
  EXPECT_EQ(w.record("i-2").state, State::kRunning);
  EXPECT_TRUE(ec2.asked.empty()) << "under 5 s: no look at EC2";
}

TEST_F(AwaitAgents, LooksAtEc2EveryFewSecondsOnlyForThoseStillWaitingAndDropsTheDead) {
  w.compute.terminated.insert("i-2");
  w.on_tick = [&] { registers("i-1"); };
  AwaitOptions o = options(std::chrono::seconds(12));
  AwaitResult r = run(o);
  EXPECT_EQ(r.end, AwaitEnd::kTimedOut);
  ASSERT_EQ(r.pending.size(), 1u);
  EXPECT_EQ(r.pending[0].written.instance_id, "i-3");
  EXPECT_NE(std::find(seen.begin(), seen.end(), "i-2 gone"), seen.end()) << ::testing::PrintToString(seen);
  // Looks at 5 s and 10 s (poll 500 ms); the first asks about i-2 and i-3 (i-1 was written already).
  ASSERT_EQ(ec2.asked.size(), 2u);
  EXPECT_EQ(ec2.asked[0], 2u);
  EXPECT_EQ(ec2.asked[1], 1u);

  // At once when asked to, before anyone could register.
  seen.clear();
  ec2.asked.clear();
  o = options(std::chrono::seconds(1));
  o.look_at_ec2_first = true;
  items = {items[2]};
  run(o);
  ASSERT_FALSE(ec2.asked.empty());
}

TEST_F(AwaitAgents, AFailedEc2LookIsWaitedOn) {
  w.compute.terminated.insert("i-2");
  ec2.fail = true;
  AwaitResult r = run(options(std::chrono::seconds(6)));
  EXPECT_EQ(r.end, AwaitEnd::kTimedOut);
  EXPECT_EQ(r.pending.size(), 3u);
}

TEST_F(AwaitAgents, EndsAtTheDeadlineNotLater) {
  const auto start = w.clock.steady_now();
  AwaitResult r = run(options(std::chrono::seconds(3)));
  EXPECT_EQ(r.end, AwaitEnd::kTimedOut);
  EXPECT_EQ(r.pending.size(), 3u);
  const auto took = std::chrono::duration_cast<Duration>(w.clock.steady_now() - start);
  EXPECT_GE(took, std::chrono::seconds(3));
  EXPECT_LE(took, std::chrono::milliseconds(3500));
}

TEST_F(AwaitAgents, CancellationEndsItUnlessTheWaitMustFinish) {
  w.on_tick = [&] { w.cancelled = true; };
  AwaitOptions o = options(std::chrono::minutes(1));
  AwaitResult r = run(o);
  EXPECT_EQ(r.end, AwaitEnd::kCancelled);
  EXPECT_EQ(r.pending.size(), 3u);
  EXPECT_EQ(w.table.reads.size(), 2u) << "one round after the cancel's tick";

  o.stop_on_cancel = false;
  o.deadline = w.clock.steady_now() + std::chrono::seconds(2);
  EXPECT_EQ(run(o).end, AwaitEnd::kTimedOut);
}

TEST_F(AwaitAgents, TheHandlerCanEndTheWholeWait) {
  Context ctx{w.settings, w.clock, w.table, w.queue, ec2, w.github, w.out, w.cancelled};
  pool::AgentReport a;
  a.generation = w.table.inner.get("i-2")->generation;
  a.signal = AgentSignal::kFailed;
  a.signal_detail = "pre-run script failed";
  w.table.inner.report("i-2", a);
  std::string why;
  AwaitResult r = await_agents(ctx, items, options(std::chrono::minutes(1)),
                               [&](const pool::HandshakeFacts& f, const pool::HandshakeDecision& d) {
    if (d.verdict != Verdict::kFail) return AwaitAction::kKeep;
    why = pool::handshake_problem(f.written->instance_id, d);
    return AwaitAction::kStop;
  });
  EXPECT_EQ(r.end, AwaitEnd::kStopped);
  EXPECT_EQ(r.pending.size(), 3u);
  EXPECT_EQ(why, "instance i-2: its agent failed to register: pre-run script failed");
  EXPECT_EQ(w.table.reads.size(), 1u);
}

TEST_F(AwaitAgents, AFailedReadIsRetriedOrEndsTheWaitAsAsked) {
  w.table.fail_get_many = 1;
  w.on_tick = [&] {
    for (const char* id : {"i-1", "i-2", "i-3"}) registers(id);
  };
  EXPECT_EQ(run(options(std::chrono::minutes(1))).end, AwaitEnd::kAllResolved);

  w.table.fail_get_many = 1;
  AwaitOptions o = options(std::chrono::minutes(1));
  o.retry_failed_reads = false;
  EXPECT_THROW(run(o), aws::AwsError);
}

TEST_F(AwaitAgents, AHandlerThatThrowsKeepsItsRecordWaitedFor) {
  Context ctx{w.settings, w.clock, w.table, w.queue, ec2, w.github, w.out, w.cancelled};
  int calls = 0;
  AwaitResult r = await_agents(ctx, {items[0]}, options(std::chrono::seconds(2)),
                               [&](const pool::HandshakeFacts&, const pool::HandshakeDecision&) -> AwaitAction {
    if (++calls == 1) throw std::runtime_error("a transition failed");
    return AwaitAction::kResolve;
  });
  EXPECT_EQ(r.end, AwaitEnd::kAllResolved);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace runpool::controller
