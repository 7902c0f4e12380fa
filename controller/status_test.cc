#include "controller/status.h"

#include <gtest/gtest.h>

#include <map>

#include "common/json.h"
#include "controller/serve.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using testing::World;

TEST(Status, ShortAge) {
  EXPECT_EQ(short_age(0), "0s");
  EXPECT_EQ(short_age(59'999), "59s");
  EXPECT_EQ(short_age(60'000), "1m");
  EXPECT_EQ(short_age(61'000), "1m1s");
  EXPECT_EQ(short_age(3'600'000), "1h");
  EXPECT_EQ(short_age(3'900'000), "1h5m");
  EXPECT_EQ(short_age(86'400'000 + 3'600'000), "1d1h");
  EXPECT_EQ(short_age(-90'000), "-1m30s");
}

TEST(Status, TableAndPoolDepth) {
  World w;
  w.add_idle("i-00000000000000aa1");
  auto running = testing::idle_record("i-00000000000000aa2", w.now());
  running.state = pool::State::kRunning;
  running.label = "ci-9-1-x";
  running.busy = true;
  w.table.inner.create(running);
  auto foreign = testing::idle_record("i-00000000000000aa3", w.now());
  foreign.pool = "elsewhere";
  w.table.inner.create(foreign);
  auto gone = testing::idle_record("i-00000000000000aa4", w.now());
  gone.state = pool::State::kTerminated;
  w.table.inner.create(gone);

  ASSERT_EQ(run_status(w.ctx, {false, false}), kExitOk);
  std::string text = w.out.str();
  EXPECT_NE(text.find("i-00000000000000aa1"), std::string::npos);
  EXPECT_NE(text.find("ci-9-1-x"), std::string::npos);
  EXPECT_EQ(text.find("i-00000000000000aa3"), std::string::npos);  // another pool
  EXPECT_EQ(text.find("i-00000000000000aa4"), std::string::npos);  // terminated, without --all
  EXPECT_NE(text.find("1 message(s) visible, 0 in flight; 1 idle record(s)"), std::string::npos) << text;
  // Running sorts before idle.
  EXPECT_LT(text.find("i-00000000000000aa2"), text.find("i-00000000000000aa1"));

  w.out.str("");
  ASSERT_EQ(run_status(w.ctx, {true, true}), kExitOk);
  Json::Value j = parse_json(w.out.str(), "status");
  EXPECT_EQ(j["instances"].size(), 3u);
  EXPECT_EQ(j["pool"].size(), 2u);
  EXPECT_EQ(j["pool"][0]["resource_class"].asString(), "small");
  EXPECT_EQ(j["pool"][0]["visible"].asInt(), 1);
  EXPECT_EQ(j["instances"][0]["state"].asString(), "running");
  EXPECT_TRUE(j["instances"][0]["busy"].asBool());
  EXPECT_EQ(j["instances"][0]["heartbeat_age_ms"].asInt(), 1000);
}

// A record whose label (never validated on read) holds terminal escapes or is huge: shown
// printable and cut, so status cannot drive or flood the operator's terminal.
TEST(Status, HostileValuesFromTheTableAreShownPrintableAndShort) {
  World w;
  auto r = testing::idle_record("i-00000000000000ab1", w.now());
  r.state = pool::State::kRunning;
  r.label = "x\x1b[2J\n$(touch y)" + std::string(100000, 'l');
  r.instance_type = "c7i\r.large";
  w.table.inner.create(r);
  ASSERT_EQ(run_status(w.ctx, {false, false}), kExitOk);
  std::string text = w.out.str();
  EXPECT_EQ(text.find_first_of("\x1b\r"), std::string::npos);
  EXPECT_NE(text.find("x?[2J?$(touch y)lll"), std::string::npos) << text.substr(0, 500);
  EXPECT_LT(text.size(), 2000u);
}

TEST(Status, ShowsAPreRunScriptThatDidNotSucceed) {
  World w;
  auto ok = testing::idle_record("i-00000000000000bb1", w.now());
  ok.pre_run = pool::PreRun::kOk;
  ok.pre_run_detail = "exit 0 after 4s";
  w.table.inner.create(ok);
  auto failed = testing::idle_record("i-00000000000000bb2", w.now());
  failed.state = pool::State::kCreated;
  failed.pre_run = pool::PreRun::kFailed;
  failed.pre_run_detail = "exit 3: no disk";
  w.table.inner.create(failed);
  auto slow = testing::idle_record("i-00000000000000bb3", w.now());
  slow.state = pool::State::kCreated;
  slow.pre_run = pool::PreRun::kTimeout;
  slow.pre_run_detail = "timed out after 10m: warming";
  w.table.inner.create(slow);

  ASSERT_EQ(run_status(w.ctx, {false, false}), kExitOk);
  const std::string text = w.out.str();
  EXPECT_NE(text.find("pre-run failed: exit 3: no disk"), std::string::npos) << text;
  EXPECT_NE(text.find("pre-run timeout: timed out after 10m: warming"), std::string::npos) << text;
  EXPECT_EQ(text.find("exit 0 after 4s"), std::string::npos) << "a script that worked is no news: " << text;
  // Each under its own instance's line.
  EXPECT_LT(text.find("i-00000000000000bb2"), text.find("exit 3: no disk"));
  EXPECT_GT(text.find("i-00000000000000bb3"), text.find("exit 3: no disk"));

  w.out.str("");
  ASSERT_EQ(run_status(w.ctx, {true, false}), kExitOk);
  Json::Value j = parse_json(w.out.str(), "status");
  ASSERT_EQ(j["instances"].size(), 3u);
  std::map<std::string, Json::Value> by_id;
  for (const auto& i : j["instances"]) by_id[i["instance_id"].asString()] = i;
  EXPECT_EQ(by_id["i-00000000000000bb1"]["pre_run"].asString(), "ok");
  EXPECT_EQ(by_id["i-00000000000000bb2"]["pre_run"].asString(), "failed");
  EXPECT_EQ(by_id["i-00000000000000bb2"]["pre_run_detail"].asString(), "exit 3: no disk");
  EXPECT_EQ(by_id["i-00000000000000bb3"]["pre_run"].asString(), "timeout");
}

TEST(Status, ShowsAJobLostToSpotAndWhatWasDecidedForIt) {
  World w;
  auto waiting = testing::idle_record("i-00000000000000cc1", w.now());
  waiting.state = pool::State::kDraining;
  waiting.spot_job = "build";
  waiting.spot_generation = 2;
  w.table.inner.create(waiting);
  auto rerun = testing::idle_record("i-00000000000000cc2", w.now());
  rerun.spot_job = "test";
  rerun.spot_job_result = "Canceled";
  rerun.spot_run = "acme/app 7001";
  rerun.spot_rerun = "rerun 42";
  w.table.inner.create(rerun);

  ASSERT_EQ(run_status(w.ctx, {false, true}), kExitOk);
  const std::string text = w.out.str();
  EXPECT_NE(text.find("spot: job build in hand at the interruption; re-run: not decided yet"), std::string::npos) << text;
  EXPECT_NE(text.find("spot: job test in hand at the interruption (ended Canceled); re-run: rerun 42"), std::string::npos)
      << text;
  w.out.str("");
  ASSERT_EQ(run_status(w.ctx, {true, true}), kExitOk);
  Json::Value j = parse_json(w.out.str(), "status");
  std::map<std::string, Json::Value> by_id;
  for (const auto& i : j["instances"]) by_id[i["instance_id"].asString()] = i;
  EXPECT_EQ(by_id["i-00000000000000cc2"]["spot_rerun"].asString(), "rerun 42");
  EXPECT_EQ(by_id["i-00000000000000cc2"]["spot_run"].asString(), "acme/app 7001");
  EXPECT_EQ(by_id["i-00000000000000cc1"]["spot_job"].asString(), "build");
  EXPECT_EQ(by_id["i-00000000000000cc1"]["spot_rerun"].asString(), "");
}

TEST(Status, ShowsWhatAnInstanceRunsAFailedAgentsReasonAndARetireMark) {
  World w;
  auto r = testing::idle_record("i-00000000000000cc1", w.now());
  r.state = pool::State::kRunning;
  r.ami_id = "ami-0123456789abcdef0";
  r.runner_version = "2.336.0";
  r.agent_version = "1.4.0";
  r.retire_pending = true;
  r.signal = pool::AgentSignal::kFailed;
  r.signal_detail = std::string(pool::kRunnerVersionDeprecated) + ": GitHub refuses this runner's version";
  w.table.inner.create(r);
  ASSERT_EQ(run_status(w.ctx, {false, false}), kExitOk);
  EXPECT_NE(w.out.str().find("agent failed: runner version deprecated"), std::string::npos) << w.out.str();
  EXPECT_NE(w.out.str().find("retired at its release"), std::string::npos) << w.out.str();
  w.out.str("");
  ASSERT_EQ(run_status(w.ctx, {true, false}), kExitOk);
  Json::Value j = parse_json(w.out.str(), "status")["instances"][0];
  EXPECT_EQ(j["ami_id"].asString(), "ami-0123456789abcdef0");
  EXPECT_EQ(j["runner_version"].asString(), "2.336.0");
  EXPECT_EQ(j["agent_version"].asString(), "1.4.0");
  EXPECT_TRUE(j["retire_pending"].asBool());
  EXPECT_EQ(j["signal_detail"].asString().rfind("runner version deprecated", 0), 0u);
  EXPECT_FALSE(j.isMember("reuse_scope_key")) << "untagged";
  EXPECT_FALSE(j.isMember("kept_until_ms")) << "not kept";
}

TEST(Status, ShowsAFailedInstanceKeptForInspection) {
  World w;
  auto r = testing::idle_record("i-00000000000000cc2", w.now());
  r.state = pool::State::kRunning;
  r.signal = pool::AgentSignal::kFailed;
  r.kept_until_ms = 1'800'000'000'000;
  w.table.inner.create(r);
  ASSERT_EQ(run_status(w.ctx, {false, false}), kExitOk);
  EXPECT_NE(w.out.str().find("kept for inspection until 2027-01-15T08:00:00Z (keep_failed)"), std::string::npos)
      << w.out.str();
  w.out.str("");
  ASSERT_EQ(run_status(w.ctx, {true, false}), kExitOk);
  EXPECT_EQ(parse_json(w.out.str(), "status")["instances"][0]["kept_until_ms"].asInt64(), 1'800'000'000'000);
}

TEST(Status, ShowsWhomASameScopeInstanceIsKeptFor) {
  World w;
  auto r = testing::idle_record("i-00000000000000cc2", w.now());
  r.reuse_scope_key = "repository:acme/app";
  w.table.inner.create(r);
  ASSERT_EQ(run_status(w.ctx, {false, false}), kExitOk);
  EXPECT_NE(w.out.str().find("kept for repository:acme/app"), std::string::npos) << w.out.str();
  w.out.str("");
  ASSERT_EQ(run_status(w.ctx, {true, false}), kExitOk);
  EXPECT_EQ(parse_json(w.out.str(), "status")["instances"][0]["reuse_scope_key"].asString(), "repository:acme/app");
}

TEST(Status, EmptyPoolAndUnreadableDepth) {
  World w;
  w.queue.fail_receive = true;  // depth still works: only receive fails
  ASSERT_EQ(run_status(w.ctx, {false, false}), kExitOk);
  EXPECT_NE(w.out.str().find("no instances"), std::string::npos);
}

TEST(Status, TheScaleSetsRunnersByPhaseAndWhoServesIt) {
  World w;
  const std::string set = w.settings.scale_set();
  auto record = [&](const std::string& id, pool::State state, bool busy) {
    auto r = testing::idle_record(id, w.now());
    r.state = state;
    r.label = set;
    r.busy = busy;
    w.table.inner.create(r);
  };
  record("i-00000000000000bb1", pool::State::kRunning, true);
  record("i-00000000000000bb2", pool::State::kRunning, false);
  record("i-00000000000000bb3", pool::State::kDraining, false);
  pool::MemoryLeaseStore leases;

  ASSERT_EQ(run_status(w.ctx, {false, false}, &leases), kExitOk);
  EXPECT_NE(w.out.str().find("SCALE SET " + set + "\n  1 busy, 1 armed, 0 starting, 1 cleaning; never served"),
            std::string::npos)
      << w.out.str();

  leases.create(pool::Lease{serve_lease_name(w.settings), "ctl-host:42", 3, w.now() + 20'000});
  w.out.str("");
  ASSERT_EQ(run_status(w.ctx, {true, false}, &leases), kExitOk);
  Json::Value j = parse_json(w.out.str(), "status");
  ASSERT_EQ(j["scale_sets"].size(), 1u);
  EXPECT_EQ(j["scale_sets"][0]["name"].asString(), set);
  EXPECT_EQ(j["scale_sets"][0]["busy"].asInt(), 1);
  EXPECT_EQ(j["scale_sets"][0]["armed"].asInt(), 1);
  EXPECT_EQ(j["scale_sets"][0]["cleaning"].asInt(), 1);
  EXPECT_EQ(j["scale_sets"][0]["holder"].asString(), "ctl-host:42");
  EXPECT_EQ(j["scale_sets"][0]["lease_generation"].asInt(), 3);
  EXPECT_TRUE(j["scale_sets"][0]["served"].asBool());

  w.out.str("");
  ASSERT_EQ(run_status(w.ctx, {false, false}, &leases), kExitOk);
  EXPECT_NE(w.out.str().find("served by ctl-host:42 (lease generation 3, 20s left)"), std::string::npos) << w.out.str();
}

// One pool, several scale sets (one serve each): status shows every one the pool ever served,
// whichever scale_set_name it is run with, and no other pool's.
TEST(Status, EveryScaleSetOfThePoolWhicheverIsConfigured) {
  World w;
  auto record = [&](const std::string& id, const std::string& label, bool busy) {
    auto r = testing::idle_record(id, w.now());
    r.state = pool::State::kRunning;
    r.label = label;
    r.busy = busy;
    w.table.inner.create(r);
  };
  record("i-00000000000000cc1", "linux-big", true);
  record("i-00000000000000cc2", "linux-small", false);
  record("i-00000000000000cc3", "linux-small", true);
  pool::MemoryLeaseStore leases;
  leases.create(pool::Lease{serve_lease_prefix(w.settings.pool) + "linux-small", "host-a:1", 1, w.now() + 20'000});
  leases.create(pool::Lease{serve_lease_prefix(w.settings.pool) + "linux-big", "host-b:2", 4, w.now() - 60'000});
  leases.create(pool::Lease{serve_lease_prefix(w.settings.pool + "x") + "linux-small", "host-c:3", 1, w.now() + 20'000});

  ASSERT_EQ(run_status(w.ctx, {true, false}, &leases), kExitOk);
  Json::Value j = parse_json(w.out.str(), "status");
  ASSERT_EQ(j["scale_sets"].size(), 2u) << w.out.str();
  EXPECT_EQ(j["scale_sets"][0]["name"].asString(), "linux-big");
  EXPECT_EQ(j["scale_sets"][0]["busy"].asInt(), 1);
  EXPECT_FALSE(j["scale_sets"][0]["served"].asBool()) << "its lease ended a minute ago";
  EXPECT_EQ(j["scale_sets"][1]["name"].asString(), "linux-small");
  EXPECT_EQ(j["scale_sets"][1]["busy"].asInt(), 1);
  EXPECT_EQ(j["scale_sets"][1]["armed"].asInt(), 1);
  EXPECT_EQ(j["scale_sets"][1]["holder"].asString(), "host-a:1");
  EXPECT_TRUE(j["scale_sets"][1]["served"].asBool());

  w.out.str("");
  ASSERT_EQ(run_status(w.ctx, {false, false}, &leases), kExitOk);
  const std::string text = w.out.str();
  EXPECT_NE(text.find("SCALE SET linux-big\n  1 busy, 0 armed, 0 starting, 0 cleaning; not served: the lease of "
                      "host-b:2 ended 1m ago"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("SCALE SET linux-small\n  1 busy, 1 armed, 0 starting, 0 cleaning; served by host-a:1"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("host-c:3"), std::string::npos) << "another pool's scale set";
}

TEST(Status, NoScaleSetSectionForAPoolThatNeverServedOne) {
  World w;
  w.add_idle("i-00000000000000aa1");
  pool::MemoryLeaseStore leases;
  ASSERT_EQ(run_status(w.ctx, {false, false}, &leases), kExitOk);
  EXPECT_EQ(w.out.str().find("SCALE SET"), std::string::npos) << w.out.str();
}

}  // namespace
}  // namespace runpool::controller
