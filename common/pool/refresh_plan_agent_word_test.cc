// Refresh and an agent's word: `failed` and `drained` are written with the instance role's
// credentials, which a job that reached IMDS may hold for hours; GitHub's view of the runner decides.
#include <gtest/gtest.h>

#include "common/pool/refresh_plan.h"
#include "common/pool/refresh_plan_testing.h"
#include "common/pool/runner_name.h"

// In the fixtures' namespace, so their helpers are found first and by this file alone.
namespace runpool::pool::refresh_testing {
namespace {

// `failed` and `drained` are the agent's word: a thief holding the instance role's credentials can
// write them for the current generation while a job runs. An assigned instance is terminated or
// returned on that word only while GitHub lists no runner of the instance online; otherwise,
// and while GitHub cannot be read, the word is noted and only the deadlines act.
TEST(PlanRefresh, AFailedOrDrainedGithubContradictsIsNotActedOn) {
  enum class Github { kNotListed, kOffline, kOfflineBusy, kOnline, kOnlineBusy, kUnread, kOtherGeneration, kOtherInstance };
  struct Case {
    Github github;
    bool acted;
  };
  const Case cases[] = {
      {Github::kNotListed, true},   {Github::kOffline, true},         {Github::kOfflineBusy, true},
      {Github::kOnline, false},     {Github::kOnlineBusy, false},     {Github::kUnread, false},
      // Any generation's runner of the instance: `generation` is forgeable with the same credentials.
      {Github::kOtherGeneration, false}, {Github::kOtherInstance, true},
  };
  struct Signalled {
    State state;
    AgentSignal signal;
    ActionKind action;
    const char* rule;
  };
  const Signalled signalled[] = {
      {State::kCreated, AgentSignal::kFailed, ActionKind::kTerminate, "agent.failed"},
      {State::kClaimed, AgentSignal::kFailed, ActionKind::kTerminate, "agent.failed"},
      {State::kRunning, AgentSignal::kFailed, ActionKind::kTerminate, "agent.failed"},
      {State::kDraining, AgentSignal::kFailed, ActionKind::kTerminate, "agent.failed"},
      {State::kDraining, AgentSignal::kDrained, ActionKind::kReturnToPool, "handshake.drained"},
  };
  for (const auto& sg : signalled) {
    for (const auto& c : cases) {
      Fixture f;
      InstanceRecord r = record(1, sg.state);
      signal(r, sg.signal, r.generation);
      r.runner_id = 4242;  // the agent's word: plays no part
      f.add(r);
      const std::string own = "ci-" + r.instance_id + "-g" + std::to_string(r.generation);
      switch (c.github) {
        case Github::kNotListed: break;
        case Github::kOffline: f.s.runners->push_back({4242, own, false, false}); break;
        case Github::kOfflineBusy: f.s.runners->push_back({4242, own, true, false}); break;
        case Github::kOnline: f.s.runners->push_back({4242, own, false, true}); break;
        case Github::kOnlineBusy: f.s.runners->push_back({4242, own, true, true}); break;
        case Github::kUnread: f.s.runners.reset(); break;
        case Github::kOtherGeneration:
          f.s.runners->push_back({4242, "ci-" + r.instance_id + "-g" + std::to_string(r.generation + 1), true, true});
          break;
        case Github::kOtherInstance: f.s.runners->push_back({4242, "ci-" + id_of(2) + "-g2", true, true}); break;
      }
      RefreshPlan plan = f.plan();
      std::vector<Action> mine;
      for (const auto& a : for_instance(plan, r.instance_id)) {
        if (a.kind != ActionKind::kDeleteRunner) mine.push_back(a);
      }
      const std::string what = std::string(state_name(sg.state)) + " " + std::string(agent_signal_name(sg.signal)) +
                               " github case " + std::to_string(static_cast<int>(c.github));
      if (c.acted) {
        ASSERT_EQ(mine.size(), 1u) << what;
        EXPECT_EQ(mine[0].kind, sg.action) << what;
        EXPECT_EQ(mine[0].rule, sg.rule) << what;
      } else {
        EXPECT_TRUE(mine.empty()) << what << ": " << (mine.empty() ? "" : describe(mine[0]));
        bool noted = false;
        for (const auto& n : plan.notes) noted |= n.find("not acted on") != std::string::npos;
        EXPECT_TRUE(noted) << what;
        // Its deadlines still apply: past the hard one it goes, as any instance would.
        f.s.records.back().deadline_ms = kNow - 1;
        f.s.records.back().hard_deadline_ms = kNow - 1;
        std::vector<Action> late = for_instance(f.plan(), r.instance_id);
        ASSERT_FALSE(late.empty()) << what;
        EXPECT_EQ(late[0].rule.rfind("deadline.", 0), 0u) << what << ": " << late[0].rule;
      }
    }
  }
}

}  // namespace
}  // namespace runpool::pool::refresh_testing
