// The agent's metric events: as built by AgentMetrics, and as the loop emits them along an
// assignment (registered → a job → drained and cleaned) and at self-termination.
#include "agent/agent_metrics.h"

#include <gtest/gtest.h>

#include "agent/testing/loop_fixture.h"
#include "common/json.h"
#include "common/metrics/testing.h"

namespace runpool::agent {
namespace {

using metrics::testing::CollectingSink;
using metrics::testing::dimension_of;
using metrics::testing::values_of;
using namespace std::chrono_literals;

TEST(AgentMetrics, EventsCarryPoolClassInstanceAndGeneration) {
  CollectingSink sink;
  AgentMetrics m(sink, "acme/ci", "ci", "i-0abc");
  m.registered(1'000, "small", 3, 4'500ms);
  m.job_seen_busy(2'000, "small", 3);
  m.drained(3'000, "small", 3, 61s);
  m.cleaned(4'000, "", 3, 250ms);
  m.self_terminated(5'000, "small", 3, "deadline passed");
  ASSERT_EQ(sink.events.size(), 5u);
  for (const auto& e : sink.events) {
    EXPECT_EQ(e.ns, "acme/ci");
    EXPECT_EQ(dimension_of(e, "Pool"), "ci");
    Json::Value line = parse_json(metrics::format_emf(e), "EMF");
    EXPECT_EQ(line["InstanceId"], "i-0abc");
    EXPECT_EQ(line["Generation"], 3);
  }
  EXPECT_EQ(sink.events[0].timestamp_ms, 1'000);
  EXPECT_EQ(dimension_of(sink.events[0], "ResourceClass"), "small");
  EXPECT_EQ(values_of(sink.events[0], "RegistrationLatency"), std::vector<double>{4'500});
  EXPECT_EQ(sink.events[0].metrics[0].unit, metrics::Unit::kMilliseconds);
  EXPECT_EQ(values_of(sink.events[1], "JobsSeenBusy"), std::vector<double>{1});
  EXPECT_EQ(sink.events[1].metrics[0].unit, metrics::Unit::kCount);
  EXPECT_EQ(values_of(sink.events[2], "DrainDuration"), std::vector<double>{61'000});
  EXPECT_EQ(values_of(sink.events[3], "CleaningDuration"), std::vector<double>{250});
  EXPECT_EQ(sink.events[3].dimensions.size(), 1u) << "no class known: Pool only";
  EXPECT_EQ(values_of(sink.events[4], "SelfTerminations"), std::vector<double>{1});
  EXPECT_EQ(parse_json(metrics::format_emf(sink.events[4]), "EMF")["Reason"], "deadline passed");
}

TEST(AgentMetrics, DefaultMeasuresNothing) {
  AgentMetrics m;
  m.registered(1, "small", 1, 1ms);  // goes nowhere, and does not crash
  m.self_terminated(1, "", 0, "x");
}

class AgentLoopMetrics : public testing::AgentLoopTest {
 protected:
  AgentLoopMetrics() { loop().set_metrics(AgentMetrics(sink_, "runpool", "ci", kId)); }
  CollectingSink sink_;
};

TEST_F(AgentLoopMetrics, AnAssignmentFromRegistrationToDrained) {
  launch();
  ticks(1);  // configured, the Listener starting: not registered yet
  EXPECT_TRUE(sink_.with("RegistrationLatency").empty());
  host_.say(RunnerEvent::kListening);
  ticks(1);
  auto reg = sink_.with("RegistrationLatency");
  ASSERT_EQ(reg.size(), 1u);
  EXPECT_EQ(values_of(reg[0], "RegistrationLatency"), std::vector<double>{100}) << "seen, then one tick later";
  EXPECT_EQ(dimension_of(reg[0], "ResourceClass"), "small");
  step(pool::mark_running(record(), now(), timeouts_));

  // Two jobs: two idle → busy transitions, however many ticks each runs.
  for (const char* job : {"1", "2"}) {
    host_.say(RunnerEvent::kJobRequested, job);
    ticks(3);
    host_.say(RunnerEvent::kJobCompleted, job);
    ticks(1);
  }
  EXPECT_EQ(sink_.with("JobsSeenBusy").size(), 2u);

  step(pool::start_drain(record(), Secret("remove-1"), now(), timeouts_));
  ASSERT_TRUE(tick_until([&] { return loop().state().phase == Phase::kIdle; }));
  auto drained = sink_.with("DrainDuration");
  ASSERT_EQ(drained.size(), 1u);
  EXPECT_GT(values_of(drained[0], "DrainDuration").at(0), 0);
  auto cleaned = sink_.with("CleaningDuration");
  ASSERT_EQ(cleaned.size(), 1u) << "the cleaning after the drain (not the one at start, before any assignment)";
  EXPECT_EQ(dimension_of(cleaned[0], "ResourceClass"), "small");
  EXPECT_TRUE(sink_.with("SelfTerminations").empty());

  // The next assignment's registration is measured afresh.
  step(pool::return_to_pool(record(), now(), timeouts_));
  ticks(1);
  step(pool::claim(record(), "run-2", Secret("reg-2"), "https://github.com/o/r", now(), timeouts_));
  ticks(2);
  host_.say(RunnerEvent::kListening);
  ticks(1);
  EXPECT_EQ(sink_.with("RegistrationLatency").size(), 2u);
}

TEST_F(AgentLoopMetrics, SelfTerminationIsCountedOnce) {
  launch();
  ticks(1);
  clock_.advance(std::chrono::milliseconds(timeouts_.boot_ms));
  ticks(5);
  ASSERT_EQ(compute_.terminates, 1);
  auto st = sink_.with("SelfTerminations");
  ASSERT_EQ(st.size(), 1u);
  EXPECT_NE(parse_json(metrics::format_emf(st[0]), "EMF")["Reason"].asString().find("deadline"), std::string::npos);
  EXPECT_TRUE(sink_.with("DrainDuration").empty());
}

}  // namespace
}  // namespace runpool::agent
