#include "common/schedule/cron.h"

#include <date/date.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace runpool::schedule {
namespace {

// A local minute with its real weekday.
LocalMinute at(int y, unsigned mo, unsigned d, int h, int mi) {
  date::year_month_day ymd{date::year{y}, date::month{mo}, date::day{d}};
  LocalMinute t;
  t.year = y;
  t.month = static_cast<int>(mo);
  t.day = static_cast<int>(d);
  t.weekday = static_cast<int>(date::weekday(date::sys_days(ymd)).c_encoding());
  t.hour = h;
  t.minute = mi;
  return t;
}

bool matches(const std::string& expr, const LocalMinute& t) { return CronExpression::parse(expr).matches(t); }

std::string error_of(const std::string& expr) {
  try {
    CronExpression::parse(expr);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

// The values of one field that an expression matches, as "a,b,c": `field` is placed at `index`
// among otherwise-`*` fields and only that part of the minute varies.
std::string values(int index, const std::string& field) {
  std::string fields[5] = {"*", "*", "*", "*", "*"};
  fields[index] = field;
  CronExpression e = CronExpression::parse(fields[0] + " " + fields[1] + " " + fields[2] + " " + fields[3] + " " + fields[4]);
  const int lo[5] = {0, 0, 1, 1, 0};
  const int hi[5] = {59, 23, 31, 12, 6};
  std::string out;
  for (int v = lo[index]; v <= hi[index]; ++v) {
    LocalMinute t = at(2026, 1, 1, 0, 0);
    int* slot[5] = {&t.minute, &t.hour, &t.day, &t.month, &t.weekday};
    *slot[index] = v;
    if (e.matches(t)) out += (out.empty() ? "" : ",") + std::to_string(v);
  }
  return out;
}
std::string minutes(const std::string& f) { return values(0, f); }
std::string hours(const std::string& f) { return values(1, f); }
std::string days(const std::string& f) { return values(2, f); }
std::string months(const std::string& f) { return values(3, f); }
std::string weekdays(const std::string& f) { return values(4, f); }

TEST(CronParse, ValuesListsRangesAndSteps) {
  EXPECT_EQ(minutes("*"), minutes("0-59"));
  EXPECT_EQ(minutes("0"), "0");
  EXPECT_EQ(minutes("59"), "59");
  EXPECT_EQ(minutes("07"), "7");
  EXPECT_EQ(minutes("1,5,59"), "1,5,59");
  EXPECT_EQ(minutes("5,1,5"), "1,5");
  EXPECT_EQ(minutes("10-13"), "10,11,12,13");
  EXPECT_EQ(minutes("7-7"), "7");
  EXPECT_EQ(minutes("*/15"), "0,15,30,45");
  EXPECT_EQ(minutes("5/15"), "5,20,35,50");  // N/STEP: from N to the maximum
  EXPECT_EQ(minutes("10-20/5"), "10,15,20");
  EXPECT_EQ(minutes("10-21/5"), "10,15,20");
  EXPECT_EQ(minutes("*/60"), "0");
  EXPECT_EQ(minutes("0-4,*/20,58-59/1"), "0,1,2,3,4,20,40,58,59");
  EXPECT_EQ(hours("*/6"), "0,6,12,18");
  EXPECT_EQ(hours("8-18"), "8,9,10,11,12,13,14,15,16,17,18");
  EXPECT_EQ(hours("23"), "23");
  EXPECT_EQ(days("1,15,31"), "1,15,31");
  EXPECT_EQ(days("*/10"), "1,11,21,31");  // steps count from the field's minimum
  EXPECT_EQ(days("25/3"), "25,28,31");
  EXPECT_EQ(months("*/3"), "1,4,7,10");
  EXPECT_EQ(months("12"), "12");
  EXPECT_EQ(weekdays("1-5"), "1,2,3,4,5");
  EXPECT_EQ(weekdays("*/2"), "0,2,4,6");
}

TEST(CronParse, MonthAndWeekdayNamesAnyCase) {
  EXPECT_EQ(months("jan"), "1");
  EXPECT_EQ(months("DEC"), "12");
  EXPECT_EQ(months("jan,Jul,dEc"), "1,7,12");
  EXPECT_EQ(months("mar-may"), "3,4,5");
  EXPECT_EQ(months("feb-oct/2"), "2,4,6,8,10");
  EXPECT_EQ(months("sep/2"), "9,11");
  EXPECT_EQ(months("jan-3"), "1,2,3");  // names and numbers mix
  EXPECT_EQ(weekdays("mon-fri"), "1,2,3,4,5");
  EXPECT_EQ(weekdays("MON-FRI"), "1,2,3,4,5");
  EXPECT_EQ(weekdays("sat,sun"), "0,6");
  EXPECT_EQ(weekdays("Tue,thu"), "2,4");
  const char* names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(weekdays(names[i]), std::to_string(i)) << names[i];
  const char* month_names[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(months(month_names[i]), std::to_string(i + 1)) << month_names[i];
}

TEST(CronParse, SundayIsZeroAndSeven) {
  EXPECT_EQ(weekdays("0"), "0");
  EXPECT_EQ(weekdays("7"), "0");
  EXPECT_EQ(weekdays("sun"), "0");
  EXPECT_EQ(weekdays("5-7"), "0,5,6");  // Friday to Sunday
  EXPECT_EQ(weekdays("0-7"), "0,1,2,3,4,5,6");
  EXPECT_EQ(weekdays("0,7"), "0");
  EXPECT_EQ(weekdays("fri-7"), "0,5,6");
  // 2026-03-08 is a Sunday, 2026-03-09 a Monday.
  for (const char* e : {"0 12 * * 0", "0 12 * * 7", "0 12 * * sun", "0 12 * * SUN"}) {
    EXPECT_TRUE(matches(e, at(2026, 3, 8, 12, 0))) << e;
    EXPECT_FALSE(matches(e, at(2026, 3, 9, 12, 0))) << e;
  }
}

TEST(CronParse, WhitespaceBetweenFields) {
  CronExpression e = CronExpression::parse("  0\t9   *  * \t mon-fri ");
  EXPECT_EQ(e.text(), "0 9 * * mon-fri");
  EXPECT_TRUE(e.matches(at(2026, 7, 15, 9, 0)));
}

TEST(CronParse, FieldCount) {
  const std::string want = "expected 5 fields (minute hour day-of-month month day-of-week), got ";
  EXPECT_EQ(error_of(""), "cron '': " + want + "0");
  EXPECT_EQ(error_of("   "), "cron '   ': " + want + "0");
  EXPECT_EQ(error_of("* * * *"), "cron '* * * *': " + want + "4");
  EXPECT_EQ(error_of("* * * * * *"), "cron '* * * * * *': " + want + "6");
  EXPECT_EQ(error_of("@hourly"), "cron '@hourly': " + want + "1");
}

TEST(CronParse, ErrorsNameTheFieldAndSayWhy) {
  struct Case {
    const char* expr;
    const char* error;
  };
  const Case cases[] = {
      {"60 * * * *", "minute field '60': 60 is out of range 0-59"},
      {"* 24 * * *", "hour field '24': 24 is out of range 0-23"},
      {"* * 0 * *", "day-of-month field '0': 0 is out of range 1-31"},
      {"* * 32 * *", "day-of-month field '32': 32 is out of range 1-31"},
      {"* * * 0 *", "month field '0': 0 is out of range 1-12"},
      {"* * * 13 *", "month field '13': 13 is out of range 1-12"},
      {"* * * * 8", "day-of-week field '8': 8 is out of range 0-7"},
      {"99999999999 * * * *", "minute field '99999999999': 99999999999 is out of range 0-59"},
      {"1,,2 * * * *", "minute field '': an empty list element (a stray comma?)"},
      {"1, * * * *", "minute field '': an empty list element (a stray comma?)"},
      {"* ,3 * * *", "hour field '': an empty list element (a stray comma?)"},
      {"30-10 * * * *", "minute field '30-10': the range runs backwards (write it as two ranges)"},
      {"* * * * fri-mon", "day-of-week field 'fri-mon': the range runs backwards (write it as two ranges)"},
      {"* * * * 6-0", "day-of-week field '6-0': the range runs backwards (write it as two ranges)"},
      {"* * * dec-jan *", "month field 'dec-jan': the range runs backwards (write it as two ranges)"},
      {"1- * * * *", "minute field '1-': a value is missing"},
      {"-5 * * * *", "minute field '-5': a value is missing"},
      {"/5 * * * *", "minute field '/5': a value is missing"},
      {"1-2-3 * * * *", "minute field '1-2-3': '2-3' is not a number"},
      {"1.5 * * * *", "minute field '1.5': '1.5' is not a number"},
      {"+1 * * * *", "minute field '+1': '+1' is not a number"},
      {"x * * * *", "minute field 'x': 'x' is not a number"},
      {"* mon * * *", "hour field 'mon': 'mon' is not a number"},
      {"* * jan * *", "day-of-month field 'jan': 'jan' is not a number"},
      {"*/0 * * * *", "minute field '*/0': the step 0 is outside 1-60"},
      {"*/61 * * * *", "minute field '*/61': the step 61 is outside 1-60"},
      {"* */25 * * *", "hour field '*/25': the step 25 is outside 1-24"},
      {"* * * * */9", "day-of-week field '*/9': the step 9 is outside 1-8"},
      {"*/ * * * *", "minute field '*/': the step '' is not a positive number"},
      {"*/x * * * *", "minute field '*/x': the step 'x' is not a positive number"},
      {"*/-1 * * * *", "minute field '*/-1': the step '-1' is not a positive number"},
      {"*/2/3 * * * *", "minute field '*/2/3': the step '2/3' is not a positive number"},
      {"*/99999 * * * *", "minute field '*/99999': the step 99999 is outside 1-60"},
      {"** * * * *", "minute field '**': '**' is not a number"},
      {"* * * janu *", "month field 'janu': 'janu' is neither a number nor a name (jan, feb … dec)"},
      {"* * * ja *", "month field 'ja': 'ja' is neither a number nor a name (jan, feb … dec)"},
      {"* * * mon *", "month field 'mon': 'mon' is neither a number nor a name (jan, feb … dec)"},
      {"* * * * monday", "day-of-week field 'monday': 'monday' is neither a number nor a name (sun, mon … sat)"},
      {"* * * * jan", "day-of-week field 'jan': 'jan' is neither a number nor a name (sun, mon … sat)"},
      {"* * * * mon-", "day-of-week field 'mon-': a value is missing"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(error_of(c.expr), "cron '" + std::string(c.expr) + "': " + c.error) << c.expr;
  }
}

TEST(CronMatch, ExactBoundaries) {
  EXPECT_TRUE(matches("0 9 * * *", at(2026, 7, 15, 9, 0)));
  EXPECT_FALSE(matches("0 9 * * *", at(2026, 7, 15, 8, 59)));
  EXPECT_FALSE(matches("0 9 * * *", at(2026, 7, 15, 9, 1)));
  EXPECT_TRUE(matches("* 8-18 * * *", at(2026, 7, 15, 8, 0)));
  EXPECT_TRUE(matches("* 8-18 * * *", at(2026, 7, 15, 18, 59)));
  EXPECT_FALSE(matches("* 8-18 * * *", at(2026, 7, 15, 7, 59)));
  EXPECT_FALSE(matches("* 8-18 * * *", at(2026, 7, 15, 19, 0)));
  EXPECT_TRUE(matches("59 23 31 12 *", at(2026, 12, 31, 23, 59)));
  EXPECT_FALSE(matches("59 23 31 12 *", at(2026, 12, 31, 23, 58)));
  EXPECT_TRUE(matches("0 0 1 1 *", at(2027, 1, 1, 0, 0)));
  EXPECT_TRUE(matches("0 0 29 feb *", at(2028, 2, 29, 0, 0)));
  // Every field must match: one wrong field is enough to miss.
  EXPECT_TRUE(matches("30 12 15 7 wed", at(2026, 7, 15, 12, 30)));
  EXPECT_FALSE(matches("30 12 15 8 *", at(2026, 7, 15, 12, 30)));
  EXPECT_FALSE(matches("30 13 15 7 *", at(2026, 7, 15, 12, 30)));
  EXPECT_FALSE(matches("31 12 15 7 *", at(2026, 7, 15, 12, 30)));
}

TEST(CronMatch, DayOfMonthOrDayOfWeekWhenBothRestricted) {
  // 2026-02-13 is a Friday the 13th, 2026-01-13 a Tuesday, 2026-03-06 a Friday, 2026-01-14 a Wednesday.
  const std::string either = "0 12 13 * fri";
  EXPECT_TRUE(matches(either, at(2026, 2, 13, 12, 0)));
  EXPECT_TRUE(matches(either, at(2026, 1, 13, 12, 0)));
  EXPECT_TRUE(matches(either, at(2026, 3, 6, 12, 0)));
  EXPECT_FALSE(matches(either, at(2026, 1, 14, 12, 0)));
  EXPECT_FALSE(matches(either, at(2026, 3, 6, 13, 0)));  // the OR is about days only
  // One day field `*`: the other alone decides (AND with everything).
  EXPECT_TRUE(matches("0 12 13 * *", at(2026, 1, 13, 12, 0)));
  EXPECT_FALSE(matches("0 12 13 * *", at(2026, 3, 6, 12, 0)));
  EXPECT_TRUE(matches("0 12 * * fri", at(2026, 3, 6, 12, 0)));
  EXPECT_FALSE(matches("0 12 * * fri", at(2026, 1, 13, 12, 0)));
  // A field starting with `*` counts as unrestricted even with a step (Vixie): AND. 2026-01-09 is
  // a Friday on an odd day, 2026-01-16 a Friday on an even one, 2026-01-15 a Thursday.
  EXPECT_TRUE(matches("0 12 */2 * fri", at(2026, 1, 9, 12, 0)));
  EXPECT_FALSE(matches("0 12 */2 * fri", at(2026, 1, 16, 12, 0)));
  EXPECT_FALSE(matches("0 12 */2 * fri", at(2026, 1, 15, 12, 0)));
  // …whereas 1-31 is restricted, so with a weekday it matches every day.
  EXPECT_TRUE(matches("0 12 1-31 * fri", at(2026, 1, 15, 12, 0)));
  // The month still applies to both.
  EXPECT_FALSE(matches("0 12 13 feb fri", at(2026, 3, 6, 12, 0)));
  EXPECT_TRUE(matches("0 12 13 mar fri", at(2026, 3, 6, 12, 0)));
}

TEST(CronMatch, DefaultConstructedMatchesNothing) {
  CronExpression e;
  EXPECT_FALSE(e.matches(at(2026, 7, 15, 12, 0)));
  EXPECT_EQ(e.text(), "");
}

TEST(CronMatch, OutOfRangeLocalMinuteNeverMatches) {
  LocalMinute t = at(2026, 7, 15, 12, 0);
  t.minute = 60;
  EXPECT_FALSE(matches("* * * * *", t));
  t = at(2026, 7, 15, 12, 0);
  t.weekday = 7;
  EXPECT_FALSE(matches("* * * * *", t));
}


// UTC milliseconds of a UTC wall-clock minute.
int64_t utc(int y, unsigned mo, unsigned d, int h, int mi) {
  auto t = date::sys_days{date::year{y} / mo / d} + std::chrono::hours{h} + std::chrono::minutes{mi};
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string show(const LocalMinute& t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d w%d %02d:%02d", t.year, t.month, t.day, t.weekday, t.hour, t.minute);
  return buf;
}

// How many minutes from `from_ms` (inclusive) over `count` minutes match `expr` in `tz`.
int count_matches(const std::string& expr, const std::string& tz, int64_t from_ms, int count) {
  CronExpression e = CronExpression::parse(expr);
  int n = 0;
  for (int i = 0; i < count; ++i) n += e.matches(local_minute(from_ms + int64_t{i} * 60'000, tz)) ? 1 : 0;
  return n;
}

TEST(CronTimeZone, LocalMinute) {
  EXPECT_EQ(show(local_minute(0, "UTC")), "1970-01-01 w4 00:00");
  EXPECT_EQ(show(local_minute(-1, "UTC")), "1969-12-31 w3 23:59");
  EXPECT_EQ(show(local_minute(utc(2026, 7, 15, 12, 0) + 59'999, "UTC")), "2026-07-15 w3 12:00");
  EXPECT_EQ(show(local_minute(utc(2026, 7, 15, 12, 0), "Etc/UTC")), "2026-07-15 w3 12:00");
  EXPECT_EQ(show(local_minute(utc(2026, 7, 15, 12, 0), "Europe/Berlin")), "2026-07-15 w3 14:00");
  EXPECT_EQ(show(local_minute(utc(2026, 1, 14, 12, 0), "Europe/Berlin")), "2026-01-14 w3 13:00");
  EXPECT_EQ(show(local_minute(utc(2026, 7, 15, 12, 0), "Asia/Kolkata")), "2026-07-15 w3 17:30");
  EXPECT_EQ(show(local_minute(utc(2026, 7, 15, 12, 0), "Asia/Kathmandu")), "2026-07-15 w3 17:45");
  // Across the date line and the year: weekday and date are the zone's.
  EXPECT_EQ(show(local_minute(utc(2026, 7, 15, 23, 30), "Asia/Tokyo")), "2026-07-16 w4 08:30");
  EXPECT_EQ(show(local_minute(utc(2026, 7, 15, 3, 0), "America/Los_Angeles")), "2026-07-14 w2 20:00");
  EXPECT_EQ(show(local_minute(utc(2026, 12, 31, 23, 30), "Europe/Berlin")), "2027-01-01 w5 00:30");
  EXPECT_EQ(show(local_minute(utc(2026, 7, 15, 12, 0), "Pacific/Kiritimati")), "2026-07-16 w4 02:00");
  EXPECT_EQ(show(local_minute(utc(2028, 2, 29, 6, 0), "America/New_York")), "2028-02-29 w2 01:00");
}

TEST(CronTimeZone, CheckTimeZone) {
  for (const char* ok : {"UTC", "Etc/UTC", "GMT", "Europe/Berlin", "America/New_York", "Asia/Kolkata",
                         "America/Argentina/Buenos_Aires", "Etc/GMT+5", "US/Eastern"}) {
    EXPECT_NO_THROW(check_time_zone(ok)) << ok;
  }
  EXPECT_THROW(local_minute(0, "Mars/Olympus"), std::invalid_argument);
  for (const char* bad : {"Mars/Olympus", "europe/berlin", "utc", "Europe/Berlin ", "Europe", "../../etc/passwd",
                          "/usr/share/zoneinfo/UTC", "posix/Europe/Berlin", "right/UTC", "zone.tab", "+02:00"}) {
    try {
      check_time_zone(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "time zone '" + std::string(bad) +
                                           "' is not in the system's tz database (/usr/share/zoneinfo; IANA names "
                                           "such as UTC, Europe/Berlin, America/New_York)");
    }
  }
  EXPECT_THROW(check_time_zone(""), std::invalid_argument);
  try {
    check_time_zone("localtime");  // a file in Debian's zoneinfo, but the host's own zone
    ADD_FAILURE() << "localtime accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "time zone 'localtime' is the host's own; name the zone instead");
  }
}

TEST(CronTimeZone, SameInstantMatchesInOneZoneNotAnother) {
  const std::string nine = "0 9 * * *";
  int64_t t = utc(2026, 7, 15, 7, 0);  // 09:00 in Berlin, 03:00 in New York
  EXPECT_TRUE(CronExpression::parse(nine).matches(local_minute(t, "Europe/Berlin")));
  EXPECT_FALSE(CronExpression::parse(nine).matches(local_minute(t, "America/New_York")));
  t = utc(2026, 7, 15, 13, 0);  // 15:00 in Berlin, 09:00 in New York
  EXPECT_FALSE(CronExpression::parse(nine).matches(local_minute(t, "Europe/Berlin")));
  EXPECT_TRUE(CronExpression::parse(nine).matches(local_minute(t, "America/New_York")));
  // The weekday is the zone's: Wednesday 23:30 UTC is Thursday morning in Tokyo.
  t = utc(2026, 7, 15, 23, 30);
  EXPECT_TRUE(CronExpression::parse("* * * * thu").matches(local_minute(t, "Asia/Tokyo")));
  EXPECT_FALSE(CronExpression::parse("* * * * thu").matches(local_minute(t, "UTC")));
}

TEST(CronTimeZone, NewYorkSpringForwardSkipsTwoThirty) {
  // 2026-03-08: 02:00 EST (07:00 UTC) becomes 03:00 EDT.
  EXPECT_EQ(show(local_minute(utc(2026, 3, 8, 6, 59), "America/New_York")), "2026-03-08 w0 01:59");
  EXPECT_EQ(show(local_minute(utc(2026, 3, 8, 7, 0), "America/New_York")), "2026-03-08 w0 03:00");
  int64_t day = utc(2026, 3, 8, 5, 0);  // local midnight EST; the local day has 23 hours
  EXPECT_EQ(count_matches("30 2 * * *", "America/New_York", day, 23 * 60), 0);
  EXPECT_EQ(count_matches("* 2 * * *", "America/New_York", day, 23 * 60), 0);
  EXPECT_EQ(count_matches("30 1 * * *", "America/New_York", day, 23 * 60), 1);
  EXPECT_EQ(count_matches("30 3 * * *", "America/New_York", day, 23 * 60), 1);
  EXPECT_EQ(count_matches("* * * * *", "America/New_York", day, 23 * 60), 23 * 60);
  // The next day is whole again.
  EXPECT_EQ(count_matches("30 2 * * *", "America/New_York", utc(2026, 3, 9, 4, 0), 24 * 60), 1);
}

TEST(CronTimeZone, NewYorkFallBackRepeatsOneThirty) {
  // 2026-11-01: 02:00 EDT (06:00 UTC) becomes 01:00 EST; 01:30 happens at 05:30 and at 06:30 UTC.
  EXPECT_EQ(show(local_minute(utc(2026, 11, 1, 5, 30), "America/New_York")), "2026-11-01 w0 01:30");
  EXPECT_EQ(show(local_minute(utc(2026, 11, 1, 6, 30), "America/New_York")), "2026-11-01 w0 01:30");
  EXPECT_EQ(show(local_minute(utc(2026, 11, 1, 7, 0), "America/New_York")), "2026-11-01 w0 02:00");
  int64_t day = utc(2026, 11, 1, 4, 0);  // local midnight EDT; the local day has 25 hours
  EXPECT_EQ(count_matches("30 1 * * *", "America/New_York", day, 25 * 60), 2);
  EXPECT_EQ(count_matches("* 1 * * *", "America/New_York", day, 25 * 60), 120);
  EXPECT_EQ(count_matches("30 2 * * *", "America/New_York", day, 25 * 60), 1);
  EXPECT_EQ(count_matches("30 1 * * sun", "America/New_York", day, 25 * 60), 2);
}

TEST(CronTimeZone, BerlinDaylightSaving) {
  // 2026-03-29: 02:00 CET (01:00 UTC) becomes 03:00 CEST.
  EXPECT_EQ(show(local_minute(utc(2026, 3, 29, 0, 59), "Europe/Berlin")), "2026-03-29 w0 01:59");
  EXPECT_EQ(show(local_minute(utc(2026, 3, 29, 1, 0), "Europe/Berlin")), "2026-03-29 w0 03:00");
  int64_t day = utc(2026, 3, 28, 23, 0);
  EXPECT_EQ(count_matches("30 2 * * *", "Europe/Berlin", day, 23 * 60), 0);
  EXPECT_EQ(count_matches("30 3 * * *", "Europe/Berlin", day, 23 * 60), 1);
  // 2026-10-25: 03:00 CEST (01:00 UTC) becomes 02:00 CET; 02:30 happens twice.
  day = utc(2026, 10, 24, 22, 0);
  EXPECT_EQ(count_matches("30 2 * * *", "Europe/Berlin", day, 25 * 60), 2);
  EXPECT_EQ(count_matches("30 2 * * *", "UTC", day, 25 * 60), 1);
}

TEST(CronTimeZone, OfficeHoursInNewYorkSummerAndWinter) {
  CronExpression office = CronExpression::parse("* 9-17 * * mon-fri");
  // 13:30 UTC on a Wednesday: 09:30 EDT in July, 08:30 EST in January.
  EXPECT_TRUE(office.matches(local_minute(utc(2026, 7, 15, 13, 30), "America/New_York")));
  EXPECT_FALSE(office.matches(local_minute(utc(2026, 1, 14, 13, 30), "America/New_York")));
}

}  // namespace
}  // namespace runpool::schedule
