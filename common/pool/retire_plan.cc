#include "common/pool/retire_plan.h"

namespace runpool::pool {
namespace {

void differs(std::string& out, const char* what, const std::string& have, const std::optional<std::string>& want) {
  if (!want || have == *want) return;
  if (!out.empty()) out += "; ";
  out += std::string(what) + " " + (have.empty() ? "unknown" : have) + ", not " + *want;
}

}  // namespace

std::string outdated_reason(const InstanceRecord& r, const RetireCriteria& c) {
  std::string out;
  differs(out, "AMI", r.ami_id, c.ami_id);
  differs(out, "runner", r.runner_version, c.runner_version);
  differs(out, "agent", r.agent_version, c.agent_version);
  return out;
}

std::string_view retire_action_name(RetireAction a) {
  switch (a) {
    case RetireAction::kKeep: return "keep";
    case RetireAction::kRetireNow: return "retire";
    case RetireAction::kMark: return "mark";
    case RetireAction::kAlreadyMarked: return "marked";
  }
  return "";
}

RetireDecision decide_retire(const InstanceRecord& r, const RetireCriteria& c, const std::string& pool) {
  if (!pool.empty() && r.pool != pool) return {RetireAction::kKeep, "another pool's"};
  if (r.state == State::kTerminating || r.state == State::kTerminated) return {RetireAction::kKeep, "already ending"};
  std::string why = outdated_reason(r, c);
  if (why.empty()) return {RetireAction::kKeep, "current"};
  // A shared pool's runner is never released: scale-down's drain ends it (with --idle 0), so a
  // mark would never be read.
  if (r.shared) return {RetireAction::kKeep, "shared instance (" + why + "): scale-down drains shared runners"};
  if (r.state == State::kIdle) return {RetireAction::kRetireNow, why};
  if (r.retire_pending) return {RetireAction::kAlreadyMarked, why};
  return {RetireAction::kMark, why};
}

std::string retirement_due(const InstanceRecord& r, int64_t now_ms, int64_t max_instance_age_ms) {
  if (r.retire_pending) return "marked for retirement";
  // Its tokens would be written in clear, readable with the instance role's credentials alone.
  if (r.seal_key.empty()) return "launched before sealed tokens";
  if (max_instance_age_ms > 0 && r.created_ms > 0 && now_ms - r.created_ms >= max_instance_age_ms) {
    return "older than max_instance_age";
  }
  return "";
}

}  // namespace runpool::pool
