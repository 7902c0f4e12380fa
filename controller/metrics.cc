#include "controller/metrics.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "common/metrics/file_sink.h"
#include "common/metrics/logs_sink.h"
#include "controller/backend.h"

namespace runpool::controller {

CommandMetrics::CommandMetrics(const Settings& s, Backend& backend)
    : CommandMetrics(s, s.metrics_log_group.empty() ? nullptr : &backend.logs(), host_name()) {}

CommandMetrics::CommandMetrics(const Settings& s, aws::CloudWatchLogsClient* logs, const std::string& host) {
  if (!s.metrics_file.empty()) fan_.add(std::make_unique<metrics::FileSink>(s.metrics_file));
  if (!s.metrics_log_group.empty() && logs) {
    if (std::string problem = aws::log_group_name_problem(s.metrics_log_group); !problem.empty()) {
      spdlog::warn("metrics_log_group: {}; no metrics are sent to CloudWatch Logs", problem);
    } else {
      fan_.add(std::make_unique<metrics::CloudWatchLogsSink>(
          *logs, s.metrics_log_group, metrics::log_stream_name("runpoolctl/" + s.pool + "/" + host)));
    }
  }
}

CommandMetrics::~CommandMetrics() { fan_.flush(); }

metrics::MetricsSink& CommandMetrics::sink() {
  if (!enabled()) return metrics::no_metrics();
  return fan_;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

}  // namespace runpool::controller
