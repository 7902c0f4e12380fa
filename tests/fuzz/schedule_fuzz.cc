// Cron expressions and the idle schedule's JSON (common/schedule/*). Input: a cron expression, a
// NUL, a schedule document. Bad text is std::invalid_argument, never a crash; a parsed expression
// matches minutes without reading outside its fields.
#include <stdexcept>

#include "common/schedule/cron.h"
#include "common/schedule/idle_schedule.h"
#include "tests/fuzz/fuzz_support.h"

using namespace runpool;
using namespace runpool::schedule;

namespace {
// Minutes spread over fields' edges: 0 and 59, Sunday and Saturday, Feb 29, Dec 31.
const LocalMinute kMinutes[] = {
    {1970, 1, 1, 4, 0, 0}, {2024, 2, 29, 4, 23, 59}, {2026, 12, 31, 4, 12, 30}, {2026, 11, 22, 0, 8, 15},
    {2026, 11, 21, 6, 18, 45},
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [cron_text, schedule_text] = fuzz::split2(fuzz::text(data, size));
  try {
    CronExpression e = CronExpression::parse(cron_text);
    for (const auto& m : kMinutes) (void)e.matches(m);
    // Its own text parses to the same expression.
    CronExpression again = CronExpression::parse(e.text());
    for (const auto& m : kMinutes) FUZZ_CHECK(again.matches(m) == e.matches(m));
  } catch (const std::invalid_argument&) {
  }
  try {
    auto schedule = parse_idle_schedule(schedule_text);
    for (int64_t t : {int64_t{0}, int64_t{1'763'712'000'000}, int64_t{4'102'444'800'000}}) {
      for (const char* cls : {"small", "large", ""}) {
        pool::IdleQuota q = quota_at(schedule, cls, t);
        FUZZ_CHECK(q.idle >= 0 && q.idle <= 10000);
      }
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
