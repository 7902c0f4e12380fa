#include "common/metrics/sink.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/metrics/testing.h"

namespace runpool::metrics {
namespace {

Event sink_event(const std::string& metric, double value = 1) {
  Event e;
  e.ns = "runpool";
  e.timestamp_ms = 1'800'000'000'000;
  e.dimension("Pool", "ci").add(metric, value);
  return e;
}

TEST(Sinks, FanOutHandsEveryEventToEverySinkAndFlushesThemAll) {
  FanOutSink fan;
  EXPECT_TRUE(fan.empty());
  auto a = std::make_unique<testing::CollectingSink>();
  auto b = std::make_unique<testing::CollectingSink>();
  testing::CollectingSink* pa = a.get();
  testing::CollectingSink* pb = b.get();
  fan.add(std::move(a));
  fan.add(std::move(b));
  EXPECT_FALSE(fan.empty());
  fan.emit(sink_event("One"));
  fan.emit(sink_event("Two"));
  fan.flush();
  for (auto* s : {pa, pb}) {
    ASSERT_EQ(s->events.size(), 2u);
    EXPECT_EQ(s->events[0].metrics[0].name, "One");
    EXPECT_EQ(s->events[1].metrics[0].name, "Two");
    EXPECT_EQ(s->flushes, 1);
  }
}

TEST(Sinks, NoMetricsTakesAnythingAndIsShared) {
  EXPECT_EQ(&no_metrics(), &no_metrics());
  no_metrics().emit(sink_event("X"));
  no_metrics().emit(Event{});  // even an invalid event
  no_metrics().flush();
}

TEST(Sinks, FormatOrWarnDropsABadEventWithAWarning) {
  testing::CapturedLog log;
  EXPECT_TRUE(format_or_warn(sink_event("Fine")).has_value());
  Event bad = sink_event("Bad", std::nan(""));
  EXPECT_FALSE(format_or_warn(bad).has_value());
  EXPECT_NE(log.text().find("dropped an event (Bad)"), std::string::npos) << log.text();
  EXPECT_NE(log.text().find("non-finite"), std::string::npos) << log.text();
}

}  // namespace
}  // namespace runpool::metrics
