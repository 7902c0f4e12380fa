#include "common/schedule/idle_schedule.h"

#include <json/json.h>

#include <memory>
#include <optional>
#include <stdexcept>

#include "common/json.h"

namespace runpool::schedule {
namespace {

constexpr int kMaxIdle = 10000;
constexpr const char* kFields[] = {"cron", "time_zone", "idle", "eviction", "resource_class"};

const char* type_name(const Json::Value& v) {
  switch (v.type()) {
    case Json::nullValue: return "null";
    case Json::intValue:
    case Json::uintValue: return "an integer";
    case Json::realValue: return "a fractional number";
    case Json::stringValue: return "a string";
    case Json::booleanValue: return "a boolean";
    case Json::arrayValue: return "an array";
    case Json::objectValue: return "an object";
  }
  return "?";
}

// Strict JSON: no comments, no duplicate keys, nothing after the document.
Json::Value parse_strict(const std::string& text) {
  Json::CharReaderBuilder builder;
  Json::CharReaderBuilder::strictMode(&builder.settings_);
  std::string errors;
  std::optional<Json::Value> value = read_json(builder, text, &errors);  // never throws (the schedule fuzzer)
  if (!value) {
    while (!errors.empty() && (errors.back() == '\n' || errors.back() == ' ')) errors.pop_back();
    for (char& c : errors) {
      if (c == '\n') c = ' ';
    }
    throw std::invalid_argument("not valid JSON: " + errors);
  }
  return *value;
}

ScheduleEntry parse_entry(const Json::Value& v, const std::string& where) {
  if (!v.isObject()) throw std::invalid_argument(where + ": expected an object, got " + type_name(v));
  for (const std::string& key : v.getMemberNames()) {
    bool known = false;
    for (const char* f : kFields) known = known || key == f;
    if (!known) {
      throw std::invalid_argument(where + ": unknown field '" + key +
                                  "' (known: cron, time_zone, idle, eviction, resource_class)");
    }
  }
  auto string_field = [&](const char* key) -> std::optional<std::string> {
    if (!v.isMember(key)) return std::nullopt;
    const Json::Value& f = v[key];
    if (!f.isString()) {
      throw std::invalid_argument(where + "." + key + ": expected a string, got " + type_name(f));
    }
    return f.asString();
  };

  ScheduleEntry e;
  std::optional<std::string> cron = string_field("cron");
  if (!cron) throw std::invalid_argument(where + ": field 'cron' is missing");
  try {
    e.cron = CronExpression::parse(*cron);
  } catch (const std::invalid_argument& err) {
    throw std::invalid_argument(where + ".cron: " + err.what());
  }

  if (std::optional<std::string> tz = string_field("time_zone")) {
    try {
      check_time_zone(*tz);
    } catch (const std::invalid_argument& err) {
      throw std::invalid_argument(where + ".time_zone: " + err.what());
    }
    e.time_zone = *tz;
  }

  if (!v.isMember("idle")) throw std::invalid_argument(where + ": field 'idle' is missing");
  const Json::Value& idle = v["idle"];
  // The JSON type, not isInt(): jsoncpp's isInt() also accepts 3.0.
  if (idle.type() != Json::intValue && idle.type() != Json::uintValue) {
    throw std::invalid_argument(where + ".idle: expected an integer, got " + type_name(idle));
  }
  if (!idle.isInt64() || idle.asInt64() < 0 || idle.asInt64() > kMaxIdle) {
    std::string shown = idle.isInt64() ? std::to_string(idle.asInt64()) : std::to_string(idle.asUInt64());
    throw std::invalid_argument(where + ".idle: " + shown + " is outside 0.." + std::to_string(kMaxIdle));
  }
  e.idle = static_cast<int>(idle.asInt64());

  if (std::optional<std::string> ev = string_field("eviction")) {
    auto parsed = pool::parse_eviction(*ev);
    if (!parsed) {
      throw std::invalid_argument(where + ".eviction: '" + *ev + "' is not oldest_first or newest_first");
    }
    e.eviction = *parsed;
  }

  if (std::optional<std::string> rc = string_field("resource_class")) {
    if (rc->empty()) {
      throw std::invalid_argument(where + ".resource_class: empty (leave the field out to cover every class)");
    }
    e.resource_class = *rc;
  }
  return e;
}

}  // namespace

std::vector<ScheduleEntry> parse_idle_schedule(const std::string& json) {
  // A blank value is the empty schedule, like the default "[]".
  if (json.find_first_not_of(" \t\r\n") == std::string::npos) return {};
  Json::Value root = parse_strict(json);
  if (!root.isArray()) {
    throw std::invalid_argument(std::string("expected a JSON array of entries, got ") + type_name(root));
  }
  std::vector<ScheduleEntry> out;
  out.reserve(root.size());
  for (Json::ArrayIndex i = 0; i < root.size(); ++i) {
    out.push_back(parse_entry(root[i], "schedule[" + std::to_string(i) + "]"));
  }
  return out;
}

pool::IdleQuota quota_at(const std::vector<ScheduleEntry>& schedule, const std::string& resource_class,
                         int64_t epoch_ms) {
  for (size_t i = 0; i < schedule.size(); ++i) {
    const ScheduleEntry& e = schedule[i];
    if (!e.resource_class.empty() && e.resource_class != resource_class) continue;
    if (!e.cron.matches(local_minute(epoch_ms, e.time_zone))) continue;
    return {e.idle, e.eviction,
            "schedule[" + std::to_string(i) + "] '" + e.cron.text() + "' " + e.time_zone};
  }
  return {0, pool::Eviction::kOldestFirst, "no schedule entry matches"};
}

}  // namespace runpool::schedule
