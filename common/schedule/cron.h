// A standard five-field cron expression (minute hour day-of-month month day-of-week), matched
// against a local wall-clock minute. Semantics follow Vixie cron / POSIX crontab:
//   fields: minute 0-59, hour 0-23, day of month 1-31, month 1-12 or jan-dec, day of week 0-7 or
//   sun-sat (0 and 7 are Sunday); each field a comma list of `*`, `N`, `A-B`, with an optional
//   `/STEP` after `*` or a range (and `N/STEP` meaning N-max/STEP); names are case-insensitive.
//   When both day fields are restricted (neither starts with `*`), a day matches if EITHER does.
// Time zones are resolved by local_minute() with the system tz database (Howard Hinnant's date
// library, Debian's libhowardhinnant-date-dev), so DST is the zone's own rule: a local minute that
// a spring-forward skips never matches, one that a fall-back repeats matches twice.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>

namespace runpool::schedule {

// A wall-clock minute in some time zone.
struct LocalMinute {
  int year = 1970;
  int month = 1;    // 1-12
  int day = 1;      // 1-31
  int weekday = 4;  // 0 = Sunday … 6 = Saturday
  int hour = 0;
  int minute = 0;
};

// The local minute of `epoch_ms` in the IANA time zone `tz`. Throws std::invalid_argument for an
// unknown zone.
LocalMinute local_minute(int64_t epoch_ms, const std::string& tz);
// Throws std::invalid_argument unless `tz` names a zone of the system's tz database.
void check_time_zone(const std::string& tz);

class CronExpression {
 public:
  CronExpression() = default;  // matches nothing until parsed
  // Throws std::invalid_argument saying which field is wrong and why.
  static CronExpression parse(std::string_view text);

  bool matches(const LocalMinute& t) const;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;    // 1-31
  std::bitset<13> months_;  // 1-12
  std::bitset<7> weekdays_;
  bool day_restricted_ = false;
  bool weekday_restricted_ = false;
};

}  // namespace runpool::schedule
