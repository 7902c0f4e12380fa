// For tests only: a sink that keeps every event, and a capture of what is logged meanwhile.
#pragma once

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "common/metrics/sink.h"

namespace runpool::metrics::testing {

class CollectingSink final : public MetricsSink {
 public:
  void emit(const Event& event) override {
    std::lock_guard<std::mutex> lock(mu_);
    events.push_back(event);
  }
  void flush() override { ++flushes; }

  // The events with a metric of this name.
  std::vector<Event> with(const std::string& metric) const {
    std::vector<Event> out;
    for (const auto& e : events) {
      for (const auto& m : e.metrics) {
        if (m.name == metric) out.push_back(e);
      }
    }
    return out;
  }

  std::vector<Event> events;
  int flushes = 0;

 private:
  std::mutex mu_;
};

// A metric's values in an event; empty when the event has no such metric.
inline std::vector<double> values_of(const Event& e, const std::string& metric) {
  for (const auto& m : e.metrics) {
    if (m.name == metric) return m.values;
  }
  return {};
}

// A dimension's value in an event; "" when absent.
inline std::string dimension_of(const Event& e, const std::string& name) {
  for (const auto& [k, v] : e.dimensions) {
    if (k == name) return v;
  }
  return "";
}

// Routes the default logger to a string while it lives.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("captured", sink));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() {
    spdlog::default_logger()->flush();
    return out_.str();
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace runpool::metrics::testing
