#include "common/pool/record_codec.h"

#include <algorithm>

#include "common/pool/record_key.h"

namespace runpool::pool {
namespace {

using aws::AttributeValue;

void put_string(aws::Item& item, const char* name, const std::string& value) {
  if (!value.empty()) item[name] = AttributeValue::string(value);
}
void put_int(aws::Item& item, const char* name, int64_t value) {
  if (value != 0) item[name] = AttributeValue::number(value);
}

// The item's id for a warning: a corrupted or foreign item's id may be huge or hold control
// characters, which must not forge log lines or flood them — at most 64 bytes, each outside
// printable ASCII shown as '?'.
std::string where(const aws::Item& item) {
  auto it = item.find(attr::kInstanceId);
  if (it == item.end() || it->second.type() != AttributeValue::Type::kString) return "item without an instance_id";
  const std::string& id = it->second.as_string();
  std::string shown = id.substr(0, 64);
  for (char& c : shown) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return "item " + shown + (id.size() > 64 ? "…" : "");
}

}  // namespace

aws::Item encode_record(const InstanceRecord& r) {
  aws::Item item;
  item[attr::kInstanceId] = AttributeValue::string(r.instance_id);
  put_string(item, attr::kPool, r.pool);
  item[attr::kState] = AttributeValue::string(std::string(state_name(r.state)));
  item[attr::kGeneration] = AttributeValue::number(r.generation);
  put_string(item, attr::kLabel, r.label);
  put_int(item, attr::kDeadline, r.deadline_ms);
  put_int(item, attr::kHardDeadline, r.hard_deadline_ms);
  put_int(item, attr::kStateSince, r.state_since_ms);
  put_int(item, attr::kCreatedAt, r.created_ms);
  put_string(item, attr::kResourceClass, r.resource_class);
  item[attr::kUsageClass] = AttributeValue::string(std::string(usage_class_name(r.usage_class)));
  put_string(item, attr::kInstanceType, r.instance_type);
  put_string(item, attr::kRegToken, r.reg_token.reveal());
  put_string(item, attr::kRegUrl, r.reg_url);
  put_string(item, attr::kRemoveToken, r.remove_token.reveal());
  put_string(item, attr::kJitConfig, r.jit_config.reveal());
  put_string(item, attr::kSealKey, r.seal_key);
  put_string(item, attr::kOpenKey, r.open_key.reveal());
  if (r.advertise_pending) item[attr::kAdvertisePending] = AttributeValue::boolean(true);
  if (r.shared) item[attr::kShared] = AttributeValue::boolean(true);
  put_string(item, attr::kOs, r.os);
  put_int(item, attr::kOrphanSince, r.orphan_since_ms);
  put_int(item, attr::kKeptUntil, r.kept_until_ms);
  if (r.bypass_removal) item[attr::kBypassRemoval] = AttributeValue::boolean(true);
  put_string(item, attr::kAmiId, r.ami_id);
  if (r.retire_pending) item[attr::kRetirePending] = AttributeValue::boolean(true);
  put_string(item, attr::kReuseScopeKey, r.reuse_scope_key);
  put_int(item, attr::kAwaitedUntil, r.awaited_until_ms);
  put_string(item, attr::kJobPrivileges, r.job_privileges);
  put_int(item, attr::kHeartbeat, r.heartbeat_ms);
  if (r.signal != AgentSignal::kNone) {
    item[attr::kSignal] = AttributeValue::string(std::string(agent_signal_name(r.signal)));
    item[attr::kSignalGeneration] = AttributeValue::number(r.signal_generation);
  }
  put_string(item, attr::kSignalDetail, r.signal_detail);
  put_int(item, attr::kRunnerId, r.runner_id);
  put_string(item, attr::kRunnerName, r.runner_name);
  if (r.busy) item[attr::kBusy] = AttributeValue::boolean(true);
  put_string(item, attr::kAgentVersion, r.agent_version);
  put_string(item, attr::kRunnerVersion, r.runner_version);
  if (r.pre_run != PreRun::kNone) item[attr::kPreRun] = AttributeValue::string(std::string(pre_run_name(r.pre_run)));
  put_string(item, attr::kPreRunDetail, r.pre_run_detail);
  put_string(item, attr::kSpotRerun, r.spot_rerun);
  put_string(item, attr::kSpotRun, r.spot_run);
  put_string(item, attr::kSpotJob, r.spot_job);
  put_int(item, attr::kSpotGeneration, r.spot_generation);
  put_string(item, attr::kSpotJobResult, r.spot_job_result);
  return item;
}

InstanceRecord decode_record(const aws::Item& item) {
  const std::string at = where(item);
  try {
    InstanceRecord r;
    auto key = parse_record_key(aws::get_string(item, attr::kInstanceId));
    if (!key) throw RecordError("instance_id is not \"<instance role id>:<instance id>\" nor an instance id");
    r.instance_id = key->instance_id;
    auto state = parse_state(aws::get_string(item, attr::kState));
    if (!state) throw RecordError("unknown state");
    r.state = *state;
    r.generation = aws::get_int(item, attr::kGeneration);
    r.pool = aws::find_string(item, attr::kPool).value_or("");
    r.label = aws::find_string(item, attr::kLabel).value_or("");
    r.deadline_ms = aws::find_int(item, attr::kDeadline).value_or(0);
    r.hard_deadline_ms = aws::find_int(item, attr::kHardDeadline).value_or(0);
    r.state_since_ms = aws::find_int(item, attr::kStateSince).value_or(0);
    r.created_ms = aws::find_int(item, attr::kCreatedAt).value_or(0);
    r.resource_class = aws::find_string(item, attr::kResourceClass).value_or("");
    if (auto u = aws::find_string(item, attr::kUsageClass)) {
      auto parsed = parse_usage_class(*u);
      if (!parsed) throw RecordError("unknown usage_class");
      r.usage_class = *parsed;
    }
    r.instance_type = aws::find_string(item, attr::kInstanceType).value_or("");
    r.reg_token = Secret(aws::find_string(item, attr::kRegToken).value_or(""));
    r.reg_url = aws::find_string(item, attr::kRegUrl).value_or("");
    r.remove_token = Secret(aws::find_string(item, attr::kRemoveToken).value_or(""));
    r.jit_config = Secret(aws::find_string(item, attr::kJitConfig).value_or(""));
    r.seal_key = aws::find_string(item, attr::kSealKey).value_or("");
    r.open_key = Secret(aws::find_string(item, attr::kOpenKey).value_or(""));
    r.advertise_pending = aws::find_bool(item, attr::kAdvertisePending).value_or(false);
    r.shared = aws::find_bool(item, attr::kShared).value_or(false);
    r.os = aws::find_string(item, attr::kOs).value_or("");
    r.orphan_since_ms = aws::find_int(item, attr::kOrphanSince).value_or(0);
    r.kept_until_ms = aws::find_int(item, attr::kKeptUntil).value_or(0);
    r.bypass_removal = aws::find_bool(item, attr::kBypassRemoval).value_or(false);
    r.ami_id = aws::find_string(item, attr::kAmiId).value_or("");
    r.retire_pending = aws::find_bool(item, attr::kRetirePending).value_or(false);
    r.reuse_scope_key = aws::find_string(item, attr::kReuseScopeKey).value_or("");  // absent: untagged
    r.awaited_until_ms = aws::find_int(item, attr::kAwaitedUntil).value_or(0);
    r.job_privileges = aws::find_string(item, attr::kJobPrivileges).value_or("");   // absent: the agent's own
    r.heartbeat_ms = aws::find_int(item, attr::kHeartbeat).value_or(0);
    if (auto s = aws::find_string(item, attr::kSignal)) {
      auto parsed = parse_agent_signal(*s);
      if (!parsed) throw RecordError("unknown signal");
      r.signal = *parsed;
      r.signal_generation = aws::find_int(item, attr::kSignalGeneration).value_or(0);
    }
    r.signal_detail = aws::find_string(item, attr::kSignalDetail).value_or("");
    r.runner_id = aws::find_int(item, attr::kRunnerId).value_or(0);
    r.runner_name = aws::find_string(item, attr::kRunnerName).value_or("");
    r.busy = aws::find_bool(item, attr::kBusy).value_or(false);
    r.agent_version = aws::find_string(item, attr::kAgentVersion).value_or("");
    r.runner_version = aws::find_string(item, attr::kRunnerVersion).value_or("");
    if (auto p = aws::find_string(item, attr::kPreRun)) {
      auto parsed = parse_pre_run(*p);
      if (!parsed) throw RecordError("unknown pre_run");
      r.pre_run = *parsed;
    }
    r.pre_run_detail = aws::find_string(item, attr::kPreRunDetail).value_or("");
    r.spot_rerun = aws::find_string(item, attr::kSpotRerun).value_or("");
    r.spot_run = aws::find_string(item, attr::kSpotRun).value_or("");
    r.spot_job = aws::find_string(item, attr::kSpotJob).value_or("");
    r.spot_generation = aws::find_int(item, attr::kSpotGeneration).value_or(0);
    r.spot_job_result = aws::find_string(item, attr::kSpotJobResult).value_or("");
    return r;
  } catch (const RecordError& e) {
    throw RecordError(at + ": " + e.what());
  } catch (const std::exception& e) {
    throw RecordError(at + ": " + e.what());
  }
}

}  // namespace runpool::pool
