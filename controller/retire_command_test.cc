// run_retire against in-memory fakes: idle outdated instances end at once, assigned ones are
// marked and their release retires them instead of returning them; current ones stay; a dry run
// changes nothing; claims never take a marked instance.
#include "controller/retire_command.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "controller/provision.h"
#include "controller/release.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::State;
using testing::World;

pool::InstanceRecord versioned(World& w, const std::string& id, const std::string& runner) {
  pool::InstanceRecord r = w.add_idle(id);
  pool::AgentReport a;
  a.runner_version = runner;
  w.table.inner.report(id, a);
  return w.record(id);
}

RetireOptions runner_is(const std::string& v, bool dry_run = false) {
  RetireOptions o;
  o.criteria.runner_version = v;
  o.dry_run = dry_run;
  return o;
}

TEST(Retire, IdleOutdatedInstancesEndAtOnceCurrentOnesStay) {
  World w;
  versioned(w, "i-00000000000000a1", "2.330.0");
  versioned(w, "i-00000000000000a2", "2.336.0");
  w.add_idle("i-00000000000000a3");  // reports no runner version: cannot be shown current
  ASSERT_EQ(run_retire(w.ctx, runner_is("2.336.0")), kExitOk) << w.out.str();
  EXPECT_EQ(w.record("i-00000000000000a1").state, State::kTerminated);
  EXPECT_EQ(w.record("i-00000000000000a3").state, State::kTerminated);
  EXPECT_EQ(w.record("i-00000000000000a2").state, State::kIdle);
  EXPECT_EQ(w.compute.terminated.size(), 2u);
  EXPECT_NE(w.out.str().find("2 idle retired, 0 assigned marked for retirement at release, 1 kept"), std::string::npos)
      << w.out.str();
  EXPECT_NE(w.out.str().find("runner 2.330.0, not 2.336.0"), std::string::npos);
}

TEST(Retire, ADryRunChangesNothingAndJsonSaysWhatWouldBeDone) {
  World w;
  versioned(w, "i-00000000000000b1", "2.330.0");
  RetireOptions o = runner_is("2.336.0", true);
  o.json = true;
  ASSERT_EQ(run_retire(w.ctx, o), kExitOk);
  EXPECT_EQ(w.record("i-00000000000000b1").state, State::kIdle);
  EXPECT_TRUE(w.compute.terminated.empty());
  Json::Value v = parse_json(w.out.str(), "retire");
  EXPECT_TRUE(v["dry_run"].asBool());
  EXPECT_EQ(v["retired"].asInt(), 1);
  EXPECT_EQ(v["instances"][0]["action"].asString(), "retire");
  EXPECT_EQ(v["instances"][0]["outcome"].asString(), "would terminate");
}

TEST(Retire, WithoutACriterionItIsAUsageError) {
  World w;
  EXPECT_THROW(run_retire(w.ctx, RetireOptions{}), UsageError);
}

// A mistaken current value would retire the whole pool: what cannot be an AMI id or a version is
// refused before anything is read or changed.
TEST(Retire, CurrentValuesThatCannotBeOneAreUsageErrors) {
  World w;
  versioned(w, "i-00000000000000c1", "2.336.0");
  for (const char* bad : {"2.336.0\n", "$(touch x)", "", "a b", "\x1b[31m"}) {
    EXPECT_THROW(run_retire(w.ctx, runner_is(bad)), UsageError) << bad;
    RetireOptions agent;
    agent.criteria.agent_version = bad;
    EXPECT_THROW(run_retire(w.ctx, agent), UsageError) << bad;
  }
  for (const char* bad : {"ami-", "ami-xyz12345", "i-0123456789abcdef0", "ami-0123456", "ami-0123456789abcdef0\n"}) {
    RetireOptions ami;
    ami.criteria.ami_id = bad;
    EXPECT_THROW(run_retire(w.ctx, ami), UsageError) << bad;
  }
  EXPECT_EQ(w.record("i-00000000000000c1").state, State::kIdle);
  RetireOptions ok;
  ok.criteria.ami_id = "ami-0123456789abcdef0";
  ok.criteria.agent_version = "0.1.0+g1a2b3c";
  ok.dry_run = true;
  EXPECT_EQ(run_retire(w.ctx, ok), kExitOk);
}

TEST(Retire, AnAssignedInstanceIsMarkedAndItsReleaseRetiresItInsteadOfReturningIt) {
  World w;
  w.settings.image_id = "ami-00000000000000001";
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1, "run-1")), kExitOk) << w.out.str();
  // A new image is rolled out: the next launch records it.
  w.settings.image_id = "ami-00000000000000002";
  ASSERT_EQ(run_provision(w.ctx, testing::provision_options(1, "run-2")), kExitOk) << w.out.str();
  ASSERT_EQ(w.compute.launched.size(), 2u);
  const std::string old_one = w.compute.launched[0], new_one = w.compute.launched[1];
  EXPECT_EQ(w.record(old_one).ami_id, "ami-00000000000000001") << "the launch's AMI is recorded";
  EXPECT_EQ(w.record(new_one).ami_id, "ami-00000000000000002");
  w.out.str("");

  RetireOptions o;
  o.criteria.ami_id = "ami-00000000000000002";
  ASSERT_EQ(run_retire(w.ctx, o), kExitOk) << w.out.str();
  EXPECT_TRUE(w.record(old_one).retire_pending);
  EXPECT_EQ(w.record(old_one).state, State::kRunning) << "its job goes on";
  EXPECT_FALSE(w.record(new_one).retire_pending);
  EXPECT_TRUE(w.compute.terminated.empty());
  w.out.str("");
  ASSERT_EQ(run_retire(w.ctx, o), kExitOk);
  EXPECT_NE(w.out.str().find("marked already"), std::string::npos) << "idempotent: " << w.out.str();

  w.out.str("");
  ASSERT_EQ(run_release(w.ctx, {"run-1", true, std::nullopt, false, {}}), kExitOk) << w.out.str();
  EXPECT_EQ(w.record(old_one).state, State::kTerminated);
  EXPECT_NE(w.out.str().find("retired (outdated): " + old_one), std::string::npos) << w.out.str();
  EXPECT_TRUE(w.queue.bodies("small").empty()) << "the outdated instance never went back to the pool";
  ASSERT_EQ(run_release(w.ctx, {"run-2", true, std::nullopt, false, {}}), kExitOk) << w.out.str();
  EXPECT_EQ(w.record(new_one).state, State::kIdle);
  EXPECT_EQ(w.queue.bodies("small").size(), 1u);
}

}  // namespace
}  // namespace runpool::controller
