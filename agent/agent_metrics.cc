#include "agent/agent_metrics.h"

namespace runpool::agent {

using metrics::Unit;

namespace {
double ms(Duration d) { return static_cast<double>(d.count()); }
}  // namespace

AgentMetrics::AgentMetrics(metrics::MetricsSink& sink, std::string ns, std::string pool, std::string instance_id)
    : sink_(&sink), ns_(std::move(ns)), pool_(std::move(pool)), instance_id_(std::move(instance_id)) {}

metrics::Event AgentMetrics::event(int64_t now_ms, const std::string& resource_class, int64_t generation) const {
  metrics::Event e;
  e.ns = ns_;
  e.timestamp_ms = now_ms;
  e.dimension("Pool", pool_);
  if (!resource_class.empty()) e.dimension("ResourceClass", resource_class);
  e.property("InstanceId", instance_id_).property("Generation", static_cast<Json::Int64>(generation));
  return e;
}

void AgentMetrics::registered(int64_t now_ms, const std::string& rc, int64_t generation, Duration latency) {
  sink_->emit(event(now_ms, rc, generation).add("RegistrationLatency", ms(latency), Unit::kMilliseconds));
}

void AgentMetrics::job_seen_busy(int64_t now_ms, const std::string& rc, int64_t generation) {
  sink_->emit(event(now_ms, rc, generation).add("JobsSeenBusy", 1));
}

void AgentMetrics::drained(int64_t now_ms, const std::string& rc, int64_t generation, Duration drain) {
  sink_->emit(event(now_ms, rc, generation).add("DrainDuration", ms(drain), Unit::kMilliseconds));
}

void AgentMetrics::cleaned(int64_t now_ms, const std::string& rc, int64_t generation, Duration cleaning) {
  sink_->emit(event(now_ms, rc, generation).add("CleaningDuration", ms(cleaning), Unit::kMilliseconds));
}

void AgentMetrics::self_terminated(int64_t now_ms, const std::string& rc, int64_t generation,
                                   const std::string& reason) {
  sink_->emit(event(now_ms, rc, generation).add("SelfTerminations", 1).property("Reason", reason));
}

}  // namespace runpool::agent
