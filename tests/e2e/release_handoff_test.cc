// A release that does not wait, end to end with real agents: it returns once the drains are
// written, while a job still runs on the runner (the agent never interrupts it); the next
// provision of the class waits for that drain and takes the instance instead of launching cold. A
// release killed or cancelled after writing its drains loses nothing: refresh, or the next
// provision, returns the instances once their agents drained.
#include "tests/e2e/e2e_fixture.h"

namespace runpool::controller::e2e {
namespace {

class ReleaseHandoff : public E2eTest {
 protected:
  int fleets() { return cloud_.control("GET", "/_control/ec2/calls")["actions"]["CreateFleet"].asInt(); }
  bool drained(const std::string& id) {
    InstanceRecord r = record(id);
    return r.state == State::kDraining && r.signal == pool::AgentSignal::kDrained && r.signal_generation == r.generation;
  }
};

TEST_F(ReleaseHandoff, ReleaseReturnsBeforeTheDrainEndsAndTheNextProvisionWaitsForIt) {
  const std::vector<std::string> ids = ids_of(provision("ho-1", 1));
  ASSERT_EQ(ids.size(), 1u);
  const std::string id = ids[0];
  // A job of 8 s on the runner: its drain cannot end before the job does.
  const int64_t long_job = queue_job("ho-1", "still-running", "true", 8000);
  ASSERT_TRUE(eventually([&] { return job(long_job)["state"].asString() == "running"; }, 30s))
      << write_json(job(long_job)) << consoles();

  const auto started = std::chrono::steady_clock::now();
  CtlResult rel = ctl({"--json", "release", "--label", "ho-1"});
  const double release_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(rel.exit_code, 0) << describe(rel);
  Json::Value j = parse_json(rel.out, "release");
  std::printf("release without --wait, a job still running: exit 0 after %.2f s, draining %s\n", release_s,
              write_json(j["draining"]).c_str());
  EXPECT_LT(release_s, 5.0) << "release waited for the drain";
  EXPECT_TRUE(j["ok"].asBool());
  EXPECT_FALSE(j["waited"].asBool());
  ASSERT_EQ(j["draining"].size(), 1u) << rel.out;
  EXPECT_EQ(j["draining"][0].asString(), id);
  EXPECT_EQ(j["returned"].size(), 0u);
  EXPECT_EQ(record(id).state, State::kDraining);
  EXPECT_FALSE(drained(id)) << "the drain cannot have ended with the job still running";
  EXPECT_EQ(job(long_job)["state"].asString(), "running");

  // The pool is empty, the instance drains: the provision waits for it, not for a cold launch.
  const int before = fleets();
  const auto asked = std::chrono::steady_clock::now();
  CtlResult next = ctl(provision_args("ho-2", 1));
  const double provision_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  ASSERT_EQ(next.exit_code, 0) << describe(next) << consoles();
  Json::Value p = parse_json(next.out, "provision");
  std::printf("the next provision, its instance still draining: running after %.2f s, %d warm, %d launched\n",
              provision_s, p["warm"].asInt(), p["launched"].asInt());
  EXPECT_EQ(p["warm"].asInt(), 1) << next.out;
  EXPECT_EQ(p["launched"].asInt(), 0) << next.out;
  EXPECT_EQ(ids_of(p), ids);
  EXPECT_EQ(fleets(), before) << "nothing launched cold";
  EXPECT_NE(next.err.find("waiting up to"), std::string::npos) << next.err;
  EXPECT_NE(next.err.find("claimed " + id + " "), std::string::npos) << next.err;

  // The job was never interrupted, and the instance serves the next label's job.
  Json::Value done = finished_job(long_job);
  EXPECT_EQ(done["result"].asString(), "Succeeded") << write_json(done) << consoles();
  Json::Value second = finished_job(queue_job("ho-2", "next"));
  EXPECT_EQ(second["result"].asString(), "Succeeded") << write_json(second) << consoles();
  EXPECT_EQ(instance_of_runner(second["runnerName"].asString()), id);
  EXPECT_EQ(release("ho-2")["returned"].size(), 1u);
}

TEST_F(ReleaseHandoff, AKilledReleaseLosesNothingRefreshReturnsTheInstances) {
  const std::vector<std::string> ids = ids_of(provision("ho-k", 2));
  ASSERT_EQ(ids.size(), 2u);
  // A release that waits, killed once its drains are written (a release job cancelled or dead).
  auto rel = start_ctl({"--json", "release", "--wait", "--label", "ho-k"});
  ASSERT_TRUE(eventually([&] {
    for (const auto& id : ids) {
      if (record(id).state != State::kDraining) return false;
    }
    return true;
  }, 30s)) << consoles();
  rel->signal(SIGKILL);
  rel->wait(10s);
  // The agents finish on their own; refresh confirms each runner gone and returns the instances.
  ASSERT_TRUE(eventually([&] { return drained(ids[0]) && drained(ids[1]); }, 60s)) << consoles();
  Json::Value r = refresh();
  EXPECT_EQ(r["exit_code"].asInt(), 0) << write_json(r);
  for (const auto& id : ids) {
    EXPECT_EQ(action(r, "return-to-pool", id)["rule"].asString(), "handshake.drained") << write_json(r);
    EXPECT_EQ(record(id).state, State::kIdle);
  }
  EXPECT_TRUE(registered_runners().empty());
  const int before = fleets();
  Json::Value p = provision("ho-k2", 2);
  EXPECT_EQ(p["warm"].asInt(), 2) << write_json(p);
  EXPECT_EQ(fleets(), before);
}

TEST_F(ReleaseHandoff, ACancelledReleaseLeavesItsDrainsToTheNextProvision) {
  const std::vector<std::string> ids = ids_of(provision("ho-c", 2));
  ASSERT_EQ(ids.size(), 2u);
  auto rel = start_ctl({"--json", "release", "--wait", "--label", "ho-c"});
  ASSERT_TRUE(eventually([&] {
    for (const auto& id : ids) {
      if (record(id).state != State::kDraining) return false;
    }
    return true;
  }, 30s)) << consoles();
  rel->signal(SIGTERM);  // GitHub cancelling the release job
  CtlResult cancelled = rel->wait(30s);
  EXPECT_NE(cancelled.exit_code, -1) << "it stopped on the signal: " << describe(cancelled);
  // Drained or not yet: the next provision finishes them (runner confirmed gone) and takes them.
  const int before = fleets();
  CtlResult next = ctl(provision_args("ho-c2", 2));
  ASSERT_EQ(next.exit_code, 0) << describe(next) << consoles();
  Json::Value p = parse_json(next.out, "provision");
  EXPECT_EQ(p["warm"].asInt(), 2) << next.out;
  EXPECT_EQ(p["launched"].asInt(), 0) << next.out;
  std::vector<std::string> got = ids_of(p), want = ids;
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  EXPECT_EQ(fleets(), before);
  for (const auto& r : registered_runners()) {
    EXPECT_EQ(r.substr(r.size() - 3), "-g2") << "only the new assignment's runners are registered: " << r;
  }
  EXPECT_EQ(release("ho-c2")["returned"].size(), 2u);
}

}  // namespace
}  // namespace runpool::controller::e2e
