// release without --wait against in-memory fakes: it writes the drains and returns; the agents
// drain on their own; the next provision of the class finishes the drained instances (runner
// confirmed on GitHub, back to idle) and claims them, or waits for those still draining rather than
// launching cold.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/json.h"
#include "common/pool/draining_claim.h"
#include "controller/release.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::State;
using testing::World;

ReleaseOptions no_wait(const std::string& label, bool json = false) {
  ReleaseOptions o;
  o.label = label;
  o.json = json;
  return o;
}

// Two launched, running for "run-1", then released without waiting (the agents still drain).
void two_released(World& w) {
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(2, "run-1")), kExitOk) << w.out.str();
  w.agents.drain_ok = false;  // the agents have not finished yet when release returns
  w.out.str("");
  const int sleeps = w.clock.sleeps;
  ASSERT_EQ(run_release(w.ctx, no_wait("run-1", true)), kExitOk) << w.out.str();
  EXPECT_EQ(w.clock.sleeps, sleeps) << "release never waited";
}

TEST(ReleaseNoWait, ReturnsOnceTheDrainsAreWrittenAndSaysWhichStillDrain) {
  World w;
  two_released(w);
  Json::Value j = parse_json(w.out.str(), "release");
  EXPECT_TRUE(j["ok"].asBool());
  EXPECT_FALSE(j["waited"].asBool());
  EXPECT_EQ(j["draining"].size(), 2u);
  EXPECT_EQ(j["returned"].size(), 0u);
  EXPECT_EQ(w.in_state(State::kDraining).size(), 2u);
  EXPECT_TRUE(w.queue.bodies("small").empty()) << "nothing advertised before the agents drained";
  EXPECT_EQ(w.github.remove_tokens, 1);
  EXPECT_EQ(w.github.unlabelled.size(), 0u) << "no runner id recorded by the fake agents: no label to remove";
  EXPECT_TRUE(w.compute.terminated.empty());

  // Text and step summary say the same, and where the instances go from here.
  DrainOutcome d;
  d.left = {"i-a", "i-b"};
  const std::string text = release_text("run-1", d, false);
  EXPECT_NE(text.find("2 still draining (their agents finish the drains; the next provision of their class or "
                      "refresh returns them to the pool)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("still draining: i-a i-b"), std::string::npos) << text;
  const std::string summary = release_summary("run-1", d, false, false);
  EXPECT_NE(summary.find("Still draining (their agents finish"), std::string::npos) << summary;
  EXPECT_NE(summary.find("- i-a\n- i-b"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("Failed"), std::string::npos) << summary;
}

TEST(ReleaseNoWait, WritesItsStepSummaryInGitHubActions) {
  World w;
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1, "run-1")), kExitOk);
  char path[] = "/tmp/release-summary-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  ReleaseOptions o = no_wait("run-1");
  o.actions.output = "/dev/null";
  o.actions.summary = path;
  ASSERT_EQ(run_release(w.ctx, o), kExitOk) << w.out.str();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  EXPECT_NE(text.str().find("### runpool release `run-1`"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("0 returned to the pool, 1 still draining"), std::string::npos) << text.str();
}

TEST(ReleaseNoWait, ASecondReleaseFinishesWhatTheAgentsDrained) {
  World w;
  two_released(w);
  w.agents.drain_ok = true;
  w.agents.tick();
  w.out.str("");
  ASSERT_EQ(run_release(w.ctx, no_wait("run-1", true)), kExitOk) << w.out.str();
  Json::Value j = parse_json(w.out.str(), "release");
  EXPECT_EQ(j["returned"].size(), 2u) << w.out.str();
  EXPECT_EQ(j["draining"].size(), 0u);
  EXPECT_EQ(w.queue.bodies("small").size(), 2u);
  EXPECT_EQ(w.github.requests["ListRunners"], 2) << "each runner confirmed gone on GitHub by name first";
}

TEST(ReleaseNoWait, TheNextProvisionFinishesTheDrainedAndClaimsThem) {
  World w;
  two_released(w);
  w.agents.drain_ok = true;
  w.agents.tick();  // both report drained
  const size_t launched = w.compute.launched.size();
  const long lists = w.github.requests["ListRunners"];
  ProvisionReport r = provision(w.ctx, testing::provision_options(2, "run-2"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.warm(), 2);
  EXPECT_EQ(r.launched(), 0);
  EXPECT_EQ(w.compute.launched.size(), launched) << "nothing launched cold";
  EXPECT_EQ(w.github.requests["ListRunners"] - lists, 2) << "the agents' drained confirmed on GitHub first";
  for (const auto& i : r.instances) {
    pool::InstanceRecord rec = w.record(i.instance_id);
    EXPECT_EQ(rec.state, State::kRunning);
    EXPECT_EQ(rec.label, "run-2");
    EXPECT_EQ(rec.generation, 2);
  }
  EXPECT_TRUE(w.queue.bodies("small").empty()) << "taken straight from the drain: no pool message left behind";
}

TEST(ReleaseNoWait, TheNextProvisionWaitsForDrainingInstancesRatherThanLaunching) {
  World w;
  two_released(w);
  w.agents.drain_ok = true;  // they drain at the provision's first wait
  const size_t launched = w.compute.launched.size();
  ProvisionReport r = provision(w.ctx, testing::provision_options(3, "run-2"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.warm(), 2);
  EXPECT_EQ(r.launched(), 1) << "what no draining instance covers is launched at once";
  EXPECT_EQ(w.compute.launched.size(), launched + 1);
  EXPECT_EQ(w.compute.requests.size(), 2u) << "one CreateFleet for the first provision, one for the third runner";
}

// Two provisions at once: the first writes its wait on both drains, so the second, coming while
// it waits, counts neither as coming capacity and launches at once rather than after the drains.
TEST(ReleaseNoWait, TwoProvisionsNeverWaitForTheSameDrain) {
  World w;
  two_released(w);
  bool started = false;
  ProvisionReport second;
  int64_t second_took = -1;
  w.on_tick = [&] {
    if (started) return;
    started = true;  // the first provision's first pause: it waits for both drains
    const int64_t start = w.now();
    second = provision(w.ctx, testing::provision_options(2, "run-3"));
    second_took = w.now() - start;
    w.agents.drain_ok = true;  // the drains end once the second provision is served
  };
  ProvisionReport first = provision(w.ctx, testing::provision_options(2, "run-2"));
  ASSERT_TRUE(first.ok) << first.error;
  ASSERT_TRUE(started) << "the first provision never paused";
  EXPECT_EQ(first.warm(), 2);
  EXPECT_EQ(first.launched(), 0);
  ASSERT_TRUE(second.ok) << second.error;
  EXPECT_EQ(second.warm(), 0);
  EXPECT_EQ(second.launched(), 2);
  EXPECT_LT(second_took, 30'000) << "launched at once, not after the drains the first provision waits for";
  for (const auto& i : first.instances) EXPECT_EQ(w.record(i.instance_id).awaited_until_ms, 0) << "taken: no wait left";
}

TEST(ReleaseNoWait, ADrainThatDoesNotEndInADrainsTimeIsNotWaitedForLong) {
  World w;
  two_released(w);
  // The agents never drain: the provision waits until the drains' expected end, then launches.
  const int64_t start = w.now();
  ProvisionReport r = provision(w.ctx, testing::provision_options(2, "run-2"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.warm(), 0);
  EXPECT_EQ(r.launched(), 2);
  EXPECT_LE(w.now() - start, pool::kExpectedDrainMs + 5'000);
  EXPECT_EQ(w.in_state(State::kDraining).size(), 2u) << "left draining: refresh's on their deadlines";
  // A later provision no longer waits for drains older than a drain takes.
  const int64_t later = w.now();
  ProvisionReport again = provision(w.ctx, testing::provision_options(1, "run-3"));
  ASSERT_TRUE(again.ok) << again.error;
  EXPECT_EQ(again.launched(), 1);
  EXPECT_LT(w.now() - later, 10'000);
}

// GitHub still lists each instance's runner as busy: an agent's `drained` is forged (written with
// the instance role's credentials while a job runs), so no provision takes the instance.
class BusyListedRunners final : public Runners {
 public:
  explicit BusyListedRunners(Runners& inner) : inner_(inner) {}
  Secret registration_token() override { return inner_.registration_token(); }
  Secret remove_token() override { return inner_.remove_token(); }
  std::string registration_url() override { return inner_.registration_url(); }
  std::vector<github::Runner> list() override { return {}; }
  std::optional<github::Runner> find(const std::string& name) override {
    ++finds;
    github::Runner r;
    r.id = 900 + finds;
    r.name = name;
    r.status = "online";
    r.busy = true;
    return r;
  }
  github::DeleteOutcome remove(int64_t) override { return github::DeleteOutcome::kBusy; }
  bool remove_labels(int64_t id) override { return inner_.remove_labels(id); }
  long requests_sent(const std::string& op) override { return inner_.requests_sent(op); }
  std::vector<github::WorkflowRun> workflow_runs(const std::string& r, const std::string& s) override {
    return inner_.workflow_runs(r, s);
  }
  std::vector<github::WorkflowJob> run_jobs(const std::string& r, int64_t id) override { return inner_.run_jobs(r, id); }
  int finds = 0;

 private:
  Runners& inner_;
};

TEST(ReleaseNoWait, AForgedDrainedIsConfirmedOnGitHubBeforeAProvisionTakesTheInstance) {
  World w;
  two_released(w);
  w.agents.drain_ok = true;
  w.agents.tick();  // `drained`, as a forger would write it
  BusyListedRunners github(w.github);
  Context ctx{w.settings, w.clock, w.table, w.queue, w.compute, github, w.out, w.cancelled};
  const size_t launched = w.compute.launched.size();
  ProvisionReport r = provision(ctx, testing::provision_options(2, "run-2"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.warm(), 0);
  EXPECT_EQ(r.launched(), 2);
  EXPECT_EQ(w.compute.launched.size(), launched + 2);
  EXPECT_EQ(github.finds, 2) << "each drained instance's runner asked for by name";
  EXPECT_EQ(w.in_state(State::kDraining).size(), 2u) << "left draining: its runner still serves a job";
  EXPECT_TRUE(w.queue.bodies("small").empty());
}

TEST(ReleaseNoWait, ScaleUpsWarmUpNeverTakesDrainingInstances) {
  World w;
  two_released(w);
  w.agents.drain_ok = true;
  w.agents.tick();
  ProvisionOptions o = testing::provision_options(1, "warm-1");
  o.claim_warm = false;
  ProvisionReport r = provision(w.ctx, o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.launched(), 1);
  EXPECT_EQ(w.in_state(State::kDraining).size(), 2u);
}

}  // namespace
}  // namespace runpool::controller
