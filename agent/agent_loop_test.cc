// The main loop, end to end, with the in-memory state table, a fake clock and fakes for the runner
// host, the Listener and EC2: every lifecycle path the controller can drive, crashes, restarts,
// notices and self-termination — without processes, AWS or sleeping.
#include "agent/agent_loop.h"

#include <gtest/gtest.h>

#include "agent/testing/loop_fixture.h"
#include "common/pool/memory_state_table.h"
#include "common/pool/transitions.h"

namespace runpool::agent {
namespace {

using namespace std::chrono_literals;
using pool::AgentSignal;
using pool::InstanceRecord;
using pool::State;

using namespace testing;

TEST_F(AgentLoopTest, RegistersTakesTheTokenBeforeTheListenerStartsAndReportsRegistered) {
  launch();
  ticks(1);
  ASSERT_EQ(host_.configures.size(), 1u);
  const Registration& reg = host_.configures[0];
  EXPECT_EQ(reg.name, std::string("ci-") + kId + "-g1");
  EXPECT_EQ(reg.label, "run-1");
  EXPECT_EQ(reg.url, "https://github.com/o/r");
  EXPECT_EQ(reg.token.reveal(), "reg-1");
  EXPECT_TRUE(record().reg_token.empty()) << "the token leaves the record";
  EXPECT_EQ(record().runner_id, 1001);
  EXPECT_EQ(host_.starts, 1);
  // The token was taken before the Listener started: the take is the report before any start.
  bool take_seen = false;
  for (const auto& r : table_.reports) take_seen = take_seen || r.take_reg_token;
  EXPECT_TRUE(take_seen);
  EXPECT_EQ(record().signal, AgentSignal::kBooted);
  EXPECT_EQ(record().agent_version, "test");
  EXPECT_NE(loop().status().find("starting the Listener"), std::string::npos);

  host_.say(RunnerEvent::kListening);
  ticks(1);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kRegistered));
  EXPECT_EQ(record().runner_name, std::string("ci-") + kId + "-g1");
  EXPECT_EQ(loop().status(), "serving run-1 (generation 1), idle");
}

// Without the mark (a runner that was not ephemeral, whose configuration vanished while no agent
// ran) nothing changes: the assignment cannot be served and is reported failed.
TEST_F(AgentLoopTest, ARunnerConfigurationGoneWhileNoAgentRanWithoutAMarkIsAFailure) {
  serve();
  loop_.reset();
  host_.identity.reset();
  host_.listener.reset();
  ASSERT_TRUE(tick_until([&] { return pool::agent_reported(record(), AgentSignal::kFailed); }, 50));
  EXPECT_FALSE(host_.marked_ephemeral);
}

TEST_F(AgentLoopTest, APersistentRunnerIsNeverStartedWithTheDrainInput) {
  host_.support = RunnerDrainSupport{true, true};
  launch();
  ticks(1);
  ASSERT_EQ(host_.drain_flags, std::vector<bool>{false}) << "the runner refuses it for a persistent runner";
}

TEST_F(AgentLoopTest, TheRunnerIsPreparedWithThePrivilegesTheRecordNames) {
  launch("run-1", "docker");
  ticks(1);
  EXPECT_EQ(host_.prepared_privileges, std::vector<std::string>{"docker"});
}

TEST_F(AgentLoopTest, AJobUserThatCannotBeReadiedInThePoolIsMadeByTheClaim) {
  auto r = pool::launched_record(kId, "ci", "", "small", pool::UsageClass::kSpot, "c7i.large", Secret(""),
                                 "https://github.com/o/r", now(), timeouts_);
  r.state = State::kIdle;  // warmed up into the pool
  r.job_privileges = "docker";  // its class's, written at launch
  ASSERT_TRUE(memory_.create(r));
  host_.ready_error = "useradd: cannot lock /etc/passwd";
  ticks(5);
  EXPECT_EQ(host_.readies, 1) << "tried once per cleaning, not every tick";
  EXPECT_EQ(host_.readied_privileges, std::vector<std::string>{"docker"}) << "readied for what its class grants";
  EXPECT_EQ(loop().state().phase, Phase::kIdle);
  step(pool::claim(record(), "run-2", Secret("reg-2"), "https://github.com/o/r", now(), timeouts_));
  ticks(1);
  EXPECT_EQ(host_.prepares, 1);
  EXPECT_EQ(host_.configures.size(), 1u) << "the claim is served all the same";
}

TEST_F(AgentLoopTest, ListenerDoesNotStartWhileTheTokenCannotBeTaken) {
  launch();
  table_.down = true;
  ticks(1);  // the record cannot even be read
  EXPECT_EQ(host_.configures.size(), 0u);
  table_.down = false;
  ticks(1);
  EXPECT_EQ(host_.starts, 1);
}

TEST_F(AgentLoopTest, EveryReportIsASignOfLifeAndCarriesAHeartbeat) {
  // The heartbeat thread is not part of this fixture: whatever heartbeat the record shows was
  // written by the loop's own reports. A claim drops an instance whose heartbeat looks stale.
  launch();
  EXPECT_EQ(record().heartbeat_ms, 0);
  const int64_t booted_at = now();
  ticks(1);  // (each tick then moves the clock 100 ms)
  EXPECT_EQ(record().heartbeat_ms, booted_at) << "booted, the token taken";
  clock_.advance(10s);
  const int64_t registered_at = now();
  host_.say(RunnerEvent::kListening);
  ticks(1);
  ASSERT_TRUE(pool::agent_reported(record(), AgentSignal::kRegistered));
  EXPECT_EQ(record().heartbeat_ms, registered_at) << "registered";
}

TEST_F(AgentLoopTest, ATickWithoutAReadStillActsOnTheRunnerAndSeesTheRecordAtTheNextRead) {
  // The main loop's settling ticks (poll_interval.h): the agent's own steps go on at once; a
  // change of the record waits for the next read (a wake-up, or the interval).
  launch();
  ticks(1);  // reads: booted, configured, the Listener started
  // The loop's reads in one tick (the test's own record() reads the table too).
  auto reads_in = [&](bool read) {
    const size_t before = memory_.gets();
    EXPECT_TRUE(loop().tick(read));
    return memory_.gets() - before;
  };
  host_.say(RunnerEvent::kListening);
  EXPECT_EQ(reads_in(false), 0u);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kRegistered)) << "no read needed to report it";

  step(pool::mark_running(record(), now(), timeouts_));
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  EXPECT_EQ(reads_in(false), 0u);
  EXPECT_EQ(loop().state().phase, Phase::kServing) << "the drain is not seen without a read";
  EXPECT_EQ(reads_in(true), 1u);
  EXPECT_EQ(loop().state().phase, Phase::kDraining);
}

TEST_F(AgentLoopTest, BusyIsReportedPromptlyFromTheRunnersOwnOutput) {
  serve();
  host_.say(RunnerEvent::kJobRequested, "42");
  ticks(1);
  EXPECT_TRUE(record().busy) << "an immediate write, not the next heartbeat";
  EXPECT_TRUE(loop().busy());
  EXPECT_NE(loop().status().find("busy"), std::string::npos);
  host_.say(RunnerEvent::kJobStarted, "build");
  host_.say(RunnerEvent::kJobCompleted, "build");
  ticks(1);
  EXPECT_FALSE(record().busy);
}

TEST_F(AgentLoopTest, ADrainLetsTheJobInHandFinishDeregistersCleansAndServesTheNextAssignment) {
  serve();
  host_.say(RunnerEvent::kJobRequested, "7");
  ticks(1);
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ticks(1);
  EXPECT_EQ(loop().state().phase, Phase::kDraining);
  EXPECT_EQ(host_.support_asks, 1) << "the runner's drain inputs are asked for at the drain";
  EXPECT_TRUE(host_.removes.empty()) << "no deregistration while the Listener runs its job";
  ticks(10);
  EXPECT_EQ(loop().state().phase, Phase::kDraining) << "the job in hand runs on";
  EXPECT_FALSE(host_.listener->interrupted);
  // The job completes: deregistered, the Listener notices and exits.
  host_.say(RunnerEvent::kJobCompleted, "7");
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  EXPECT_EQ(host_.removes, std::vector<std::string>{"remove-1"});
  EXPECT_EQ(host_.cleans, 2) << "once at the start, once after the drain";
  InstanceRecord r = record();
  EXPECT_TRUE(pool::agent_reported(r, AgentSignal::kDrained));
  EXPECT_TRUE(r.remove_token.empty());
  EXPECT_FALSE(r.busy);
  EXPECT_EQ(loop().state().last_served, 1);
  EXPECT_EQ(loop().status(), "idle, waiting for an assignment");

  // Back to the pool, claimed again: a new runner name for the new generation.
  EXPECT_EQ(host_.readies, 0) << "the instance is not in the pool yet";
  step(pool::return_to_pool(r, now(), timeouts_));
  ticks(3);
  EXPECT_EQ(host_.configures.size(), 1u) << "idle record: nothing to do";
  EXPECT_EQ(host_.readies, 1) << "in the pool: the next job user is made once, off the claim's path";
  step(pool::claim(record(), "run-2", Secret("reg-2"), "https://github.com/o/r", now(), timeouts_));
  ticks(1);
  ASSERT_EQ(host_.configures.size(), 2u);
  EXPECT_EQ(host_.configures[1].name, std::string("ci-") + kId + "-g2");
  EXPECT_EQ(host_.configures[1].label, "run-2");
  EXPECT_EQ(host_.starts, 2);
}

TEST_F(AgentLoopTest, StockRunnerWaitsUntilIdleThenDeregistersAndTheListenerExits) {
  serve();
  host_.say(RunnerEvent::kJobRequested, "7");
  ticks(1);
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ticks(10);
  EXPECT_TRUE(host_.removes.empty()) << "busy: no DELETE";
  host_.say(RunnerEvent::kJobCompleted, "7");
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  EXPECT_EQ(host_.removes.size(), 1u) << "deregistered once, during the drain";
  EXPECT_FALSE(host_.listener->interrupted) << "the Listener noticed the deletion by itself";
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kDrained));
}

TEST_F(AgentLoopTest, AnIdleRunnerIsDeregisteredOnlyAfterOneLongPollWhateverItsDrainInputs) {
  host_.support = RunnerDrainSupport{true, true};  // a drain-file build: its inputs refuse this persistent runner
  serve();
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ticks(4);  // 400 ms of the 500 ms poll wait
  EXPECT_EQ(loop().state().phase, Phase::kDraining);
  EXPECT_TRUE(host_.removes.empty()) << "a job dispatched to the open poll may still arrive";
  EXPECT_FALSE(host_.listener->interrupted);
  ASSERT_TRUE(tick_until([&] { return !host_.removes.empty(); }, 5));
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  EXPECT_EQ(host_.support_asks, 1);
  EXPECT_FALSE(host_.listener->interrupted) << "the Listener noticed the deletion by itself";
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kDrained));
}

TEST_F(AgentLoopTest, AJobThatArrivesDuringThePollWaitRunsToItsEndBeforeTheDeregistration) {
  serve();
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ticks(2);
  host_.say(RunnerEvent::kJobRequested, "9");  // dispatched before the labels went
  ticks(10);
  EXPECT_TRUE(host_.removes.empty()) << "busy: no DELETE";
  host_.say(RunnerEvent::kJobStarted, "late");
  host_.say(RunnerEvent::kJobCompleted, "late");
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  EXPECT_EQ(host_.removes.size(), 1u);
}

TEST_F(AgentLoopTest, StockRunnerRetriesARemoveRefusedAsBusyAndInterruptsAListenerThatDoesNotNotice) {
  host_.remove_results = {1, 1};  // 422: GitHub saw the runner acquire a job the agent had not seen yet
  host_.remove_makes_listener_exit = false;
  serve();
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return host_.removes.size() == 3; }));
  ASSERT_TRUE(tick_until([&] { return host_.listener->interrupted; }, 20));
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  EXPECT_EQ(host_.removes.size(), 3u);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kDrained));
}

TEST_F(AgentLoopTest, ACrashedListenerIsRestartedAndATerminatedOneFailsTheAssignment) {
  serve();
  host_.listener->exit = ExitStatus{true, 9};
  ticks(1);
  EXPECT_EQ(host_.starts, 1);
  EXPECT_EQ(host_.ends, 1) << "what the crashed Listener left is ended";
  ASSERT_TRUE(tick_until([&] { return host_.starts == 2; }, 5));  // after the 200 ms backoff
  EXPECT_EQ(host_.configures.size(), 1u) << "restarted, not re-registered";
  host_.listener->exit = ExitStatus{false, 2};
  ASSERT_TRUE(tick_until([&] { return host_.starts == 3; }, 10));  // 400 ms
  host_.listener->exit = ExitStatus{false, 1};
  ticks(1);
  EXPECT_EQ(loop().state().phase, Phase::kStopped);
  InstanceRecord r = record();
  EXPECT_TRUE(pool::agent_reported(r, AgentSignal::kFailed));
  EXPECT_NE(r.signal_detail.find("exit code 1"), std::string::npos) << r.signal_detail;
  EXPECT_NE(r.signal_detail.find("last words"), std::string::npos);
  ticks(5);
  EXPECT_EQ(host_.starts, 3) << "a failed assignment is not restarted";
  // The controller drains it: deregistered, cleaned, drained.
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  EXPECT_EQ(host_.removes.size(), 1u);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kDrained));
}

TEST_F(AgentLoopTest, RestartsAreBounded) {
  serve();
  for (int i = 0; i < 3; ++i) {
    host_.listener->exit = ExitStatus{false, 5};
    int starts = host_.starts;
    ASSERT_TRUE(tick_until([&] { return host_.starts == starts + 1; }, 40));
  }
  host_.listener->exit = ExitStatus{false, 5};
  ticks(1);
  EXPECT_EQ(loop().state().phase, Phase::kStopped);
  EXPECT_NE(record().signal_detail.find("3 restarts"), std::string::npos) << record().signal_detail;
}

// Between two config.sh runs the record is still read: a drain asked meanwhile ends the
// registration (nothing more is run), and the assignment is answered `drained`.
TEST_F(AgentLoopTest, ADrainBetweenRegistrationAttemptsEndsTheRegistration) {
  host_.configure_exit = 1;
  launch();
  ticks(1);
  ASSERT_EQ(host_.configures.size(), 1u);
  EXPECT_NE(loop().status().find("attempt 1 failed"), std::string::npos) << loop().status();
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return pool::agent_reported(record(), AgentSignal::kDrained); }));
  ticks(5);
  EXPECT_EQ(host_.configures.size(), 1u) << "no config.sh run after the drain";
  EXPECT_EQ(loop().state().phase, Phase::kIdle);
  EXPECT_FALSE(loop().settling());
  EXPECT_TRUE(host_.removes.empty()) << "nothing registered here";
}

TEST_F(AgentLoopTest, FailedRegistrationIsReportedAndDrainedWithoutDeregistration) {
  host_.configure_exit = 1;
  launch();
  ticks(1);
  EXPECT_EQ(host_.configures.size(), 1u) << "one config.sh run per tick";
  EXPECT_TRUE(loop().settling()) << "the next run is awaited at the fast read rate";
  ticks(1);  // 100 ms of the 200 ms pause
  EXPECT_EQ(host_.configures.size(), 1u) << "the pause is waited out by later ticks, not slept in one";
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kStopped; }));
  ticks(5);
  EXPECT_EQ(host_.configures.size(), 3u) << "retried, bounded";
  EXPECT_EQ(host_.starts, 0);
  InstanceRecord r = record();
  EXPECT_TRUE(pool::agent_reported(r, AgentSignal::kFailed));
  EXPECT_NE(r.signal_detail.find("NotFound"), std::string::npos);
  EXPECT_EQ(r.signal_detail.find("reg-1"), std::string::npos) << "never the token";
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  EXPECT_TRUE(host_.removes.empty()) << "nothing registered here";
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kDrained));
}

TEST_F(AgentLoopTest, AnUnusableRunnerRootRefusesTheAssignment) {
  host_.prepare_error = "no bin/Runner.Listener";
  launch();
  ticks(2);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kFailed));
  EXPECT_NE(record().signal_detail.find("runner root"), std::string::npos);
  EXPECT_TRUE(host_.configures.empty());
}

TEST_F(AgentLoopTest, AnAssignmentWithoutTokenIsRefusedOnce) {
  launch();
  ASSERT_TRUE(memory_.report(kId, {.take_reg_token = true, .generation = 1}));
  ticks(3);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kFailed));
  EXPECT_TRUE(host_.configures.empty());
  int failed_reports = 0;
  for (const auto& r : table_.reports) failed_reports += r.signal == AgentSignal::kFailed;
  EXPECT_EQ(failed_reports, 1);
}

TEST_F(AgentLoopTest, TheRecordMovingOnWithoutADrainAbandonsQuietly) {
  serve();
  // The controller rewrote the record for another generation (no drain, no remove token).
  ASSERT_TRUE(memory_.transition(kId, {}, {.state = State::kIdle, .generation = 5, .label = ""}));
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  EXPECT_TRUE(host_.listener->interrupted) << "a stock runner is stopped once idle";
  EXPECT_TRUE(host_.removes.empty());
  EXPECT_EQ(host_.cleans, 2) << "once at the start, once after abandoning";
  EXPECT_FALSE(pool::agent_reported(record(), AgentSignal::kDrained));
}

// The instance role's credentials can write `generation` (it is named in the agent's own writes'
// conditions): a thief that moves it mid-job makes the agent leave the assignment the way a drain
// does — the job in hand runs to its end, and only then is the Listener stopped.
TEST_F(AgentLoopTest, AGenerationMovedMidJobLetsTheJobInHandFinish) {
  serve();
  host_.say(RunnerEvent::kJobRequested, "9");
  ticks(1);
  ASSERT_TRUE(memory_.transition(kId, {}, {.generation = 7}));  // the forged generation
  ticks(10);
  EXPECT_FALSE(host_.listener->interrupted) << "the job in hand was ended";
  EXPECT_FALSE(host_.listener->killed);
  host_.say(RunnerEvent::kJobCompleted, "9");
  ASSERT_TRUE(tick_until([&] { return host_.listener->interrupted; })) << "stopped once the job is over";
}

TEST_F(AgentLoopTest, ADrainOfAnAssignmentItNeverServedIsFinished) {
  launch();
  ASSERT_TRUE(memory_.report(kId, {.take_reg_token = true, .generation = 1}));
  InstanceRecord r = record();
  step(pool::start_drain(r, Secret("remove-1"), now(), timeouts_));
  ticks(2);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kDrained));
  EXPECT_TRUE(record().remove_token.empty());
  EXPECT_TRUE(host_.removes.empty());
}

TEST_F(AgentLoopTest, AFailedCleaningIsReportedAndRetriedUntilItWorks) {
  serve();
  host_.clean_error = "3 processes of runpool-runner would not end";
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return pool::agent_reported(record(), AgentSignal::kFailed); }));
  EXPECT_NE(record().signal_detail.find("would not end"), std::string::npos);
  EXPECT_EQ(loop().state().phase, Phase::kStopped) << "never reused uncleaned";
  host_.clean_error.clear();
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }, 30));
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kDrained));
}

TEST_F(AgentLoopTest, AnUnexpectedErrorInAStepDoesNotEndTheLoop) {
  serve();
  ASSERT_TRUE(memory_.transition(kId, {}, {.state = State::kIdle, .generation = 5, .label = ""}));
  host_.remove_local_error = "Permission denied";
  ticks(20);
  EXPECT_EQ(loop().state().phase, Phase::kStopped) << "cleaning is retried";
  host_.remove_local_error.clear();
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
}

// ---- self-termination

TEST_F(AgentLoopTest, DeadlinePassedTerminatesTheInstanceThenFallsBackToShutdown) {
  launch();
  ticks(1);
  clock_.advance(std::chrono::milliseconds(timeouts_.boot_ms));
  ticks(1);
  EXPECT_EQ(loop().state().phase, Phase::kTerminating);
  EXPECT_EQ(compute_.terminates, 1);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kFailed));
  EXPECT_NE(record().signal_detail.find("deadline"), std::string::npos);
  EXPECT_NE(loop().status().find("terminating"), std::string::npos);
  ticks(19);
  EXPECT_EQ(compute_.shutdowns, 0);
  ticks(2);
  EXPECT_EQ(compute_.shutdowns, 1) << "the OS shutdown after terminate_wait";
  EXPECT_FALSE(tick_until([&] { return false; }, 30)) << "then the loop gives up (exit 3)";
}

TEST_F(AgentLoopTest, TerminateFailingFallsBackToShutdownAtOnce) {
  compute_.terminate_fails = true;
  launch();
  ASSERT_TRUE(memory_.transition(kId, {}, {.state = State::kTerminating}));
  ticks(1);
  EXPECT_EQ(compute_.terminates, 1);
  EXPECT_EQ(compute_.shutdowns, 1);
}

TEST_F(AgentLoopTest, NoRecordAfterTheBootGrace) {
  ticks(19);
  EXPECT_EQ(compute_.terminates, 0);
  ticks(2);
  EXPECT_EQ(compute_.terminates, 1);
}

TEST_F(AgentLoopTest, TableUnreachableBeyondTheLimit) {
  serve();
  table_.down = true;
  ticks(45);
  EXPECT_EQ(compute_.terminates, 0);
  EXPECT_EQ(loop().state().phase, Phase::kServing) << "an outage is ridden out";
  ticks(10);
  EXPECT_EQ(compute_.terminates, 1);
}

TEST_F(AgentLoopTest, DeadlinePassedWhileBusyDrainsFirstThenTerminates) {
  serve();
  host_.say(RunnerEvent::kJobRequested, "7");
  host_.worker = true;  // a job that runs for hours has its Runner.Worker
  ticks(1);
  clock_.advance(std::chrono::milliseconds(timeouts_.max_runtime_ms));
  ticks(1);
  EXPECT_EQ(compute_.terminates, 0) << "never before a drain while a job runs";
  EXPECT_EQ(loop().state().phase, Phase::kDraining);
  host_.worker = false;
  host_.say(RunnerEvent::kJobCompleted, "7");
  host_.listener->exit = ExitStatus{false, 0};
  ASSERT_TRUE(tick_until([&] { return compute_.terminates == 1; }, 5));
}

TEST_F(AgentLoopTest, AHardDeadlineEndsEvenABusyInstance) {
  serve();
  host_.say(RunnerEvent::kJobRequested, "7");
  ticks(1);
  clock_.advance(std::chrono::milliseconds(timeouts_.max_runtime_ms + timeouts_.hard_grace_ms));
  ticks(1);
  EXPECT_EQ(compute_.terminates, 1);
}

// ---- notices

TEST_F(AgentLoopTest, ASpotNoticeDrainsAtOnceIsReportedAndRefusesNewWork) {
  serve();
  loop().notice({Notice::kSpotInterruption, "spot instance-action terminate at 2026-11-21T03:00:00Z"});
  ticks(1);
  EXPECT_EQ(loop().state().phase, Phase::kDraining);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kInterrupted));
  EXPECT_NE(record().signal_detail.find("instance-action"), std::string::npos);
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kStopped; }));
  // The controller drains it; then a new claim is refused.
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  step(pool::return_to_pool(record(), now(), timeouts_));
  step(pool::claim(record(), "run-2", Secret("reg-2"), "https://github.com/o/r", now(), timeouts_));
  ticks(2);
  EXPECT_EQ(host_.configures.size(), 1u);
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kFailed));
}

// ---- resuming after a restart

TEST_F(AgentLoopTest, ResumesARunnerConfiguredForTheCurrentAssignment) {
  launch();
  step(pool::mark_running([&] {
         memory_.report(kId, {.signal = AgentSignal::kRegistered, .generation = 1});
         return record();
       }(),
                          now(), timeouts_));
  host_.identity = RunnerIdentity{77, std::string("ci-") + kId + "-g1", ""};
  ticks(1);
  EXPECT_EQ(loop().state().phase, Phase::kServing);
  EXPECT_TRUE(host_.configures.empty()) << "not re-registered";
  EXPECT_EQ(host_.starts, 1);
  EXPECT_TRUE(record().reg_token.empty()) << "a token the crash left in the record is taken";
  EXPECT_EQ(host_.cleans, 0);
}

// A restarted agent follows the Listener its predecessor left (it may be running a job, and its
// runner is matchable: interrupting it could cancel a job reaching it right then) until it ends.
TEST_F(AgentLoopTest, FollowsTheListenerAnEarlierAgentLeftAndServesOnWithIt) {
  launch();
  memory_.report(kId, {.signal = AgentSignal::kRegistered, .take_reg_token = true, .generation = 1});
  host_.identity = RunnerIdentity{77, std::string("ci-") + kId + "-g1", ""};
  host_.stray = true;
  host_.worker = true;
  ticks(5);
  EXPECT_EQ(host_.adopts, 1);
  EXPECT_EQ(host_.starts, 0);
  EXPECT_TRUE(record().busy) << "its Worker runs a job";
  host_.worker = false;
  ticks(5);
  EXPECT_FALSE(record().busy);
  EXPECT_FALSE(host_.listener->interrupted) << "idle, still serving: left alone";
  host_.say(RunnerEvent::kJobRequested, "next");
  ticks(1);
  EXPECT_TRUE(record().busy) << "its jobs are seen in what it writes";
  host_.say(RunnerEvent::kJobStarted, "next");
  host_.say(RunnerEvent::kJobCompleted, "next");
  ticks(1);
  EXPECT_FALSE(record().busy);
  EXPECT_EQ(host_.starts, 0);
  // It ends (how, nobody can tell): this agent starts its own, after what it left is ended.
  host_.listener->exit = ExitStatus{false, 0, true};
  ASSERT_TRUE(tick_until([&] { return host_.starts == 1; }, 20));
  EXPECT_GE(host_.ends, 1);
  EXPECT_EQ(loop().state().phase, Phase::kServing);
  EXPECT_TRUE(host_.configures.empty()) << "the same registration";
}

TEST_F(AgentLoopTest, AStrayListenerOfAnAssignmentThatIsOverIsDrainedThenCleaned) {
  launch();
  ASSERT_TRUE(memory_.transition(kId, {}, {.state = State::kIdle, .generation = 2, .label = ""}));
  host_.identity = RunnerIdentity{77, std::string("ci-") + kId + "-g1", ""};
  host_.stray = true;
  host_.worker = true;
  ticks(3);
  EXPECT_EQ(loop().state().phase, Phase::kDraining);
  EXPECT_FALSE(host_.listener->interrupted) << "its job runs to its end";
  host_.worker = false;
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  EXPECT_TRUE(host_.listener->interrupted);
  EXPECT_EQ(host_.starts, 0);
  EXPECT_GE(host_.cleans, 1);
  EXPECT_EQ(loop().state().last_served, 1);
}

TEST_F(AgentLoopTest, ResumesADrain) {
  launch();
  memory_.report(kId, {.signal = AgentSignal::kRegistered, .take_reg_token = true, .generation = 1});
  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  host_.identity = RunnerIdentity{77, std::string("ci-") + kId + "-g1", ""};
  ticks(1);
  EXPECT_NE(loop().state().phase, Phase::kIdle);
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  EXPECT_EQ(host_.removes, std::vector<std::string>{"remove-1"});
  EXPECT_TRUE(pool::agent_reported(record(), AgentSignal::kDrained));
}

TEST_F(AgentLoopTest, AStartInIdleCleansLeftovers) {
  launch();
  ticks(1);
  EXPECT_GE(host_.cleans, 1);
  EXPECT_GE(host_.remove_locals, 1);
}

TEST_F(AgentLoopTest, ARunnerOfAnotherAssignmentIsCleanedBeforeServing) {
  launch();
  ASSERT_TRUE(memory_.transition(kId, {}, {.generation = 4}));
  host_.identity = RunnerIdentity{77, std::string("ci-") + kId + "-g3", ""};
  ASSERT_TRUE(tick_until([&] { return host_.configures.size() == 1; }));
  EXPECT_GE(host_.cleans, 1);
  EXPECT_EQ(host_.configures[0].name, std::string("ci-") + kId + "-g4");
}

}  // namespace
}  // namespace runpool::agent
