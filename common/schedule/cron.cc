#include "common/schedule/cron.h"

#include <date/tz.h>

#include <array>
#include <chrono>
#include <stdexcept>
#include <vector>

namespace runpool::schedule {
namespace {

// One field's syntax: its name (for errors), its numeric bounds, and the names it accepts
// (index + name_base is the value).
struct FieldSpec {
  const char* name;
  int min;
  int max;
  const char* const* names = nullptr;
  int name_count = 0;
  int name_base = 0;
};

constexpr std::array<const char*, 12> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                     "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<const char*, 7> kWeekdayNames = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

constexpr FieldSpec kMinute{"minute", 0, 59};
constexpr FieldSpec kHour{"hour", 0, 23};
constexpr FieldSpec kDay{"day-of-month", 1, 31};
constexpr FieldSpec kMonth{"month", 1, 12, kMonthNames.data(), 12, 1};
// 7 is accepted as Sunday and folded onto 0 after parsing, so `5-7` is Friday to Sunday.
constexpr FieldSpec kWeekday{"day-of-week", 0, 7, kWeekdayNames.data(), 7, 0};

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

class FieldParser {
 public:
  FieldParser(std::string_view expression, const FieldSpec& spec) : expression_(expression), spec_(spec) {}

  [[noreturn]] void fail(std::string_view item, const std::string& why) const {
    throw std::invalid_argument("cron '" + std::string(expression_) + "': " + spec_.name + " field '" +
                                std::string(item) + "': " + why);
  }

  // A number or (where the field has them) a three-letter name, within the field's bounds.
  int value(std::string_view item, std::string_view token) const {
    if (token.empty()) fail(item, "a value is missing");
    if (token[0] >= '0' && token[0] <= '9') {
      int v = 0;
      for (char c : token) {
        if (c < '0' || c > '9') fail(item, "'" + std::string(token) + "' is not a number");
        v = v * 10 + (c - '0');
        if (v > 1000) break;  // out of range anyway; stops overflow
      }
      if (v < spec_.min || v > spec_.max) {
        fail(item, std::string(token) + " is out of range " + std::to_string(spec_.min) + "-" +
                       std::to_string(spec_.max));
      }
      return v;
    }
    if (token.size() == 3) {
      for (int i = 0; i < spec_.name_count; ++i) {
        const char* n = spec_.names[i];
        if (lower(token[0]) == n[0] && lower(token[1]) == n[1] && lower(token[2]) == n[2]) return i + spec_.name_base;
      }
    }
    if (spec_.name_count == 0) fail(item, "'" + std::string(token) + "' is not a number");
    fail(item, "'" + std::string(token) + "' is neither a number nor a name (" + spec_.names[0] + ", " +
                   spec_.names[1] + " … " + spec_.names[spec_.name_count - 1] + ")");
  }

  // Sets the bits of one comma-separated item: `*`, `N`, `A-B`, each with an optional `/STEP`.
  void item(std::string_view item, std::vector<bool>& bits) const {
    if (item.empty()) fail(item, "an empty list element (a stray comma?)");
    std::string_view base = item;
    int step = 1;
    bool stepped = false;
    if (auto slash = item.find('/'); slash != std::string_view::npos) {
      base = item.substr(0, slash);
      std::string_view s = item.substr(slash + 1);
      if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) {
        fail(item, "the step '" + std::string(s) + "' is not a positive number");
      }
      step = s.size() > 3 ? 1000 : std::stoi(std::string(s));  // 1000: too big anyway, no overflow
      if (step < 1 || step > spec_.max - spec_.min + 1) {
        fail(item, "the step " + std::string(s) + " is outside 1-" + std::to_string(spec_.max - spec_.min + 1));
      }
      stepped = true;
    }
    int from = 0;
    int to = 0;
    if (base == "*") {
      from = spec_.min;
      to = spec_.max;
    } else if (auto dash = base.find('-'); dash != std::string_view::npos) {
      from = value(item, base.substr(0, dash));
      to = value(item, base.substr(dash + 1));
      if (from > to) fail(item, "the range runs backwards (write it as two ranges)");
    } else {
      from = value(item, base);
      to = stepped ? spec_.max : from;  // Vixie's N/STEP: from N to the field's maximum
    }
    for (int v = from; v <= to; v += step) bits[v] = true;
  }

  std::vector<bool> parse(std::string_view field) const {
    std::vector<bool> bits(spec_.max + 1, false);
    size_t start = 0;
    while (true) {
      size_t comma = field.find(',', start);
      item(field.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start), bits);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return bits;
  }

 private:
  std::string_view expression_;
  const FieldSpec& spec_;
};

template <size_t N>
std::bitset<N> to_bitset(const std::vector<bool>& bits) {
  std::bitset<N> out;
  for (size_t i = 0; i < N && i < bits.size(); ++i) out[i] = bits[i];
  return out;
}

const date::time_zone* find_zone(const std::string& tz) {
  if (tz.empty()) throw std::invalid_argument("time zone: empty (use an IANA name such as UTC or Europe/Berlin)");
  // Debian links zoneinfo/localtime to /etc/localtime: a schedule would mean something else on
  // each host, so the zone must be named.
  if (tz == "localtime") throw std::invalid_argument("time zone 'localtime' is the host's own; name the zone instead");
  try {
    return date::locate_zone(tz);
  } catch (const std::exception&) {
    throw std::invalid_argument("time zone '" + tz +
                                "' is not in the system's tz database (/usr/share/zoneinfo; IANA names such as "
                                "UTC, Europe/Berlin, America/New_York)");
  }
}

}  // namespace

LocalMinute local_minute(int64_t epoch_ms, const std::string& tz) {
  using namespace std::chrono;
  const date::time_zone* zone = find_zone(tz);
  auto local = floor<minutes>(zone->to_local(date::sys_time<milliseconds>(milliseconds(epoch_ms))));
  auto day = floor<date::days>(local);
  date::year_month_day ymd(day);
  date::hh_mm_ss<minutes> hms(local - day);
  LocalMinute out;
  out.year = static_cast<int>(ymd.year());
  out.month = static_cast<int>(static_cast<unsigned>(ymd.month()));
  out.day = static_cast<int>(static_cast<unsigned>(ymd.day()));
  out.weekday = static_cast<int>(date::weekday(day).c_encoding());
  out.hour = static_cast<int>(hms.hours().count());
  out.minute = static_cast<int>(hms.minutes().count());
  return out;
}

void check_time_zone(const std::string& tz) { find_zone(tz); }

CronExpression CronExpression::parse(std::string_view text) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    if (i > start) fields.push_back(text.substr(start, i - start));
  }
  CronExpression e;
  for (std::string_view f : fields) e.text_ += (e.text_.empty() ? "" : " ") + std::string(f);
  if (fields.size() != 5) {
    throw std::invalid_argument("cron '" + std::string(text) + "': expected 5 fields (minute hour day-of-month " +
                                "month day-of-week), got " + std::to_string(fields.size()));
  }
  e.minutes_ = to_bitset<60>(FieldParser(e.text_, kMinute).parse(fields[0]));
  e.hours_ = to_bitset<24>(FieldParser(e.text_, kHour).parse(fields[1]));
  e.days_ = to_bitset<32>(FieldParser(e.text_, kDay).parse(fields[2]));
  e.months_ = to_bitset<13>(FieldParser(e.text_, kMonth).parse(fields[3]));
  std::vector<bool> weekdays = FieldParser(e.text_, kWeekday).parse(fields[4]);
  if (weekdays[7]) weekdays[0] = true;
  e.weekdays_ = to_bitset<7>(weekdays);
  // Vixie's rule: a day field is unrestricted when it starts with `*` (so `*/2` counts as `*`).
  e.day_restricted_ = fields[2][0] != '*';
  e.weekday_restricted_ = fields[4][0] != '*';
  return e;
}

bool CronExpression::matches(const LocalMinute& t) const {
  if (text_.empty()) return false;  // default-constructed: never parsed
  auto in = [](const auto& bits, int v) { return v >= 0 && static_cast<size_t>(v) < bits.size() && bits[v]; };
  if (!in(minutes_, t.minute) || !in(hours_, t.hour) || !in(months_, t.month)) return false;
  bool day = in(days_, t.day);
  bool weekday = in(weekdays_, t.weekday);
  return day_restricted_ && weekday_restricted_ ? day || weekday : day && weekday;
}

}  // namespace runpool::schedule
