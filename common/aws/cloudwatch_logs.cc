#include "common/aws/cloudwatch_logs.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "common/json.h"

namespace runpool::aws {
namespace {

constexpr size_t kMaxNameLength = 512;

void require_names(const std::string& group, const std::string* stream) {
  if (auto p = log_group_name_problem(group); !p.empty()) throw std::invalid_argument(p);
  if (stream) {
    if (auto p = log_stream_name_problem(*stream); !p.empty()) throw std::invalid_argument(p);
  }
}

std::optional<int64_t> index_field(const Json::Value& info, const char* key) {
  const Json::Value& v = info[key];
  if (v.isNull()) return std::nullopt;
  if (!v.isIntegral()) throw JsonError(std::string("PutLogEvents response: ") + key + " is not an integer");
  return v.asInt64();
}

}  // namespace

std::string log_group_name_problem(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) return "log group name must be 1-512 characters";
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '/' || c == '.' || c == '#')) {
      return "log group name '" + name + "' may hold only letters, digits and _ - / . #";
    }
  }
  return "";
}

std::string log_stream_name_problem(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) return "log stream name must be 1-512 characters";
  if (name.find_first_of(":*") != std::string::npos) return "log stream name '" + name + "' must not hold ':' or '*'";
  return "";
}

CloudWatchLogsClient::CloudWatchLogsClient(AwsCaller& caller) : caller_(caller) {}

Json::Value CloudWatchLogsClient::call(const std::string& operation, const Json::Value& body) {
  HttpRequest req;
  req.method = "POST";
  req.headers = {{"Content-Type", "application/x-amz-json-1.1"},
                 {"X-Amz-Target", std::string(kLogsTargetPrefix) + "." + operation}};
  req.body = write_json(body);
  HttpResponse resp = caller_.call(operation, std::move(req), parse_json_error);
  if (resp.body.empty()) return Json::Value(Json::objectValue);
  try {
    Json::Value doc = parse_json(resp.body, "CloudWatch Logs " + operation + " response");
    if (!doc.isObject()) throw JsonError("CloudWatch Logs " + operation + " response: expected a JSON object");
    return doc;
  } catch (const JsonError& e) {
    throw AwsError(caller_.settings().service, operation, resp.status, "MalformedResponse", e.what());
  }
}

bool CloudWatchLogsClient::create_log_group(const std::string& group) {
  require_names(group, nullptr);
  Json::Value body(Json::objectValue);
  body["logGroupName"] = group;
  try {
    call("CreateLogGroup", body);
    return true;
  } catch (const AwsError& e) {
    if (e.code() == "ResourceAlreadyExistsException") return false;
    throw;
  }
}

bool CloudWatchLogsClient::create_log_stream(const std::string& group, const std::string& stream) {
  require_names(group, &stream);
  Json::Value body(Json::objectValue);
  body["logGroupName"] = group;
  body["logStreamName"] = stream;
  try {
    call("CreateLogStream", body);
    return true;
  } catch (const AwsError& e) {
    if (e.code() == "ResourceAlreadyExistsException") return false;
    throw;
  }
}

RejectedLogEvents CloudWatchLogsClient::put_log_events(const std::string& group, const std::string& stream,
                                                       std::vector<LogEvent> events) {
  require_names(group, &stream);
  if (events.empty()) throw std::invalid_argument("PutLogEvents needs at least one event");
  if (events.size() > kMaxLogEventsPerBatch) throw std::invalid_argument("PutLogEvents takes at most 10,000 events");
  std::stable_sort(events.begin(), events.end(),
                   [](const LogEvent& a, const LogEvent& b) { return a.timestamp_ms < b.timestamp_ms; });
  if (events.back().timestamp_ms - events.front().timestamp_ms > kMaxLogBatchSpanMs) {
    throw std::invalid_argument("a PutLogEvents batch may span at most 24 hours");
  }
  size_t bytes = 0;
  Json::Value list(Json::arrayValue);
  for (const auto& e : events) {
    if (e.message.empty()) throw std::invalid_argument("a log event's message must not be empty");
    if (e.message.size() > kMaxLogEventBytes) throw std::invalid_argument("a log event holds at most 256 KiB");
    bytes += e.message.size() + kLogEventOverheadBytes;
    Json::Value j(Json::objectValue);
    j["timestamp"] = static_cast<Json::Int64>(e.timestamp_ms);
    j["message"] = e.message;
    list.append(j);
  }
  if (bytes > kMaxLogBatchBytes) throw std::invalid_argument("a PutLogEvents batch holds at most 1,048,576 bytes");
  Json::Value body(Json::objectValue);
  body["logGroupName"] = group;
  body["logStreamName"] = stream;
  body["logEvents"] = list;
  Json::Value doc = call("PutLogEvents", body);
  RejectedLogEvents out;
  if (doc.isMember("rejectedLogEventsInfo")) {
    const Json::Value& info = doc["rejectedLogEventsInfo"];
    try {
      if (!info.isObject()) throw JsonError("PutLogEvents response: rejectedLogEventsInfo is not an object");
      out.too_new_start = index_field(info, "tooNewLogEventStartIndex");
      out.too_old_end = index_field(info, "tooOldLogEventEndIndex");
      out.expired_end = index_field(info, "expiredLogEventEndIndex");
    } catch (const JsonError& e) {
      throw AwsError(caller_.settings().service, "PutLogEvents", 200, "MalformedResponse", e.what());
    }
  }
  return out;
}

}  // namespace runpool::aws
