#include "common/github/scaleset_json.h"

#include <stdexcept>

#include "common/github/json_fields.h"
#include "common/json.h"

namespace runpool::github {
namespace {

const Json::Value& scaleset_array(const Json::Value& obj, const char* key, const std::string& what) {
  const Json::Value& v = require_member(obj, key, what);
  if (!v.isArray()) throw JsonError(what + ": field '" + key + "' is not an array");
  return v;
}

// A present, non-null object field, or nullptr.
const Json::Value* scaleset_object(const Json::Value& obj, const char* key, const std::string& what) {
  if (!obj.isObject() || !obj.isMember(key) || obj[key].isNull()) return nullptr;
  if (!obj[key].isObject()) throw JsonError(what + ": field '" + key + "' is not an object");
  return &obj[key];
}

std::string scaleset_item(const std::string& what, const char* key, Json::ArrayIndex i) {
  return what + " " + key + "[" + std::to_string(i) + "]";
}

// Unset times come as Go's zero time ("0001-01-01T00:00:00Z"), which no WallTime holds: nullopt,
// as is any other text that is not a time (a job must not be dropped over a timestamp's format).
std::optional<WallTime> scaleset_time(const Json::Value& obj, const char* key, const std::string& what) {
  std::optional<std::string> text = optional_string(obj, key, what);
  WallTime t;
  if (!text || !parse_github_time(*text, &t)) return std::nullopt;
  return t;
}

std::string string_or_empty(const Json::Value& obj, const char* key, const std::string& what) {
  return optional_string(obj, key, what).value_or("");
}

std::string require_non_empty(const Json::Value& obj, const char* key, const std::string& what) {
  std::string s = require_string(obj, key, what);
  if (s.empty()) throw JsonError(what + ": field '" + key + "' is empty");
  return s;
}

Json::Value labels_json(const std::vector<ScaleSetLabel>& labels) {
  Json::Value out(Json::arrayValue);
  for (const ScaleSetLabel& l : labels) {
    if (l.name.empty()) throw std::invalid_argument("scale set label with an empty name");
    Json::Value label(Json::objectValue);
    label["type"] = l.type.empty() ? "System" : l.type;
    label["name"] = l.name;
    out.append(label);
  }
  return out;
}

std::optional<JobMessageType> job_message_type(const std::string& type) {
  if (type == "JobAvailable") return JobMessageType::kJobAvailable;
  if (type == "JobAssigned") return JobMessageType::kJobAssigned;
  if (type == "JobStarted") return JobMessageType::kJobStarted;
  if (type == "JobCompleted") return JobMessageType::kJobCompleted;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(JobMessageType type) {
  switch (type) {
    case JobMessageType::kJobAvailable: return "JobAvailable";
    case JobMessageType::kJobAssigned: return "JobAssigned";
    case JobMessageType::kJobStarted: return "JobStarted";
    case JobMessageType::kJobCompleted: return "JobCompleted";
  }
  return "?";
}

ScaleSetStatistics parse_scale_set_statistics(const Json::Value& v, const std::string& what) {
  if (!v.isObject()) throw JsonError(what + ": expected a JSON object");
  auto count = [&](const char* key) { return optional_int(v, key, what).value_or(0); };
  ScaleSetStatistics s;
  s.total_available_jobs = count("totalAvailableJobs");
  s.total_acquired_jobs = count("totalAcquiredJobs");
  s.total_assigned_jobs = count("totalAssignedJobs");
  s.total_running_jobs = count("totalRunningJobs");
  s.total_registered_runners = count("totalRegisteredRunners");
  s.total_busy_runners = count("totalBusyRunners");
  s.total_idle_runners = count("totalIdleRunners");
  return s;
}

ScaleSet parse_scale_set(const Json::Value& v, const std::string& what) {
  ScaleSet s;
  s.id = require_int(v, "id", what);
  s.name = require_string(v, "name", what);
  s.runner_group_id = optional_int(v, "runnerGroupId", what).value_or(0);
  s.runner_group_name = string_or_empty(v, "runnerGroupName", what);
  if (v.isMember("labels") && !v["labels"].isNull()) {
    const Json::Value& labels = scaleset_array(v, "labels", what);
    for (Json::ArrayIndex i = 0; i < labels.size(); ++i) {
      std::string item = scaleset_item(what, "labels", i);
      s.labels.push_back({string_or_empty(labels[i], "type", item), require_string(labels[i], "name", item)});
    }
  }
  if (const Json::Value* rs = scaleset_object(v, "RunnerSetting", what)) {
    std::string item = what + " RunnerSetting";
    s.runner_setting.ephemeral = optional_bool(*rs, "ephemeral", false, item);
    s.runner_setting.is_elastic = optional_bool(*rs, "isElastic", false, item);
    s.runner_setting.disable_update = optional_bool(*rs, "disableUpdate", false, item);
  }
  s.created_on = scaleset_time(v, "createdOn", what);
  s.runner_jit_config_url = string_or_empty(v, "runnerJitConfigUrl", what);
  if (const Json::Value* st = scaleset_object(v, "statistics", what)) {
    s.statistics = parse_scale_set_statistics(*st, what + " statistics");
  }
  return s;
}

RunnerGroup parse_runner_group(const Json::Value& v, const std::string& what) {
  RunnerGroup g;
  g.id = require_int(v, "id", what);
  g.name = require_string(v, "name", what);
  g.size = optional_int(v, "size", what).value_or(0);
  g.is_default = optional_bool(v, "isDefaultGroup", false, what);
  return g;
}

MessageSessionInfo parse_message_session(const Json::Value& v, const std::string& what) {
  MessageSessionInfo s;
  s.session_id = require_non_empty(v, "sessionId", what);
  s.owner_name = string_or_empty(v, "ownerName", what);
  // Seen empty during an outage: without it there is nothing to poll.
  s.message_queue_url = require_non_empty(v, "messageQueueUrl", what);
  if (s.message_queue_url.rfind("https://", 0) != 0 && s.message_queue_url.rfind("http://", 0) != 0) {
    throw JsonError(what + ": field 'messageQueueUrl' is not an http(s) URL");
  }
  s.message_queue_token = Secret(require_non_empty(v, "messageQueueAccessToken", what));
  if (const Json::Value* st = scaleset_object(v, "statistics", what)) {
    s.statistics = parse_scale_set_statistics(*st, what + " statistics");
  }
  return s;
}

ScaleSetRunner parse_scale_set_runner(const Json::Value& v, const std::string& what) {
  ScaleSetRunner r;
  r.id = require_int(v, "id", what);
  r.name = require_string(v, "name", what);
  r.scale_set_id = optional_int(v, "runnerScaleSetId", what).value_or(0);
  return r;
}

ScaleSetJitConfig parse_scale_set_jit_config(const Json::Value& v, const std::string& what) {
  ScaleSetJitConfig c;
  const Json::Value* runner = scaleset_object(v, "runner", what);
  if (!runner) throw JsonError(what + ": field 'runner' missing");
  c.runner = parse_scale_set_runner(*runner, what + " runner");
  c.encoded_jit_config = Secret(require_non_empty(v, "encodedJITConfig", what));
  return c;
}

const Json::Value& list_values(const Json::Value& v, const std::string& what) {
  return scaleset_array(v, "value", what);
}

std::vector<int64_t> parse_acquired_jobs(const Json::Value& v, const std::string& what) {
  const Json::Value& values = list_values(v, what);
  std::vector<int64_t> ids;
  for (const Json::Value& id : values) {
    if (!id.isIntegral() || !id.isInt64()) throw JsonError(what + ": field 'value' holds a non-integer");
    ids.push_back(id.asInt64());
  }
  return ids;
}

JobMessage parse_job_message(const Json::Value& v, const std::string& what) {
  JobMessage m;
  std::optional<JobMessageType> type = job_message_type(require_string(v, "messageType", what));
  if (!type) throw JsonError(what + ": unknown messageType");
  m.type = *type;
  m.runner_request_id = require_int(v, "runnerRequestId", what);
  m.repository_name = string_or_empty(v, "repositoryName", what);
  m.owner_name = string_or_empty(v, "ownerName", what);
  m.job_id = string_or_empty(v, "jobId", what);
  m.job_workflow_ref = string_or_empty(v, "jobWorkflowRef", what);
  m.job_display_name = string_or_empty(v, "jobDisplayName", what);
  m.workflow_run_id = optional_int(v, "workflowRunId", what).value_or(0);
  m.event_name = string_or_empty(v, "eventName", what);
  if (v.isMember("requestLabels") && !v["requestLabels"].isNull()) {
    for (const Json::Value& l : scaleset_array(v, "requestLabels", what)) {
      if (!l.isString()) throw JsonError(what + ": field 'requestLabels' holds a non-string");
      m.request_labels.push_back(l.asString());
    }
  }
  m.queue_time = scaleset_time(v, "queueTime", what);
  m.scale_set_assign_time = scaleset_time(v, "scaleSetAssignTime", what);
  m.runner_assign_time = scaleset_time(v, "runnerAssignTime", what);
  m.finish_time = scaleset_time(v, "finishTime", what);
  m.acquire_job_url = string_or_empty(v, "acquireJobUrl", what);
  m.runner_id = optional_int(v, "runnerId", what).value_or(0);
  m.runner_name = string_or_empty(v, "runnerName", what);
  m.result = string_or_empty(v, "result", what);
  return m;
}

ScaleSetMessage parse_scale_set_message(const Json::Value& v, const std::string& what) {
  ScaleSetMessage msg;
  msg.message_id = require_int(v, "messageId", what);
  std::string type = require_string(v, "messageType", what);
  if (type != "RunnerScaleSetJobMessages") throw JsonError(what + ": messageType is not RunnerScaleSetJobMessages");
  if (const Json::Value* st = scaleset_object(v, "statistics", what)) {
    msg.statistics = parse_scale_set_statistics(*st, what + " statistics");
  }
  std::string body = optional_string(v, "body", what).value_or("");
  if (body.empty()) return msg;
  auto jobs = try_parse_json(body);
  if (!jobs || !jobs->isArray()) throw JsonError(what + ": field 'body' is not a JSON array");
  for (Json::ArrayIndex i = 0; i < jobs->size(); ++i) {
    std::string item = scaleset_item(what, "body", i);
    // Every job message says what it is; types added after this client are skipped.
    if (!job_message_type(require_string((*jobs)[i], "messageType", item))) {
      ++msg.skipped;
      continue;
    }
    msg.jobs.push_back(parse_job_message((*jobs)[i], item));
  }
  return msg;
}

Json::Value scale_set_spec_json(const ScaleSetSpec& spec) {
  if (spec.name.empty()) throw std::invalid_argument("scale set name is empty");
  Json::Value body(Json::objectValue);
  body["name"] = spec.name;
  body["runnerGroupId"] = static_cast<Json::Int64>(spec.runner_group_id);
  body["labels"] = labels_json(spec.labels.empty() ? std::vector<ScaleSetLabel>{{"System", spec.name}} : spec.labels);
  body["RunnerSetting"]["disableUpdate"] = spec.disable_update;
  if (spec.ephemeral) body["RunnerSetting"]["ephemeral"] = true;
  return body;
}

Json::Value scale_set_update_json(const ScaleSetUpdate& update) {
  Json::Value body(Json::objectValue);
  if (update.name) {
    if (update.name->empty()) throw std::invalid_argument("scale set name is empty");
    body["name"] = *update.name;
  }
  if (update.runner_group_id) body["runnerGroupId"] = static_cast<Json::Int64>(*update.runner_group_id);
  if (update.labels) {
    if (update.labels->empty()) throw std::invalid_argument("a scale set needs at least one label");
    body["labels"] = labels_json(*update.labels);
  }
  if (update.disable_update) body["RunnerSetting"]["disableUpdate"] = *update.disable_update;
  if (update.ephemeral) body["RunnerSetting"]["ephemeral"] = *update.ephemeral;
  return body;
}

}  // namespace runpool::github
