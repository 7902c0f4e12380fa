#include "common/schedule/idle_schedule.h"

#include <date/date.h>
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>

namespace runpool::schedule {
namespace {

using pool::Eviction;

// UTC milliseconds of a UTC wall-clock minute.
int64_t utc_ms(int y, unsigned mo, unsigned d, int h, int mi) {
  auto t = date::sys_days{date::year{y} / mo / d} + std::chrono::hours{h} + std::chrono::minutes{mi};
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string schedule_error(const std::string& json) {
  try {
    parse_idle_schedule(json);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

// Found by the fuzzer: 1,000 nested '[' made jsoncpp throw its own exception, which escaped
// runpoolctl's configuration checks and aborted it.
TEST(IdleSchedule, DeepNestingIsInvalidJsonNotACrash) {
  EXPECT_THROW(parse_idle_schedule(std::string(1100, '[')), std::invalid_argument);
  EXPECT_THROW(parse_idle_schedule(std::string(1100, '[') + std::string(1100, ']')), std::invalid_argument);
}

TEST(IdleSchedule, ParsesEveryFieldAndTheDefaults) {
  auto s = parse_idle_schedule(
      R"([{"cron": "* 8-18 * * mon-fri", "time_zone": "Europe/Berlin", "idle": 3, "eviction": "newest_first",
           "resource_class": "large"},
          {"cron": "*  *  *  *  *", "idle": 1}])");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].cron.text(), "* 8-18 * * mon-fri");
  EXPECT_EQ(s[0].time_zone, "Europe/Berlin");
  EXPECT_EQ(s[0].idle, 3);
  EXPECT_EQ(s[0].eviction, Eviction::kNewestFirst);
  EXPECT_EQ(s[0].resource_class, "large");
  EXPECT_EQ(s[1].cron.text(), "* * * * *");  // the fields as written, single-spaced
  EXPECT_EQ(s[1].time_zone, "UTC");
  EXPECT_EQ(s[1].idle, 1);
  EXPECT_EQ(s[1].eviction, Eviction::kOldestFirst);
  EXPECT_EQ(s[1].resource_class, "");
}

TEST(IdleSchedule, EmptyScheduleIsZeroOldestFirst) {
  for (const char* text : {"[]", " [ ] ", "", "  \n"}) {
    auto s = parse_idle_schedule(text);
    EXPECT_TRUE(s.empty()) << text;
    auto q = quota_at(s, "small", utc_ms(2026, 7, 15, 12, 0));
    EXPECT_EQ(q.idle, 0);
    EXPECT_EQ(q.eviction, Eviction::kOldestFirst);
    EXPECT_EQ(q.source, "no schedule entry matches");
  }
}

TEST(IdleSchedule, IdleBounds) {
  EXPECT_EQ(parse_idle_schedule(R"([{"cron": "* * * * *", "idle": 0}])")[0].idle, 0);
  EXPECT_EQ(parse_idle_schedule(R"([{"cron": "* * * * *", "idle": 10000}])")[0].idle, 10000);
  EXPECT_EQ(schedule_error(R"([{"cron": "* * * * *", "idle": 10001}])"), "schedule[0].idle: 10001 is outside 0..10000");
  EXPECT_EQ(schedule_error(R"([{"cron": "* * * * *", "idle": -1}])"), "schedule[0].idle: -1 is outside 0..10000");
  EXPECT_EQ(schedule_error(R"([{"cron": "* * * * *", "idle": 18446744073709551615}])"),
            "schedule[0].idle: 18446744073709551615 is outside 0..10000");
}

TEST(IdleSchedule, ErrorsNameTheEntryAndTheField) {
  const std::string ok = R"("cron": "* * * * *", "idle": 1)";
  struct Case {
    std::string json;
    std::string error;
  };
  const Case cases[] = {
      {R"({"cron": "* * * * *", "idle": 1})", "expected a JSON array of entries, got an object"},
      {"[" + std::string("{") + ok + "}, 3]", "schedule[1]: expected an object, got an integer"},
      {"[{" + ok + R"(, "idel": 2}])", "schedule[0]: unknown field 'idel' (known: cron, time_zone, idle, eviction, "
                                       "resource_class)"},
      {R"([{"idle": 1}])", "schedule[0]: field 'cron' is missing"},
      {R"([{"cron": "* * * * *"}])", "schedule[0]: field 'idle' is missing"},
      {R"([{"cron": 5, "idle": 1}])", "schedule[0].cron: expected a string, got an integer"},
      {R"([{"cron": "* * * * *", "idle": "3"}])", "schedule[0].idle: expected an integer, got a string"},
      {R"([{"cron": "* * * * *", "idle": 3.0}])", "schedule[0].idle: expected an integer, got a fractional number"},
      {R"([{"cron": "* * * * *", "idle": 2.5}])", "schedule[0].idle: expected an integer, got a fractional number"},
      {R"([{"cron": "* * * * *", "idle": null}])", "schedule[0].idle: expected an integer, got null"},
      {R"([{"cron": "* * * * *", "idle": true}])", "schedule[0].idle: expected an integer, got a boolean"},
      {"[{" + ok + R"(, "time_zone": null}])", "schedule[0].time_zone: expected a string, got null"},
      {"[{" + ok + R"(, "eviction": ["oldest_first"]}])", "schedule[0].eviction: expected a string, got an array"},
      {"[{" + ok + R"(, "resource_class": {}}])", "schedule[0].resource_class: expected a string, got an object"},
      {"[{" + ok + R"(, "eviction": "random"}])", "schedule[0].eviction: 'random' is not oldest_first or newest_first"},
      {"[{" + ok + R"(, "eviction": "OLDEST_FIRST"}])",
       "schedule[0].eviction: 'OLDEST_FIRST' is not oldest_first or newest_first"},
      {"[{" + ok + R"(, "resource_class": ""}])",
       "schedule[0].resource_class: empty (leave the field out to cover every class)"},
      {"[{" + ok + "}, {" + ok + R"(, "time_zone": "Mars/Olympus"}])",
       "schedule[1].time_zone: time zone 'Mars/Olympus' is not in the system's tz database (/usr/share/zoneinfo; "
       "IANA names such as UTC, Europe/Berlin, America/New_York)"},
      {"[{" + ok + "}, {" + ok + "}, " + R"({"cron": "* 25 * * *", "idle": 1}])",
       "schedule[2].cron: cron '* 25 * * *': hour field '25': 25 is out of range 0-23"},
      {R"([{"cron": "* * * *", "idle": 1}])",
       "schedule[0].cron: cron '* * * *': expected 5 fields (minute hour day-of-month month day-of-week), got 4"},
  };
  for (const Case& c : cases) EXPECT_EQ(schedule_error(c.json), c.error) << c.json;
}

TEST(IdleSchedule, RejectsMalformedJson) {
  for (const char* bad : {"[", "[{\"cron\": \"* * * * *\", \"idle\": 1}] x", "[{cron: 1}]", "[1,]",
                          "[{\"cron\": \"* * * * *\", \"idle\": 1, \"idle\": 2}]", "// c\n[]", "3", "\"[]\""}) {
    std::string e = schedule_error(bad);
    EXPECT_NE(e, "(accepted)") << bad;
    EXPECT_TRUE(e.rfind("not valid JSON: ", 0) == 0 || e.rfind("expected a JSON array", 0) == 0) << bad << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(IdleSchedule, FirstMatchWinsAndNamesTheEntry) {
  auto s = parse_idle_schedule(
      R"([{"cron": "* 8-18 * * mon-fri", "time_zone": "Europe/Berlin", "idle": 3},
          {"cron": "* * * * *", "idle": 1, "eviction": "newest_first"}])");
  // Wednesday 2026-07-15 10:00 UTC is 12:00 in Berlin (CEST): the first entry.
  auto q = quota_at(s, "small", utc_ms(2026, 7, 15, 10, 0));
  EXPECT_EQ(q.idle, 3);
  EXPECT_EQ(q.eviction, Eviction::kOldestFirst);
  EXPECT_EQ(q.source, "schedule[0] '* 8-18 * * mon-fri' Europe/Berlin");
  // 17:00 UTC is 19:00 in Berlin: the catch-all.
  q = quota_at(s, "small", utc_ms(2026, 7, 15, 17, 0));
  EXPECT_EQ(q.idle, 1);
  EXPECT_EQ(q.eviction, Eviction::kNewestFirst);
  EXPECT_EQ(q.source, "schedule[1] '* * * * *' UTC");
  // Saturday 2026-07-18 at noon in Berlin: the catch-all again.
  EXPECT_EQ(quota_at(s, "small", utc_ms(2026, 7, 18, 10, 0)).idle, 1);
  // A later entry that also matches never overrides an earlier one.
  auto reversed = parse_idle_schedule(
      R"([{"cron": "* * * * *", "idle": 1}, {"cron": "* 8-18 * * mon-fri", "time_zone": "Europe/Berlin", "idle": 3}])");
  EXPECT_EQ(quota_at(reversed, "small", utc_ms(2026, 7, 15, 10, 0)).idle, 1);
}

TEST(IdleSchedule, ClassFilter) {
  auto s = parse_idle_schedule(
      R"([{"cron": "* * * * *", "idle": 5, "resource_class": "large"},
          {"cron": "* 0-11 * * *", "idle": 2, "resource_class": "small"},
          {"cron": "* * * * *", "idle": 1}])");
  int64_t morning = utc_ms(2026, 7, 15, 9, 0);
  int64_t evening = utc_ms(2026, 7, 15, 20, 0);
  EXPECT_EQ(quota_at(s, "large", morning).idle, 5);
  EXPECT_EQ(quota_at(s, "large", evening).source, "schedule[0] '* * * * *' UTC");
  EXPECT_EQ(quota_at(s, "small", morning).idle, 2);
  EXPECT_EQ(quota_at(s, "small", morning).source, "schedule[1] '* 0-11 * * *' UTC");
  EXPECT_EQ(quota_at(s, "small", evening).idle, 1);  // its own entry is out of hours: the every-class entry
  EXPECT_EQ(quota_at(s, "medium", morning).source, "schedule[2] '* * * * *' UTC");
  // Only class-specific entries: another class gets nothing.
  auto only_large = parse_idle_schedule(R"([{"cron": "* * * * *", "idle": 5, "resource_class": "large"}])");
  EXPECT_EQ(quota_at(only_large, "small", morning).idle, 0);
  EXPECT_EQ(quota_at(only_large, "small", morning).source, "no schedule entry matches");
  EXPECT_EQ(quota_at(only_large, "Large", morning).idle, 0);  // class names are exact
}

TEST(IdleSchedule, NoMatchIsZeroOldestFirst) {
  auto s = parse_idle_schedule(R"([{"cron": "* 8-18 * * mon-fri", "idle": 4, "eviction": "newest_first"}])");
  auto q = quota_at(s, "small", utc_ms(2026, 7, 15, 19, 0));
  EXPECT_EQ(q.idle, 0);
  EXPECT_EQ(q.eviction, Eviction::kOldestFirst);
  EXPECT_EQ(q.source, "no schedule entry matches");
}

TEST(IdleSchedule, OfficeHoursInNewYorkFollowDaylightSaving) {
  auto s = parse_idle_schedule(R"([{"cron": "* 9-17 * * mon-fri", "time_zone": "America/New_York", "idle": 2}])");
  // 13:30 UTC on a Wednesday: 09:30 EDT in July, 08:30 EST in January.
  EXPECT_EQ(quota_at(s, "small", utc_ms(2026, 7, 15, 13, 30)).idle, 2);
  EXPECT_EQ(quota_at(s, "small", utc_ms(2026, 1, 14, 13, 30)).idle, 0);
  // The hour's exact edges: 09:00 and 17:59 local are in, 08:59 and 18:00 out (January, UTC-5).
  EXPECT_EQ(quota_at(s, "small", utc_ms(2026, 1, 14, 14, 0)).idle, 2);
  EXPECT_EQ(quota_at(s, "small", utc_ms(2026, 1, 14, 13, 59)).idle, 0);
  EXPECT_EQ(quota_at(s, "small", utc_ms(2026, 1, 14, 22, 59)).idle, 2);
  EXPECT_EQ(quota_at(s, "small", utc_ms(2026, 1, 14, 23, 0)).idle, 0);
}

TEST(IdleSchedule, SecondsWithinTheMinuteDoNotMatter) {
  auto s = parse_idle_schedule(R"([{"cron": "30 12 * * *", "idle": 7}])");
  int64_t t = utc_ms(2026, 7, 15, 12, 30);
  EXPECT_EQ(quota_at(s, "small", t).idle, 7);
  EXPECT_EQ(quota_at(s, "small", t + 59'999).idle, 7);
  EXPECT_EQ(quota_at(s, "small", t + 60'000).idle, 0);
  EXPECT_EQ(quota_at(s, "small", t - 1).idle, 0);
}

}  // namespace
}  // namespace runpool::schedule
