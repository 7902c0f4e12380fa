// The instance record as a DynamoDB item, and back. Attribute names are the table's schema
// (docs/design.md); decoding is strict, because the table may hold foreign or corrupted items and
// a bad item must be skipped with a warning, never half-read.
#pragma once

#include <stdexcept>

#include "common/aws/attribute_value.h"
#include "common/pool/instance_record.h"

namespace runpool::pool {

namespace attr {
inline constexpr const char* kInstanceId = "instance_id";
inline constexpr const char* kPool = "pool";
inline constexpr const char* kState = "state";
inline constexpr const char* kGeneration = "generation";
inline constexpr const char* kLabel = "label";
inline constexpr const char* kDeadline = "deadline";
inline constexpr const char* kHardDeadline = "hard_deadline";
inline constexpr const char* kStateSince = "state_since";
inline constexpr const char* kCreatedAt = "created_at";
inline constexpr const char* kResourceClass = "resource_class";
inline constexpr const char* kUsageClass = "usage_class";
inline constexpr const char* kInstanceType = "instance_type";
inline constexpr const char* kRegToken = "reg_token";
inline constexpr const char* kRegUrl = "reg_url";
inline constexpr const char* kRemoveToken = "remove_token";
inline constexpr const char* kJitConfig = "jit_config";
inline constexpr const char* kSealKey = "seal_key";
inline constexpr const char* kOpenKey = "open_key";
inline constexpr const char* kAdvertisePending = "advertise_pending";
inline constexpr const char* kShared = "shared";
inline constexpr const char* kOs = "os";
inline constexpr const char* kOrphanSince = "orphan_since";
inline constexpr const char* kKeptUntil = "kept_until";
inline constexpr const char* kBypassRemoval = "bypass_removal";
inline constexpr const char* kHeartbeat = "heartbeat";
inline constexpr const char* kSignal = "signal";
inline constexpr const char* kSignalGeneration = "signal_generation";
inline constexpr const char* kSignalDetail = "signal_detail";
inline constexpr const char* kRunnerId = "runner_id";
inline constexpr const char* kRunnerName = "runner_name";
inline constexpr const char* kBusy = "busy";
inline constexpr const char* kAgentVersion = "agent_version";
inline constexpr const char* kRunnerVersion = "runner_version";
inline constexpr const char* kAmiId = "ami_id";
inline constexpr const char* kRetirePending = "retire_pending";
inline constexpr const char* kReuseScopeKey = "reuse_scope_key";
inline constexpr const char* kAwaitedUntil = "awaited_until";
inline constexpr const char* kJobPrivileges = "job_privileges";
inline constexpr const char* kPreRun = "pre_run";
inline constexpr const char* kPreRunDetail = "pre_run_detail";
inline constexpr const char* kSpotRerun = "spot_rerun";
inline constexpr const char* kSpotRun = "spot_run";
inline constexpr const char* kSpotJob = "spot_job";
inline constexpr const char* kSpotGeneration = "spot_generation";
inline constexpr const char* kSpotJobResult = "spot_job_result";
}  // namespace attr

// The global secondary index on `label`.
inline constexpr const char* kLabelIndex = "by_label";

class RecordError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every attribute that has a value; empty strings, zero times and empty secrets are left out.
// `instance_id` holds the bare instance id: the table stores it as the record key
// (common/pool/record_key.h), which DynamoStateTable puts in its place.
aws::Item encode_record(const InstanceRecord& record);
// Throws RecordError naming the item and the attribute when something is missing or malformed.
// `instance_id` may be a record key or a bare instance id; the record holds the instance id.
InstanceRecord decode_record(const aws::Item& item);

}  // namespace runpool::pool
