// EMF events sent to a CloudWatch Logs group: buffered while the command runs, sent in one
// PutLogEvents by flush() (CreateLogStream first; one that exists is fine). For runpoolctl,
// which runs for seconds to minutes where nothing tails a file. Any failure is a warning and
// costs only the buffered events.
#pragma once

#include <string>
#include <vector>

#include "common/aws/cloudwatch_logs.h"
#include "common/metrics/sink.h"

namespace runpool::metrics {

class CloudWatchLogsSink final : public MetricsSink {
 public:
  CloudWatchLogsSink(aws::CloudWatchLogsClient& client, std::string group, std::string stream);
  // Buffers the event; one that would break PutLogEvents' limits is dropped with a warning.
  void emit(const Event& event) override;
  // Sends what is buffered, if anything, and empties the buffer either way.
  void flush() override;

  const std::string& group() const { return group_; }
  const std::string& stream() const { return stream_; }
  size_t buffered() const { return events_.size(); }

 private:
  aws::CloudWatchLogsClient& client_;
  std::string group_, stream_;
  std::vector<aws::LogEvent> events_;
  size_t bytes_ = 0;
};

// A log stream name from parts: ':' and '*' (not allowed) become '_', cut to 512 characters.
std::string log_stream_name(const std::string& text);

}  // namespace runpool::metrics
