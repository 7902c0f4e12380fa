#include "common/pool/runner_fate.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

InstanceRecord drained(const std::string& detail, int64_t gen = 4, int64_t signal_gen = 4) {
  InstanceRecord r;
  r.generation = gen;
  r.signal = AgentSignal::kDrained;
  r.signal_generation = signal_gen;
  r.signal_detail = detail;
  return r;
}

TEST(RunnerFate, LeftDetailIsRecognised) {
  const std::string d = runner_left_detail("p-i-1-g4", 77, "config.sh remove failed 5 times");
  EXPECT_EQ(d, "runner left registered: p-i-1-g4 (id 77): config.sh remove failed 5 times");
  EXPECT_TRUE(runner_left_registered(drained(d)));
  EXPECT_FALSE(runner_left_registered(drained("")));
  EXPECT_FALSE(runner_left_registered(drained("no runner was serving this assignment")));
  EXPECT_FALSE(runner_left_registered(drained("cleaning failed; " + d)));  // a prefix, not anywhere
  EXPECT_FALSE(runner_left_registered(drained(d, 5, 4)));                  // another generation's word
}

TEST(RunnerFate, FailedAgentCountsAsLeft) {
  InstanceRecord r = drained("cleaning failed: EBUSY");
  r.signal = AgentSignal::kFailed;
  EXPECT_TRUE(runner_left_registered(r));
  r.signal_generation = 3;
  EXPECT_FALSE(runner_left_registered(r));
  for (AgentSignal s : {AgentSignal::kNone, AgentSignal::kBooted, AgentSignal::kRegistered, AgentSignal::kInterrupted}) {
    r.signal = s;
    r.signal_generation = r.generation;
    EXPECT_FALSE(runner_left_registered(r)) << agent_signal_name(s);
  }
}

TEST(RunnerFate, AgentDeregisteredProceedsWithoutGithub) {
  RunnerFateFacts f;
  f.runner_id = 9;
  RunnerFateDecision d = decide_runner_fate(f);
  EXPECT_FALSE(d.delete_runner);
  EXPECT_TRUE(d.proceed);
  EXPECT_EQ(d.fate, RunnerFate::kDeregisteredByAgent);
  EXPECT_EQ(d.detail, "runner deregistered by its agent");
}

TEST(RunnerFate, LeftRunnerIsDeletedFirst) {
  RunnerFateFacts f;
  f.agent_left_runner = true;
  f.runner_id = 9;
  f.agent_detail = "runner left registered: x (id 9): 502";
  RunnerFateDecision d = decide_runner_fate(f);
  EXPECT_TRUE(d.delete_runner);
  EXPECT_FALSE(d.proceed);
  f.deadline_forces = true;  // a deadline never skips the attempt
  EXPECT_TRUE(decide_runner_fate(f).delete_runner);
}

TEST(RunnerFate, EveryDeleteOutcome) {
  RunnerFateFacts f;
  f.agent_left_runner = true;
  f.runner_id = 9;
  f.agent_detail = "runner left registered: x (id 9): Server Error";
  for (bool forced : {false, true}) {
    f.deadline_forces = forced;
    f.deleted = ControllerDelete::kDeleted;
    RunnerFateDecision d = decide_runner_fate(f);
    EXPECT_TRUE(d.proceed);
    EXPECT_FALSE(d.delete_runner);
    EXPECT_EQ(d.fate, RunnerFate::kDeletedByController);
    EXPECT_NE(d.detail.find("runpoolctl deleted it"), std::string::npos) << d.detail;
    EXPECT_NE(d.detail.find("Server Error"), std::string::npos) << "the agent's evidence is kept: " << d.detail;

    f.deleted = ControllerDelete::kAlreadyGone;
    d = decide_runner_fate(f);
    EXPECT_TRUE(d.proceed);
    EXPECT_EQ(d.fate, RunnerFate::kAlreadyGone);

    for (ControllerDelete c : {ControllerDelete::kBusy, ControllerDelete::kFailed}) {
      f.deleted = c;
      f.delete_error = "HTTP 422: still running a job";
      d = decide_runner_fate(f);
      EXPECT_FALSE(d.delete_runner);
      EXPECT_EQ(d.fate, RunnerFate::kLeftRegistered);
      EXPECT_EQ(d.proceed, forced);
      EXPECT_NE(d.detail.find("still running a job"), std::string::npos) << d.detail;
      EXPECT_NE(d.detail.find(forced ? "ghost sweep" : "left for the next pass"), std::string::npos) << d.detail;
    }
  }
}

// The agent's `drained` (runner deregistered) is its word: GitHub's list by the assignment's name
// must agree before the instance leaves. A runner still listed is deleted as a left one (GitHub
// refuses while it runs a job: the instance stays); no answer leaves the instance unless forced.
TEST(RunnerFate, TheAgentsDeregistrationIsCheckedAgainstGithubsList) {
  struct Case {
    GithubListing listing;
    ControllerDelete deleted;
    bool forced;
    bool delete_runner;
    bool proceed;
    RunnerFate fate;
    const char* words;
  };
  const Case cases[] = {
      {GithubListing::kAbsent, ControllerDelete::kNotTried, false, false, true, RunnerFate::kDeregisteredByAgent,
       "deregistered by its agent"},
      {GithubListing::kUnknown, ControllerDelete::kNotTried, false, false, false, RunnerFate::kLeftRegistered,
       "says its runner is deregistered, but GitHub could not be asked for it (HTTP 502)"},
      {GithubListing::kUnknown, ControllerDelete::kNotTried, true, false, true, RunnerFate::kLeftRegistered,
       "forces the instance out"},
      {GithubListing::kPresent, ControllerDelete::kNotTried, false, true, false, RunnerFate::kLeftRegistered, ""},
      {GithubListing::kPresent, ControllerDelete::kDeleted, false, false, true, RunnerFate::kDeletedByController,
       "GitHub still listed runner 31"},
      {GithubListing::kPresent, ControllerDelete::kAlreadyGone, false, false, true, RunnerFate::kAlreadyGone,
       "already gone"},
      {GithubListing::kPresent, ControllerDelete::kBusy, false, false, false, RunnerFate::kLeftRegistered,
       "left for the next pass"},
      {GithubListing::kPresent, ControllerDelete::kBusy, true, false, true, RunnerFate::kLeftRegistered,
       "hard deadline forces"},
  };
  for (const auto& c : cases) {
    RunnerFateFacts f;
    f.listing = c.listing;
    f.runner_id = c.listing == GithubListing::kPresent ? 31 : 0;  // the listed runner's id
    f.deleted = c.deleted;
    f.deadline_forces = c.forced;
    if (c.listing == GithubListing::kUnknown) f.delete_error = "HTTP 502";
    if (c.deleted == ControllerDelete::kBusy) f.delete_error = "GitHub: still running a job";
    RunnerFateDecision d = decide_runner_fate(f);
    const std::string what = std::to_string(static_cast<int>(c.listing)) + "/" + std::to_string(static_cast<int>(c.deleted));
    EXPECT_EQ(d.delete_runner, c.delete_runner) << what;
    EXPECT_EQ(d.proceed, c.proceed) << what;
    EXPECT_EQ(d.fate, c.fate) << what;
    EXPECT_NE(d.detail.find(c.words), std::string::npos) << what << ": " << d.detail;
  }
}

// A failed agent (or one that left its runner) names the runner by its runner_id, its word: the
// runner is the one GitHub lists under the assignment's name, and while GitHub cannot be asked the
// instance waits — a forged id of no runner never lets it go unchecked.
TEST(RunnerFate, ALeftRunnerIsLookedUpByNameNotByTheRecordsId) {
  RunnerFateFacts f;
  f.agent_left_runner = true;
  f.listing = GithubListing::kUnknown;
  f.delete_error = "HTTP 502";
  RunnerFateDecision d = decide_runner_fate(f);
  EXPECT_FALSE(d.delete_runner);
  EXPECT_FALSE(d.proceed);
  EXPECT_NE(d.detail.find("left its runner registered, but GitHub could not be asked for it (HTTP 502)"),
            std::string::npos) << d.detail;
  f.deadline_forces = true;
  EXPECT_TRUE(decide_runner_fate(f).proceed);
  f = RunnerFateFacts{};
  f.agent_left_runner = true;
  f.listing = GithubListing::kAbsent;  // none listed under the assignment's name
  d = decide_runner_fate(f);
  EXPECT_TRUE(d.proceed);
  EXPECT_EQ(d.fate, RunnerFate::kNoRunner);
  EXPECT_NE(d.detail.find("GitHub lists no runner of this assignment"), std::string::npos) << d.detail;
}

TEST(RunnerFate, NoRunnerIdNothingToDelete) {
  RunnerFateFacts f;
  f.agent_left_runner = true;
  RunnerFateDecision d = decide_runner_fate(f);
  EXPECT_FALSE(d.delete_runner);
  EXPECT_TRUE(d.proceed);
  EXPECT_EQ(d.fate, RunnerFate::kNoRunner);
}

TEST(RunnerFate, Names) {
  EXPECT_EQ(runner_fate_name(RunnerFate::kDeregisteredByAgent), "deregistered-by-agent");
  EXPECT_EQ(runner_fate_name(RunnerFate::kDeletedByController), "deleted-by-runpoolctl");
  EXPECT_EQ(runner_fate_name(RunnerFate::kAlreadyGone), "already-gone");
  EXPECT_EQ(runner_fate_name(RunnerFate::kNoRunner), "no-runner");
  EXPECT_EQ(runner_fate_name(RunnerFate::kLeftRegistered), "left-registered");
}

}  // namespace
}  // namespace runpool::pool
