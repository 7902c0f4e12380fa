// EMF lines appended to a file, one per event: on an instance the CloudWatch agent tails the file
// (its `logs.metrics_collected.emf` or a log file entry); anywhere else it is a local record.
// Each event is one open(O_APPEND)/write/close, so concurrent writers (several runpoolctl runs, the
// agent) never interleave within a line and a rotated file is picked up at the next event.
#pragma once

#include <string>

#include "common/metrics/sink.h"

namespace runpool::metrics {

class FileSink final : public MetricsSink {
 public:
  explicit FileSink(std::string path) : path_(std::move(path)) {}
  // A failure to write is a warning; the event is lost.
  void emit(const Event& event) override;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace runpool::metrics
