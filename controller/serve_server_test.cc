// Server's loops turned one at a time on a fake clock (serve_server.h): the lease keeper's turn
// (ServeLease::tick), the listener's (listen_turn) and the serving loop's (turn), in the order the
// test says, against the scale-set service, the lease store and the pool in memory. No thread
// races real time: where the threads would run side by side, the test interleaves their turns.
#include "controller/serve_server.h"

#include <gtest/gtest.h>

#include "controller/serve_test_fakes.h"

namespace runpool::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeScaleSetService;
using testing::ServeWorld;

// A lease keeper's thread, as far as time goes: its next turn when the last one said.
struct KeeperTurns {
  ServeLease& lease;
  Clock& clock;
  SteadyTime due{};
  void operator()() {
    if (clock.steady_now() >= due) due = clock.steady_now() + milliseconds(lease.tick());
  }
};

class ServeServer : public ::testing::Test {
 protected:
  ServeWorld w;
  Server& server = w.server;
  KeeperTurns ours{w.server.lease(), w.world.clock};
  KeeperTurns standby{w.standby, w.world.clock};

  // Takes the free lease and opens the session, as the first turns of a fresh holder do.
  void start_serving() {
    ours();
    ASSERT_TRUE(server.fenced());
    ASSERT_EQ(server.turn(), Duration{0});
    ASSERT_TRUE(server.in_session());
  }
  // A runner of the set busy with its job on `id` (generation 3), as a claim made it. Its name.
  std::string busy_runner(const std::string& id) {
    pool::InstanceRecord r = testing::idle_record(id, w.world.now(), 3);
    r.state = pool::State::kRunning;
    r.label = "ci";
    r.busy = true;
    r.signal = pool::AgentSignal::kRegistered;
    r.signal_generation = 3;
    EXPECT_TRUE(w.world.table.create(r));
    const std::string name = pool::runner_name("ci", id, 3);
    w.scale_sets.generate_jit_config(*w.service.set_id(), name);
    return name;
  }
  // The session ended by the set's deletion; the set created again and a new session opened.
  void reopened_on_a_new_set(int64_t old_set) {
    ASSERT_TRUE(server.session_end());
    ASSERT_EQ(server.session_end()->move, SessionMove::kReopen);
    EXPECT_EQ(server.turn(), Duration{0});
    EXPECT_EQ(server.turn(), Duration{0});
    ASSERT_TRUE(server.in_session());
    ASSERT_GT(*w.service.set_id(), old_set) << "created again";
  }
  // `d` of the world in steps of a second, the keepers turning when due and, if `listening`, the
  // listener polling at every step.
  void run_for(Duration d, bool our_keeper, bool listening) {
    for (Duration t{0}; t < d; t += seconds(1)) {
      w.advance(seconds(1));
      if (our_keeper) ours();
      standby();
      if (listening && server.in_session()) server.listen_turn();
    }
  }
};

TEST_F(ServeServer, StandsByUntilAnotherHoldersLeaseExpiresThenTakesItAndServes) {
  const int64_t t0 = w.world.now();
  ASSERT_TRUE(w.leases.create({serve_lease_name(w.world.settings), "host-z:9", 1, t0 + 20'000}));
  ours();
  EXPECT_FALSE(server.fenced());
  EXPECT_EQ(server.turn(), milliseconds(200));
  EXPECT_FALSE(server.in_session());
  EXPECT_EQ(w.http.count(), 0u) << "nothing is asked of GitHub while standing by";

  w.advance(seconds(15));
  ours();
  EXPECT_FALSE(server.fenced()) << "the other holder's lease runs 5 s more";
  w.advance(seconds(6));
  ours();
  ASSERT_TRUE(w.we_hold());
  EXPECT_EQ(w.lease()->generation, 2) << "taken over";
  EXPECT_TRUE(server.fenced());

  EXPECT_EQ(server.turn(), Duration{0}) << "the set looked up (created), its session opened";
  EXPECT_TRUE(server.in_session());
  EXPECT_EQ(w.service.counts().sessions_created, 1);
  EXPECT_EQ(server.turn(), kQuietPassWait) << "a reconcile pass: an empty set wanting none is quiet";
  EXPECT_EQ(server.listen_turn(), Duration{0}) << "a poll, nothing to say";
}

// Held, the lease is looked at only when it is due for renewal (a third of its time after the
// last write): nobody else writes it before it expires. Standing by, every sixth of its time.
TEST_F(ServeServer, AHeldLeaseIsLookedAtOnlyWhenItIsRenewed) {
  const int64_t ttl = w.world.settings.serve_lease_ttl.count();
  EXPECT_EQ(server.lease().tick(), ttl / 3) << "taken: the next turn is its renewal";
  ASSERT_TRUE(w.we_hold());
  const int64_t expires = w.lease()->expires_ms;
  w.advance(milliseconds(ttl / 3));
  EXPECT_EQ(server.lease().tick(), ttl / 3) << "renewed: the next one a third of its time later";
  EXPECT_GT(w.lease()->expires_ms, expires);
  EXPECT_EQ(w.standby.tick(), ttl / 6) << "a standby looks every sixth of the lease's time";
}

TEST_F(ServeServer, ALeaseRunningOutStopsTheServingAndGivesTheSessionUpBeforeTheStandbyTakesIt) {
  start_serving();
  // Our keeper gets no turn (a paused process): with a third of the lease's time left, nothing more
  // is done, though the lease is still ours for 10 s.
  w.advance(seconds(19));
  EXPECT_TRUE(server.fenced());
  w.advance(seconds(2));
  EXPECT_FALSE(server.fenced());
  EXPECT_TRUE(w.we_hold());

  EXPECT_EQ(server.turn(), Duration{0});
  EXPECT_FALSE(server.in_session());
  EXPECT_EQ(w.service.counts().sessions_deleted, 1) << "the session is closed, so the next holder need not wait";
  EXPECT_EQ(w.service.live_session(), "");

  w.advance(seconds(10));
  standby();
  EXPECT_EQ(w.lease()->holder, "host-b:2");
  ours();
  EXPECT_FALSE(server.fenced()) << "taken over: ours no more";
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(server.turn(), milliseconds(200));
    run_for(seconds(5), true, false);
  }
  EXPECT_FALSE(server.in_session());
  EXPECT_EQ(w.service.counts().sessions_created, 1) << "no session while another holds the lease";
  EXPECT_EQ(w.lease()->holder, "host-b:2");
}

TEST_F(ServeServer, ASessionAnswered404EndsAndANewOneIsOpenedUnderTheSameLease) {
  start_serving();
  w.service.forget_session();
  EXPECT_EQ(server.listen_turn(), std::nullopt) << "the listener ends with its session";
  ASSERT_TRUE(server.session_end());
  EXPECT_EQ(server.session_end()->move, SessionMove::kReopen);
  EXPECT_TRUE(server.fenced()) << "the lease is kept: a new session serves at once";

  EXPECT_EQ(server.turn(), Duration{0}) << "the session ended; the first new one is not paced";
  EXPECT_FALSE(server.in_session());
  EXPECT_EQ(server.turn(), Duration{0});
  EXPECT_TRUE(server.in_session());
  EXPECT_EQ(w.service.live_session(), "session-2");
  EXPECT_EQ(server.session_end(), std::nullopt);
  EXPECT_EQ(server.listen_turn(), Duration{0});
  EXPECT_TRUE(w.we_hold());
}

TEST_F(ServeServer, AnotherListenersLiveSessionIsWaitedOutHoldingTheLease) {
  ours();
  w.service.open_foreign_session();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(server.turn(), w.world.settings.serve_retry_wait);
    EXPECT_FALSE(server.in_session());
    run_for(w.world.settings.serve_retry_wait, true, false);
  }
  EXPECT_TRUE(w.we_hold()) << "a standby would wait the same";
  w.service.lapse_foreign_session();
  EXPECT_EQ(server.turn(), Duration{0});
  EXPECT_TRUE(server.in_session());
  EXPECT_EQ(w.service.counts().sessions_created, 1);
}

TEST_F(ServeServer, ACancellationClosesTheSessionAtTheNextTurn) {
  start_serving();
  w.world.cancelled = true;
  EXPECT_EQ(server.turn(), Duration{0});
  EXPECT_FALSE(server.in_session());
  EXPECT_EQ(w.service.live_session(), "") << "closed, so a standby need not wait for it to lapse";
  EXPECT_EQ(server.listen_turn(), std::nullopt);
}

TEST_F(ServeServer, SessionsThatKeepBeingLostHandTheLeaseToTheStandby) {
  start_serving();
  for (int lost = 1; lost <= 2; ++lost) {
    SCOPED_TRACE(lost);
    w.service.forget_session();
    EXPECT_EQ(server.listen_turn(), std::nullopt);
    ASSERT_EQ(server.session_end()->move, SessionMove::kReopen);
    EXPECT_EQ(server.turn(), lost == 1 ? Duration{0} : w.world.settings.serve_retry_wait)
        << "new sessions that keep failing are paced";
    EXPECT_EQ(server.turn(), Duration{0});
    ASSERT_TRUE(server.in_session());
  }
  w.service.forget_session();
  EXPECT_EQ(server.listen_turn(), std::nullopt);
  ASSERT_EQ(server.session_end()->move, SessionMove::kStepBack);
  EXPECT_EQ(server.turn(), Duration{0});
  EXPECT_FALSE(server.in_session());
  EXPECT_FALSE(server.fenced()) << "stepping back: no action from now on";

  server.lease().tick();  // the keeper's turn at once: step_back ends its wait
  EXPECT_EQ(w.lease()->expires_ms, 0) << "given up at once, not left to expire";
  standby();
  EXPECT_EQ(w.lease()->holder, "host-b:2");
  // A lease time and more: the standby serves, we neither take the lease back nor open a session.
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(server.turn(), milliseconds(200));
    run_for(seconds(5), true, false);
  }
  EXPECT_EQ(w.lease()->holder, "host-b:2");
  EXPECT_EQ(w.service.counts().sessions_created, 3);
}

// The serving loop's claim makes its runners' JIT configurations; GitHub takes 45 s for each.
// Meanwhile the lease keeper and the listener take their turns as their threads would (called
// from inside the claim: they wait on no lock the serving loop holds, or this would deadlock).
TEST_F(ServeServer, AClaimThatTakesMinutesBlocksNeitherTheLeaseKeeperNorTheListener) {
  w.world.settings.scale_set_min_armed = 2;
  w.world.add_idle("i-00000001");
  w.world.add_idle("i-00000002");
  start_serving();
  const SteadyTime start = w.world.clock.steady_now();
  w.service.on_jit = [&](const std::string&) {
    if (w.service.counts().jits == 0) w.service.push_message(FakeScaleSetService::job_available(101), 1);
    run_for(seconds(45), /*our_keeper=*/true, /*listening=*/true);
  };
  EXPECT_EQ(server.turn(), w.world.settings.serve_reconcile_interval);
  EXPECT_GE(w.world.clock.steady_now() - start, seconds(90));

  EXPECT_TRUE(w.we_hold()) << "renewed through the claim; the standby never took it";
  EXPECT_EQ(w.world.in_state(pool::State::kClaimed).size(), 2u) << "so the claims were written";
  EXPECT_EQ(w.service.counts().acquired, std::vector<int64_t>{101}) << "the job offered mid-claim was acquired";
  EXPECT_EQ(w.service.unacknowledged(), 0u);
  EXPECT_EQ(server.demand().assigned_jobs, 1);
}

// The same claim, had the keeper been held up behind it: the lease lapses mid-claim, the standby
// takes it, and the claim writes nothing — the runners it made are deleted, the instances stay in
// the pool for the new holder — and serving stops at the next turn.
TEST_F(ServeServer, AClaimOutlivingItsLeaseWritesNothingAndServingStops) {
  w.world.settings.scale_set_min_armed = 2;
  w.world.add_idle("i-00000001");
  w.world.add_idle("i-00000002");
  start_serving();
  w.service.on_jit = [&](const std::string&) { run_for(seconds(45), /*our_keeper=*/false, /*listening=*/true); };
  server.turn();

  EXPECT_EQ(w.lease()->holder, "host-b:2");
  EXPECT_TRUE(w.world.in_state(pool::State::kClaimed).empty());
  EXPECT_EQ(w.world.in_state(pool::State::kIdle).size(), 2u);
  EXPECT_EQ(w.service.counts().runners_deleted, 2) << "the JIT runners made for the claim";
  EXPECT_EQ(server.turn(), Duration{0});
  EXPECT_FALSE(server.in_session());
}

// The scale set deleted behind serve's back just as a job of it completed: the JobCompleted goes
// with the deleted set's queue, and when serve opens the new set's session the runner's agent has
// not yet reported the runner idle (a loaded machine). Once it does, the record reads armed, but
// GitHub removed that runner after its job: looked up, it is drained, and the job waiting in the
// new set gets a runner of its own rather than one that can never take it.
TEST_F(ServeServer, ARunnerWhoseCompletionWentWithADeletedSetIsDrainedOnceIdleAndTheWaitingJobServed) {
  w.world.add_idle("i-00000002");
  start_serving();
  const int64_t first_set = *w.service.set_id();
  const std::string runner = busy_runner("i-00000001");
  EXPECT_EQ(server.turn(), w.world.settings.serve_reconcile_interval);

  // Its job completes (GitHub removes the ephemeral runner) and the set is deleted before serve
  // polls: the JobCompleted is never delivered.
  w.service.remove_runner(runner);
  w.service.delete_scale_set();
  EXPECT_EQ(server.listen_turn(), std::nullopt);
  reopened_on_a_new_set(first_set);

  // A job for the new set; the agent still reports the runner busy.
  w.service.push_message("[]", 1);
  EXPECT_EQ(server.listen_turn(), Duration{0});
  server.turn();
  EXPECT_EQ(w.world.record("i-00000001").state, pool::State::kRunning);
  EXPECT_EQ(w.service.counts().jits, 1) << "a busy runner counts for the job";

  // The agent sees its one-job runner exit and reports idle: the record now reads armed.
  pool::AgentReport idle;
  idle.busy = false;
  ASSERT_TRUE(w.world.table.report("i-00000001", idle));
  server.turn();
  EXPECT_EQ(w.world.record("i-00000001").state, pool::State::kDraining) << "its runner is gone: drained";
  EXPECT_EQ(w.world.record("i-00000002").state, pool::State::kClaimed) << "a runner for the waiting job";
  EXPECT_EQ(w.world.record("i-00000002").label, "ci");
  EXPECT_EQ(w.service.counts().jits, 2) << "made on the new set";
}

// The same, the JobCompleted delivered but the set deleted before its acknowledgement (which
// answers 404): the completion heard under the old session is not forgotten with it — the
// instance is drained in the new session's first pass, its agent still reporting busy.
TEST_F(ServeServer, ACompletionHeardJustBeforeTheSetWasDeletedIsActedOnInTheNewSession) {
  w.world.add_idle("i-00000002");
  start_serving();
  const int64_t first_set = *w.service.set_id();
  const std::string runner = busy_runner("i-00000001");
  EXPECT_EQ(server.turn(), w.world.settings.serve_reconcile_interval);

  w.service.remove_runner(runner);
  w.service.push_message(R"([{"messageType":"JobCompleted","runnerRequestId":5,"jobId":"job-5","runnerName":")" + runner +
                             R"(","result":"succeeded"}])",
                         0);
  w.service.delete_scale_set_at_next_ack();
  EXPECT_EQ(server.listen_turn(), std::nullopt);
  reopened_on_a_new_set(first_set);

  w.service.push_message("[]", 1);
  EXPECT_EQ(server.listen_turn(), Duration{0});
  server.turn();
  EXPECT_EQ(w.world.record("i-00000001").state, pool::State::kDraining) << "its job completed: drained";
  EXPECT_EQ(w.world.record("i-00000002").state, pool::State::kClaimed) << "a runner for the waiting job";
}

}  // namespace
}  // namespace runpool::controller
