#include "controller/retire_command.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "common/json.h"
#include "common/log.h"
#include "common/pool/record_update.h"
#include "common/pool/transitions.h"

namespace runpool::controller {
namespace {

struct Row {
  pool::InstanceRecord record;
  pool::RetireDecision decision;
  std::string outcome;  // what was done: "terminated", "marked", "moved on", "would …", an error
};

// idle(gen) → terminating for each, one TerminateInstances, then each record closed. A record that
// moved on (claimed meanwhile) is skipped: that claim won, and its release reads the next retire.
void retire_idle(Context& ctx, std::vector<Row*>& rows, bool& failed) {
  std::vector<Row*> ending;
  for (Row* row : rows) {
    pool::Step step = pool::begin_terminate(row->record, ctx.now_ms(), ctx.settings.timeouts);
    try {
      if (ctx.table.transition(row->record.instance_id, step.expect, step.change)) {
        pool::apply(row->record, step.change);
        ending.push_back(row);
      } else {
        row->outcome = "moved on (claimed or retired meanwhile)";
      }
    } catch (const std::exception& e) {
      row->outcome = std::string("error: ") + e.what();
      failed = true;
    }
  }
  if (ending.empty()) return;
  std::vector<std::string> ids;
  for (Row* row : ending) ids.push_back(row->record.instance_id);
  try {
    ctx.compute.terminate(ids);
  } catch (const std::exception& e) {
    for (Row* row : ending) row->outcome = std::string("terminating (EC2 failed, refresh retries): ") + e.what();
    failed = true;
    return;
  }
  for (Row* row : ending) {
    pool::Step step = pool::close_record(row->record, ctx.now_ms(), ctx.settings.timeouts);
    try {
      ctx.table.transition(row->record.instance_id, step.expect, step.change);
    } catch (const std::exception& e) {
      spdlog::warn("instance {}: terminated, but closing its record failed ({}); refresh closes it",
                   row->record.instance_id, e.what());
    }
    row->outcome = "terminated";
  }
}

void mark(Context& ctx, Row& row, bool& failed) {
  try {
    pool::Step step = pool::mark_retire(row.record);
    if (ctx.table.transition(row.record.instance_id, step.expect, step.change)) {
      row.outcome = "marked: its release retires it";
      return;
    }
    row.outcome = "moved on (run retire again)";
  } catch (const std::exception& e) {
    row.outcome = std::string("error: ") + e.what();
    failed = true;
  }
}

// The current values are compared with what records say and echoed in reports: an AMI id as EC2
// spells it, a version of letters, digits and . _ + - only. Anything else is a mistake (or hostile),
// and a mistaken current value would retire the whole pool.
void check_current_values(const pool::RetireCriteria& c) {
  auto version_ok = [](const std::string& v) {
    return !v.empty() && v.size() <= 64 && std::all_of(v.begin(), v.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '+' || ch == '-';
    });
  };
  if (c.ami_id) {
    const std::string& a = *c.ami_id;
    const bool hex = a.size() > 4 && std::all_of(a.begin() + 4, a.end(), [](char ch) {
      return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
    });
    if (a.rfind("ami-", 0) != 0 || !hex || (a.size() != 12 && a.size() != 21)) {
      throw UsageError("retire: --ami '" + printable(a, 64) + "' is not an AMI id (ami- and 8 or 17 hex digits)");
    }
  }
  if (c.runner_version && !version_ok(*c.runner_version)) {
    throw UsageError("retire: --runner-version '" + printable(*c.runner_version, 64) +
                     "' is not a version (letters, digits and . _ + - only)");
  }
  if (c.agent_version && !version_ok(*c.agent_version)) {
    throw UsageError("retire: --agent-version '" + printable(*c.agent_version, 64) +
                     "' is not a version (letters, digits and . _ + - only)");
  }
}

}  // namespace

int run_retire(Context& ctx, const RetireOptions& o) {
  if (!o.criteria.any()) throw UsageError("retire: name at least one of --ami, --runner-version, --agent-version");
  check_current_values(o.criteria);
  std::vector<Row> rows;
  ctx.table.scan([&](const pool::InstanceRecord& r) {
    if (r.pool != ctx.settings.pool || r.state == pool::State::kTerminating || pool::is_terminal(r.state)) return;
    rows.push_back(Row{r, pool::decide_retire(r, o.criteria, ctx.settings.pool), ""});
  });
  bool failed = false;
  std::vector<Row*> idle;
  for (Row& row : rows) {
    switch (row.decision.action) {
      case pool::RetireAction::kKeep: row.outcome = "kept"; break;
      case pool::RetireAction::kAlreadyMarked: row.outcome = "marked already"; break;
      case pool::RetireAction::kRetireNow:
        if (o.dry_run) row.outcome = "would terminate";
        else idle.push_back(&row);
        break;
      case pool::RetireAction::kMark:
        if (o.dry_run) row.outcome = "would mark";
        else mark(ctx, row, failed);
        break;
    }
  }
  if (!idle.empty()) retire_idle(ctx, idle, failed);

  int retired = 0, marked = 0, kept = 0;
  for (const Row& row : rows) {
    switch (row.decision.action) {
      case pool::RetireAction::kRetireNow: ++retired; break;
      case pool::RetireAction::kMark:
      case pool::RetireAction::kAlreadyMarked: ++marked; break;
      case pool::RetireAction::kKeep: ++kept; break;
    }
  }
  if (o.json) {
    Json::Value v(Json::objectValue);
    v["dry_run"] = o.dry_run;
    v["ok"] = !failed;
    v["retired"] = retired;
    v["marked"] = marked;
    v["kept"] = kept;
    Json::Value list(Json::arrayValue);
    for (const Row& row : rows) {
      Json::Value j(Json::objectValue);
      j["instance_id"] = row.record.instance_id;
      j["state"] = std::string(pool::state_name(row.record.state));
      j["action"] = std::string(pool::retire_action_name(row.decision.action));
      j["reason"] = row.decision.reason;
      j["outcome"] = row.outcome;
      list.append(j);
    }
    v["instances"] = list;
    ctx.out << write_json(v) << "\n";
  } else {
    ctx.out << fmt::format("retire{}: {} idle retired, {} assigned marked for retirement at release, {} kept\n",
                           o.dry_run ? " (dry run)" : "", retired, marked, kept);
    for (const Row& row : rows) {
      ctx.out << fmt::format("  {} {} [{}]: {} — {}\n", row.record.instance_id, pool::state_name(row.record.state),
                             pool::retire_action_name(row.decision.action), row.decision.reason, row.outcome);
    }
  }
  return failed ? kExitFailed : kExitOk;
}

}  // namespace runpool::controller
