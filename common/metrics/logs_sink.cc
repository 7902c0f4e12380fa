#include "common/metrics/logs_sink.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

namespace runpool::metrics {

CloudWatchLogsSink::CloudWatchLogsSink(aws::CloudWatchLogsClient& client, std::string group, std::string stream)
    : client_(client), group_(std::move(group)), stream_(std::move(stream)) {}

void CloudWatchLogsSink::emit(const Event& event) {
  auto line = format_or_warn(event);
  if (!line) return;
  const size_t size = line->size() + aws::kLogEventOverheadBytes;
  if (line->size() > aws::kMaxLogEventBytes || bytes_ + size > aws::kMaxLogBatchBytes ||
      events_.size() >= aws::kMaxLogEventsPerBatch) {
    spdlog::warn("metrics: an event of {} bytes does not fit the batch for {}; dropped", line->size(), group_);
    return;
  }
  bytes_ += size;
  events_.push_back({event.timestamp_ms, std::move(*line)});
}

void CloudWatchLogsSink::flush() {
  if (events_.empty()) return;
  std::vector<aws::LogEvent> batch;
  batch.swap(events_);
  bytes_ = 0;
  try {
    client_.create_log_stream(group_, stream_);
  } catch (const std::exception& e) {
    // Maybe only CreateLogStream is not allowed and the stream exists: PutLogEvents tells.
    spdlog::warn("metrics: could not create log stream {} in {}: {}", stream_, group_, e.what());
  }
  const size_t n = batch.size();
  try {
    aws::RejectedLogEvents r = client_.put_log_events(group_, stream_, std::move(batch));
    if (r.any()) spdlog::warn("metrics: CloudWatch Logs rejected some of the {} event(s) as too old or too new", n);
  } catch (const std::exception& e) {
    spdlog::warn("metrics: {} event(s) not sent to {}: {}", n, group_, e.what());
  }
}

std::string log_stream_name(const std::string& text) {
  std::string out = text.substr(0, 512);
  std::replace_if(out.begin(), out.end(), [](char c) { return c == ':' || c == '*'; }, '_');
  return out.empty() ? "_" : out;
}

}  // namespace runpool::metrics
