#include "agent/runner_update.h"

#include <gtest/gtest.h>

namespace runpool::agent {
namespace {

UpdateFacts facts(UpdateSign sign, bool owns, UpdateMarker marker = UpdateMarker::kPending, int done = 0,
                  int failed = 0) {
  UpdateFacts f;
  f.sign = sign;
  f.runner_owns_install = owns;
  f.marker = marker;
  f.updates_done = done;
  f.failures_before = failed;
  f.from_version = "2.336.0";
  f.to_version = "2.340.0";
  f.failure = "Access to the path '/r/config.sh' is denied.";
  return f;
}

TEST(RunnerUpdate, UpdateExitsAre3And4Only) {
  EXPECT_TRUE(is_update_exit({false, 3}));
  EXPECT_TRUE(is_update_exit({false, 4}));
  for (int code : {0, 1, 2, 5, 6, 7}) EXPECT_FALSE(is_update_exit({false, code})) << code;
  EXPECT_FALSE(is_update_exit({true, 3})) << "signal 3 (SIGQUIT) is no update";
  EXPECT_FALSE(is_update_exit({false, 3, true})) << "a followed Listener's end tells nothing";
}

TEST(RunnerUpdate, Table) {
  using M = UpdateMarker;
  using S = UpdateSign;
  using U = UpdateStep;
  struct Case {
    const char* name;
    UpdateFacts f;
    UpdateStep want;
  };
  const std::vector<Case> cases = {
      // Root's installation: never waited for, whatever the stage.
      {"root's, failed in place", facts(S::kFailedInPlace, false), U::kFail},
      {"root's, exited", facts(S::kExited, false), U::kFail},
      {"root's, exited, marker already there", facts(S::kExited, false, M::kFound), U::kFail},
      // The runner's own root: as run-helper.sh.
      {"own, exited, waiting", facts(S::kExited, true), U::kWait},
      {"own, exited, marker found", facts(S::kExited, true, M::kFound), U::kRestart},
      {"own, exited, marker never came", facts(S::kExited, true, M::kNeverCame), U::kFail},
      {"own, exited again after an update", facts(S::kExited, true, M::kPending, 1), U::kFail},
      {"own, exited again, marker found", facts(S::kExited, true, M::kFound, 1), U::kFail},
      {"own, failed in place once", facts(S::kFailedInPlace, true), U::kContinue},
      {"own, failed in place again", facts(S::kFailedInPlace, true, M::kPending, 0, 1), U::kFail},
  };
  for (const Case& c : cases) {
    const UpdateDecision d = decide_runner_update(c.f);
    EXPECT_EQ(d.what, c.want) << c.name << ": " << d.reason;
    EXPECT_FALSE(d.reason.empty()) << c.name;
    if (d.what == U::kFail) {
      EXPECT_EQ(d.reason.rfind(kRunnerSelfUpdate, 0), 0u) << c.name << ": " << d.reason;
      EXPECT_NE(d.reason.find("bake runner v2.340.0 into the image"), std::string::npos) << c.name << ": " << d.reason;
      EXPECT_NE(d.reason.find("v2.336.0"), std::string::npos) << c.name << ": names the runner's own version";
    }
  }
}

TEST(RunnerUpdate, ReasonsSayWhy) {
  UpdateDecision d = decide_runner_update(facts(UpdateSign::kFailedInPlace, false));
  EXPECT_EQ(d.reason,
            "runner self-update: GitHub asks runner v2.336.0 to update to v2.340.0; it cannot: the installation is "
            "root's (Access to the path '/r/config.sh' is denied.); bake runner v2.340.0 into the image");
  d = decide_runner_update(facts(UpdateSign::kExited, true, UpdateMarker::kNeverCame));
  EXPECT_NE(d.reason.find("update.finished did not appear within 31 s"), std::string::npos) << d.reason;
  UpdateFacts unknown = facts(UpdateSign::kExited, false);
  unknown.from_version.clear();
  unknown.to_version.clear();
  d = decide_runner_update(unknown);
  EXPECT_NE(d.reason.find("runner (version unknown) to update to a newer version"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("bake runner the latest into the image"), std::string::npos) << d.reason;
}

}  // namespace
}  // namespace runpool::agent
