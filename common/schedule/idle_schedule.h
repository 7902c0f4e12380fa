// The idle quota's schedule, as seed 000's idle_config: a list of entries {cron, time zone, idle
// count, eviction}; at a given moment the first entry whose cron expression matches the current
// minute in its time zone decides, and no match means an idle count of 0 and oldest_first.
//
// Written in the configuration as JSON (the key scale_down_schedule), for example:
//   [{"cron": "* 8-18 * * mon-fri", "time_zone": "Europe/Berlin", "idle": 3, "eviction": "oldest_first"},
//    {"cron": "* * * * *", "time_zone": "UTC", "idle": 1, "resource_class": "large"}]
// "time_zone" defaults to "UTC", "eviction" to "oldest_first", "resource_class" to every class.
// docs/configuration.md documents the format in full.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/pool/idle_quota.h"
#include "common/schedule/cron.h"

namespace runpool::schedule {

struct ScheduleEntry {
  CronExpression cron;
  std::string time_zone = "UTC";  // an IANA name, checked against the system's tz database on parse
  int idle = 0;
  pool::Eviction eviction = pool::Eviction::kOldestFirst;
  std::string resource_class;  // empty: every class
};

// Parses the JSON array. Throws std::invalid_argument naming the entry and the field that is wrong
// (bad JSON, unknown field, bad cron, unknown time zone, idle < 0 or > 10000, unknown eviction).
std::vector<ScheduleEntry> parse_idle_schedule(const std::string& json);

// The quota for `resource_class` at `epoch_ms` (UTC milliseconds): the first entry for that class
// (or for every class) whose cron matches the local minute in its time zone; else 0, oldest_first.
pool::IdleQuota quota_at(const std::vector<ScheduleEntry>& schedule, const std::string& resource_class,
                         int64_t epoch_ms);

}  // namespace runpool::schedule
