#include "controller/pass_report.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "common/json.h"

namespace runpool::controller {
namespace {

TEST(PassReport, JsonCarriesTheSummaryNotesErrorsAndFailed) {
  PassReport r;
  r.notes = {"deleted 2 wake-up queue(s)"};
  r.errors = {{"listing runners", "GitHub 500"}};
  r.summary = {{"terminate", 2}, {"retire", 1}};
  r.failed = 3;
  Json::Value doc(Json::objectValue);
  doc["pool"] = "ci";
  r.add_to_json(doc);
  EXPECT_EQ(write_json(doc),
            R"J({"errors":[{"error":"GitHub 500","what":"listing runners"}],"failed":3,"notes":["deleted 2 wake-up )J"
            R"J(queue(s)"],"pool":"ci","summary":{"retire":1,"terminate":2}})J");
  PassReport empty;
  Json::Value d2(Json::objectValue);
  empty.add_to_json(d2);
  EXPECT_EQ(write_json(d2), R"({"errors":[],"failed":0,"notes":[],"summary":{}})");
}

TEST(PassReport, TextEndsWithOneSummaryLine) {
  PassReport r;
  std::ostringstream out;
  r.print_text_tail(out, "refresh", "ci", false, "nothing to do");
  EXPECT_EQ(out.str(), "refresh ci: nothing to do\n");
  r.notes = {"n1"};
  r.errors = {{"reading the table", "throttled"}};
  r.summary = {{"drain", 1}, {"keep", 3}};
  r.failed = 1;
  out.str("");
  r.print_text_tail(out, "scale-down", "ci", true, "no instances", "; GitHub requests: 1 list");
  EXPECT_EQ(out.str(),
            "note: n1\nerror: reading the table: throttled\n"
            "scale-down ci (dry run): 1 drain, 3 keep; GitHub requests: 1 list; 1 failed\n");
}

TEST(PassReport, EveryActionOutcomeHasItsOwnName) {
  std::set<std::string> names;
  for (auto k : {ActionOutcome::kPlanned, ActionOutcome::kDone, ActionOutcome::kSkipped, ActionOutcome::kKept,
                 ActionOutcome::kLeft, ActionOutcome::kFailed}) {
    names.insert(outcome_name(k));
  }
  EXPECT_EQ(names, (std::set<std::string>{"planned", "done", "skipped", "kept", "left", "failed"}));
}

}  // namespace
}  // namespace runpool::controller
