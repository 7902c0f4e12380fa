// Where metric events go: a small interface, so commands and the agent emit without knowing
// whether anything listens. A sink never throws and never fails its caller: metrics are worth a
// warning, not a failed provision.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/metrics/emf.h"

namespace runpool::metrics {

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual void emit(const Event& event) = 0;
  // Sends what the sink buffered (the CloudWatch Logs sink); a no-op for the others.
  virtual void flush() {}
};

// Drops every event: metrics off.
class NullSink final : public MetricsSink {
 public:
  void emit(const Event&) override {}
};
MetricsSink& no_metrics();  // one shared NullSink

// Hands each event to every sink it owns, in order.
class FanOutSink final : public MetricsSink {
 public:
  void add(std::unique_ptr<MetricsSink> sink) { sinks_.push_back(std::move(sink)); }
  bool empty() const { return sinks_.empty(); }
  void emit(const Event& event) override;
  void flush() override;

 private:
  std::vector<std::unique_ptr<MetricsSink>> sinks_;
};

// format_emf, or nullopt with a warning naming the event's first metric: an event the code built
// wrongly is dropped, never thrown at the caller.
std::optional<std::string> format_or_warn(const Event& event);

}  // namespace runpool::metrics
