// CloudWatch Logs over its JSON 1.1 protocol (POST /, X-Amz-Target: Logs_20140328.<Op>), on
// AwsCaller (signing, retries, errors): just what shipping runpoolctl's EMF events needs. A log
// group or stream that already exists is an answer (`false`), not an error; everything else is
// an AwsError. PutLogEvents needs no sequence token (CloudWatch Logs ignores it since 2023).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/aws/aws_caller.h"

namespace runpool::aws {

inline constexpr const char* kLogsTargetPrefix = "Logs_20140328";

// PutLogEvents' limits: a batch holds at most 10,000 events of at most 1,048,576 bytes, counting
// each message's UTF-8 bytes plus 26, and spans at most 24 hours; one event at most 256 KiB.
inline constexpr size_t kMaxLogEventsPerBatch = 10'000;
inline constexpr size_t kMaxLogBatchBytes = 1'048'576;
inline constexpr size_t kLogEventOverheadBytes = 26;
inline constexpr size_t kMaxLogEventBytes = 262'144 - kLogEventOverheadBytes;
inline constexpr int64_t kMaxLogBatchSpanMs = 24 * 3'600'000LL;

struct LogEvent {
  int64_t timestamp_ms = 0;
  std::string message;
  bool operator==(const LogEvent&) const = default;
};

// Events CloudWatch Logs accepted the call but not stored: indexes into the (time-sorted) batch.
struct RejectedLogEvents {
  std::optional<int64_t> too_new_start;  // this event and every later one: too far in the future
  std::optional<int64_t> too_old_end;    // every event before this one: older than 14 days
  std::optional<int64_t> expired_end;    // every event before this one: past the group's retention
  bool any() const { return too_new_start || too_old_end || expired_end; }
};

class CloudWatchLogsClient {
 public:
  explicit CloudWatchLogsClient(AwsCaller& caller);

  // True when this call created it; false when it already existed (ResourceAlreadyExistsException).
  bool create_log_group(const std::string& group);
  bool create_log_stream(const std::string& group, const std::string& stream);
  // Sends one batch, sorted by time (the service requires it). Throws std::invalid_argument when
  // the batch breaks a limit above (so nothing is sent), AwsError when the call fails (a missing
  // group or stream is ResourceNotFoundException).
  RejectedLogEvents put_log_events(const std::string& group, const std::string& stream, std::vector<LogEvent> events);

 private:
  Json::Value call(const std::string& operation, const Json::Value& body);

  AwsCaller& caller_;
};

// "" when `name` is a valid log group name (1-512 of letters, digits, _ - / . #), else why not.
std::string log_group_name_problem(const std::string& name);
// "" when `name` is a valid log stream name (1-512 characters, no ':' or '*'), else why not.
std::string log_stream_name_problem(const std::string& name);

}  // namespace runpool::aws
