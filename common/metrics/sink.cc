#include "common/metrics/sink.h"

#include <spdlog/spdlog.h>

#include <stdexcept>

namespace runpool::metrics {

MetricsSink& no_metrics() {
  static NullSink sink;
  return sink;
}

void FanOutSink::emit(const Event& event) {
  for (auto& s : sinks_) s->emit(event);
}

void FanOutSink::flush() {
  for (auto& s : sinks_) s->flush();
}

std::optional<std::string> format_or_warn(const Event& event) {
  try {
    return format_emf(event);
  } catch (const std::invalid_argument& e) {
    spdlog::warn("metrics: dropped an event ({}): {}", event.metrics.empty() ? "no metric" : event.metrics[0].name,
                 e.what());
    return std::nullopt;
  }
}

}  // namespace runpool::metrics
