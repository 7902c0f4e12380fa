// What the agent measures (docs/observability.md): registration latency, jobs seen busy, drain
// and cleaning durations, self-terminations — EMF events with the Pool dimension, and
// ResourceClass once the record says it, appended to the agent's metrics_file for the CloudWatch
// agent to ship. Default-constructed it measures nothing (metrics_file unset).
#pragma once

#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/metrics/sink.h"

namespace runpool::agent {

class AgentMetrics {
 public:
  AgentMetrics() = default;
  AgentMetrics(metrics::MetricsSink& sink, std::string ns, std::string pool, std::string instance_id);

  // RegistrationLatency: from seeing the assignment to reporting `registered` (config.sh, the
  // token's removal and the Listener's start included).
  void registered(int64_t now_ms, const std::string& resource_class, int64_t generation, Duration latency);
  // JobsSeenBusy = 1: the runner went from idle to busy (a job began).
  void job_seen_busy(int64_t now_ms, const std::string& resource_class, int64_t generation);
  // DrainDuration: from starting the drain to reporting `drained` (deregistered and cleaned).
  void drained(int64_t now_ms, const std::string& resource_class, int64_t generation, Duration drain);
  // CleaningDuration: one cleaning between assignments.
  void cleaned(int64_t now_ms, const std::string& resource_class, int64_t generation, Duration cleaning);
  // SelfTerminations = 1, with the reason as a property.
  void self_terminated(int64_t now_ms, const std::string& resource_class, int64_t generation,
                       const std::string& reason);

 private:
  metrics::Event event(int64_t now_ms, const std::string& resource_class, int64_t generation) const;

  metrics::MetricsSink* sink_ = &metrics::no_metrics();
  std::string ns_, pool_, instance_id_;
};

}  // namespace runpool::agent
