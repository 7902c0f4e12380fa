#include "controller/pass_report.h"

namespace runpool::controller {

const char* outcome_name(ActionOutcome::Kind k) {
  switch (k) {
    case ActionOutcome::kPlanned: return "planned";
    case ActionOutcome::kDone: return "done";
    case ActionOutcome::kSkipped: return "skipped";
    case ActionOutcome::kKept: return "kept";
    case ActionOutcome::kLeft: return "left";
    case ActionOutcome::kFailed: return "failed";
  }
  return "unknown";
}

void PassReport::add_to_json(Json::Value& doc) const {
  doc["summary"] = Json::Value(Json::objectValue);
  for (const auto& [name, n] : summary) doc["summary"][name] = n;
  doc["notes"] = Json::Value(Json::arrayValue);
  for (const auto& n : notes) doc["notes"].append(n);
  doc["errors"] = Json::Value(Json::arrayValue);
  for (const auto& [what, message] : errors) {
    Json::Value e(Json::objectValue);
    e["what"] = what;
    e["error"] = message;
    doc["errors"].append(e);
  }
  doc["failed"] = failed;
}

void PassReport::print_text_tail(std::ostream& out, const std::string& command, const std::string& pool,
                                 bool dry_run, const std::string& empty, const std::string& extra) const {
  for (const auto& n : notes) out << "note: " << n << "\n";
  for (const auto& [what, message] : errors) out << "error: " << what << ": " << message << "\n";
  out << command << " " << pool << (dry_run ? " (dry run): " : ": ");
  if (summary.empty()) out << empty;
  bool first = true;
  for (const auto& [name, n] : summary) {
    out << (first ? "" : ", ") << n << " " << name;
    first = false;
  }
  out << extra;
  if (failed) out << "; " << failed << " failed";
  out << "\n";
}

}  // namespace runpool::controller
