// The scale-set API's JSON, read strictly into scaleset_types.h and written for requests. Every
// parse_* throws JsonError naming `what` and the field on a missing field or a wrong type, never
// quoting a value (sessions and JIT configs carry tokens).
#pragma once

#include <string>
#include <vector>

#include <json/json.h>

#include "common/github/scaleset_types.h"

namespace runpool::github {

ScaleSet parse_scale_set(const Json::Value& v, const std::string& what);
ScaleSetStatistics parse_scale_set_statistics(const Json::Value& v, const std::string& what);
RunnerGroup parse_runner_group(const Json::Value& v, const std::string& what);
MessageSessionInfo parse_message_session(const Json::Value& v, const std::string& what);
ScaleSetRunner parse_scale_set_runner(const Json::Value& v, const std::string& what);
ScaleSetJitConfig parse_scale_set_jit_config(const Json::Value& v, const std::string& what);
// The service's lists: {count, value:[…]}; `value` returned.
const Json::Value& list_values(const Json::Value& v, const std::string& what);
// acquirejobs' answer: {count, value:[runnerRequestId]}.
std::vector<int64_t> parse_acquired_jobs(const Json::Value& v, const std::string& what);

// A queue envelope {messageId, messageType: "RunnerScaleSetJobMessages", body, statistics}:
// `body` is a JSON array serialised as a string (empty: no jobs). Another messageType, a body
// that is not such an array, or a job message without messageType/runnerRequestId throws;
// job messages of unknown types are counted in `skipped`. parse_job_message throws on those.
ScaleSetMessage parse_scale_set_message(const Json::Value& v, const std::string& what);
JobMessage parse_job_message(const Json::Value& v, const std::string& what);

Json::Value scale_set_spec_json(const ScaleSetSpec& spec);
Json::Value scale_set_update_json(const ScaleSetUpdate& update);

}  // namespace runpool::github
