// runpoolctl's metrics, wired from the settings (docs/observability.md): EMF lines appended to
// metrics_file, and events buffered and sent to the CloudWatch Logs group metrics_log_group in
// one PutLogEvents when the command ends (stream runpoolctl/<pool>/<host>). Neither set: metrics
// off. main owns it for the whole command; nothing here ever fails the command.
#pragma once

#include <memory>
#include <string>

#include "common/aws/cloudwatch_logs.h"
#include "common/metrics/sink.h"
#include "controller/settings.h"

namespace runpool::controller {

class Backend;

class CommandMetrics {
 public:
  CommandMetrics(const Settings& settings, Backend& backend);
  // `logs` is used only when metrics_log_group is set; `host` names the log stream.
  CommandMetrics(const Settings& settings, aws::CloudWatchLogsClient* logs, const std::string& host);
  ~CommandMetrics();  // flushes: the one PutLogEvents of the run
  CommandMetrics(const CommandMetrics&) = delete;
  CommandMetrics& operator=(const CommandMetrics&) = delete;

  metrics::MetricsSink& sink();  // no_metrics() when metrics are off
  bool enabled() const { return !fan_.empty(); }

 private:
  metrics::FanOutSink fan_;
};

// This machine's name ("unknown" when it has none).
std::string host_name();

}  // namespace runpool::controller
