// What a batch pass (refresh, scale-down) reports around its own actions: the notes its plan and
// shell made, failures of the pass itself (a snapshot it could not read), the summary counts and
// how many failed — one shape for both commands, in JSON and in text.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <json/json.h>

namespace runpool::controller {

// What became of one action of a pass's plan.
struct ActionOutcome {
  enum Kind { kPlanned, kDone, kSkipped, kKept, kLeft, kFailed } kind = kPlanned;
  std::string detail;         // why skipped, kept or left, or the error
  std::string runner_fate{};  // a drain's: what became of the runner (pool::runner_fate_name)
};
const char* outcome_name(ActionOutcome::Kind k);

struct PassReport {
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, std::string>> errors;  // (what, error): the pass's own failures
  std::map<std::string, int> summary;                       // action or decision name → how many
  int failed = 0;                                           // errors plus failed actions

  // Adds "summary", "notes", "errors" and "failed" to the command's JSON document.
  void add_to_json(Json::Value& doc) const;
  // The note: and error: lines, then "<command> <pool>[ (dry run)]: <n name, …>|<empty><extra>[; n failed]".
  void print_text_tail(std::ostream& out, const std::string& command, const std::string& pool, bool dry_run,
                       const std::string& empty, const std::string& extra = "") const;
};

}  // namespace runpool::controller
