// drain_to_pool (through run_release) when the agent could not deregister its runner: runpoolctl
// deletes it before the instance goes back, or leaves the instance draining when GitHub refuses
// that too; a refused remove token handed back gets a fresh one.
#include "controller/drain.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "common/json.h"
#include "common/pool/runner_fate.h"
#include "controller/provision.h"
#include "controller/release.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using pool::AgentSignal;
using pool::State;
using testing::World;

// GitHub as World's, but with DELETE answering as the test says.
class DeletingRunners final : public Runners {
 public:
  explicit DeletingRunners(Runners& inner) : inner_(inner) {}
  Secret registration_token() override { return inner_.registration_token(); }
  Secret remove_token() override { return inner_.remove_token(); }
  std::string registration_url() override { return inner_.registration_url(); }
  std::vector<github::Runner> list() override {
    std::vector<github::Runner> all = inner_.list();
    all.insert(all.end(), listed.begin(), listed.end());
    return all;
  }
  std::vector<github::Runner> listed;  // what GitHub still lists, as a test says
  bool remove_labels(int64_t id) override { return inner_.remove_labels(id); }
  std::vector<github::WorkflowRun> workflow_runs(const std::string& r, const std::string& s) override {
    return inner_.workflow_runs(r, s);
  }
  std::vector<github::WorkflowJob> run_jobs(const std::string& r, int64_t id) override { return inner_.run_jobs(r, id); }
  // Runners' request count (no `override`: it builds with and without it in the interface); the
  // release under test sends only deletes through here that the wrapped GitHub does not see.
  long requests_sent(const std::string& operation) {
    return operation.empty() || operation == "DeleteRunner" ? static_cast<long>(deleted.size()) : 0;
  }
  // GitHub's GET of one runner: the names a test gave, else none.
  std::optional<github::Runner> get(int64_t id) override {
    ++gets;
    auto it = names.find(id);
    if (it == names.end()) return std::nullopt;
    github::Runner r;
    r.id = id;
    r.name = it->second;
    r.status = "online";
    return r;
  }
  std::map<int64_t, std::string> names;
  int gets = 0;
  github::DeleteOutcome remove(int64_t id) override {
    deleted.push_back(id);
    if (fail) throw std::runtime_error("GitHub delete runner: Server Error (HTTP 502)");
    if (outcome == github::DeleteOutcome::kDeleted) unlist(id);
    return outcome;
  }
  void unlist(int64_t id) {
    std::erase_if(listed, [&](const github::Runner& r) { return r.id == id; });
  }
  github::DeleteOutcome outcome = github::DeleteOutcome::kDeleted;
  bool fail = false;
  std::vector<int64_t> deleted;

 private:
  Runners& inner_;
};

struct Fixture {
  World w;
  DeletingRunners gh{w.github};
  Context ctx{w.settings, w.clock, w.table, w.queue, w.compute, gh, w.out, w.cancelled};
  std::string id;

  Fixture() {
    ProvisionOptions o;
    o.count = 1;
    o.label = "ci-1-1-build";
    o.usage = pool::UsageClass::kOnDemand;
    o.getenv = [](const char*) -> const char* { return nullptr; };
    o.random = [] { return std::string("0123456789abcdef"); };
    EXPECT_EQ(run_provision(w.ctx, o), kExitOk);
    id = w.compute.launched.at(0);
    pool::AgentReport a;
    a.generation = 1;
    a.runner_id = 77;
    a.runner_name = "ci-" + id + "-g1";
    w.table.report(id, a);
    gh.names[77] = "ci-" + id + "-g1";     // GitHub knows the assignment's runner under its id
    gh.names[88] = "other-tenant-box";     // and another tenant's runner
    github::Runner own;
    own.id = 77;
    own.name = gh.names[77];
    own.status = "online";
    gh.listed.push_back(own);  // listed until its agent deregisters it or runpoolctl deletes it
    w.out.str("");
    w.agents.drain_ok = false;  // the drain is the test's own agent, below
  }

  // The agent's `drained` once the record drains: deregistered (gone from GitHub's list), or with
  // its runner left. `forged`: a thief's drained — the runner stays listed.
  void agent_drains(const std::string& detail, bool forged = false) {
    w.on_tick = [this, detail, forged] {
      auto r = w.table.get(id);
      if (!r || r->state != State::kDraining || pool::agent_reported(*r, AgentSignal::kDrained)) return;
      pool::AgentReport a;
      a.generation = r->generation;
      a.signal = AgentSignal::kDrained;
      a.take_remove_token = true;
      if (!detail.empty()) a.signal_detail = detail;
      if (!forged && detail.rfind(pool::kRunnerLeftRegistered, 0) != 0) gh.unlist(77);  // config.sh remove
      w.table.report(id, a);
    };
  }

  Json::Value release() {
    w.out.str("");
    exit_code = run_release(ctx, {"ci-1-1-build", true, std::chrono::seconds(30), true, {}});
    return parse_json(w.out.str(), "release --json");
  }
  int exit_code = -1;
};

bool contains(const Json::Value& a, const std::string& s) {
  for (const auto& v : a) {
    if (v.asString() == s) return true;
  }
  return false;
}

TEST(DrainRunner, DeregisteredByTheAgentNeedsNoDelete) {
  Fixture f;
  f.agent_drains("runner ci-x-g1 (id 77) deregistered");
  Json::Value v = f.release();
  EXPECT_EQ(f.exit_code, kExitOk) << f.w.out.str();
  EXPECT_TRUE(contains(v["returned"], f.id)) << f.w.out.str();
  EXPECT_EQ(v["runners"][f.id]["fate"].asString(), "deregistered-by-agent");
  EXPECT_TRUE(f.gh.deleted.empty());
}

// Before the drain is written: the agent's one long poll counts from when it sees `draining`.
TEST(DrainRunner, TheDrainRequestRemovesTheRunnersLabelsSoNoNewJobIsRoutedToIt) {
  Fixture f;
  f.agent_drains("runner ci-x-g1 (id 77) deregistered");
  std::vector<int64_t> unlabelled_at_drain{-1};
  f.w.table.before_transition = [&](const std::string&, const pool::Expect&, const pool::LifecycleChange& c) {
    if (c.state == State::kDraining) unlabelled_at_drain = f.w.github.unlabelled;
  };
  f.release();
  EXPECT_EQ(f.exit_code, kExitOk) << f.w.out.str();
  EXPECT_EQ(unlabelled_at_drain, std::vector<int64_t>{77}) << "labels removed before the draining write";
  EXPECT_EQ(f.w.github.unlabelled, std::vector<int64_t>{77});
  EXPECT_EQ(f.w.github.requests_sent("RemoveAllRunnerLabels"), 1);
}

// `runpoolctl retire` marks the instance after release read it drained: the return fails on the
// mark, and the instance is retired as if the mark had been read.
TEST(DrainRunner, ARetireMarkWrittenAfterTheReadRetiresInsteadOfReturning) {
  Fixture f;
  f.agent_drains("runner ci-x-g1 (id 77) deregistered");
  f.w.table.before_transition = [&](const std::string& id, const pool::Expect&, const pool::LifecycleChange& c) {
    if (c.state != State::kIdle) return;
    pool::Step mark = pool::mark_retire(*f.w.table.inner.get(id));
    f.w.table.inner.transition(id, mark.expect, mark.change);
  };
  Json::Value v = f.release();
  EXPECT_EQ(f.exit_code, kExitOk) << f.w.out.str();
  EXPECT_TRUE(contains(v["retired"], f.id)) << f.w.out.str();
  EXPECT_EQ(v["retired_reasons"][f.id].asString(), "outdated");
  EXPECT_NE(f.w.record(f.id).state, State::kIdle);
}

TEST(DrainRunner, ALabelRemovalGithubRefusesLeavesTheDrainToTheAgent) {
  Fixture f;
  f.w.github.fail_remove_labels = true;
  f.agent_drains("runner ci-x-g1 (id 77) deregistered");
  Json::Value v = f.release();
  EXPECT_EQ(f.exit_code, kExitOk) << f.w.out.str();
  EXPECT_TRUE(contains(v["returned"], f.id)) << f.w.out.str();
  EXPECT_EQ(f.w.github.unlabelled, std::vector<int64_t>{77});
}

TEST(DrainRunner, ALeftRunnerIsDeletedByRunpoolctlBeforeTheInstanceReturns) {
  Fixture f;
  const std::string evidence = pool::runner_left_detail("ci-x-g1", 77, "config.sh remove failed 5 time(s): Server Error");
  f.agent_drains(evidence);
  Json::Value v = f.release();
  EXPECT_EQ(f.exit_code, kExitOk) << f.w.out.str();
  EXPECT_TRUE(contains(v["returned"], f.id)) << f.w.out.str();
  EXPECT_EQ(f.gh.deleted, std::vector<int64_t>{77});
  EXPECT_EQ(v["runners"][f.id]["fate"].asString(), "deleted-by-runpoolctl");
  const std::string detail = v["runners"][f.id]["detail"].asString();
  EXPECT_NE(detail.find("runpoolctl deleted it"), std::string::npos) << detail;
  EXPECT_NE(detail.find("Server Error"), std::string::npos) << "the agent's evidence is in the report: " << detail;
  EXPECT_EQ(f.w.record(f.id).state, State::kIdle);
}

TEST(DrainRunner, AlreadyGoneIsSaidSo) {
  Fixture f;
  f.agent_drains(pool::runner_left_detail("ci-x-g1", 77, "timed out"));
  f.gh.outcome = github::DeleteOutcome::kAlreadyGone;
  Json::Value v = f.release();
  EXPECT_EQ(f.exit_code, kExitOk) << f.w.out.str();
  EXPECT_EQ(v["runners"][f.id]["fate"].asString(), "already-gone");
  EXPECT_TRUE(contains(v["returned"], f.id));
}

TEST(DrainRunner, WhenGithubRefusesBothTheInstanceStaysDrainingWithTheEvidence) {
  for (bool busy : {true, false}) {
    Fixture f;
    const std::string evidence =
        pool::runner_left_detail("ci-x-g1", 77, "config.sh remove failed 5 time(s): is still running a job");
    f.agent_drains(evidence);
    if (busy) f.gh.outcome = github::DeleteOutcome::kBusy;
    else f.gh.fail = true;
    Json::Value v = f.release();
    EXPECT_EQ(f.exit_code, kExitFailed) << f.w.out.str();
    EXPECT_TRUE(contains(v["draining"], f.id)) << f.w.out.str();
    EXPECT_FALSE(contains(v["returned"], f.id));
    EXPECT_FALSE(contains(v["terminated"], f.id));
    EXPECT_TRUE(f.w.compute.terminated.empty());
    EXPECT_EQ(v["runners"][f.id]["fate"].asString(), "left-registered");
    const std::string detail = v["runners"][f.id]["detail"].asString();
    EXPECT_NE(detail.find(busy ? "still running a job" : "HTTP 502"), std::string::npos) << detail;
    EXPECT_NE(detail.find("left for the next pass or refresh"), std::string::npos) << detail;
    pool::InstanceRecord r = f.w.record(f.id);
    EXPECT_EQ(r.state, State::kDraining);
    EXPECT_EQ(r.signal_detail, evidence) << "nothing overwrote the agent's evidence";
  }
}

// runner_id is the agent's word: a thief holding the instance role's credentials can point it at
// another tenant's runner. The drain neither takes that runner's labels nor deletes it: the runner
// removed is the one GitHub lists under the assignment's name.
TEST(DrainRunner, AForgedRunnerIdNeverReachesAnotherRunner) {
  for (bool failed : {false, true}) {
    Fixture f;
    pool::AgentReport forged;
    forged.generation = 1;
    forged.runner_id = 88;
    f.w.table.report(f.id, forged);
    if (failed) f.w.agents.failing.insert(f.id);
    else f.agent_drains(pool::runner_left_detail("ci-x-g1", 88, "config.sh remove failed"));
    Json::Value v = f.release();
    EXPECT_EQ(f.gh.deleted, std::vector<int64_t>{77}) << "its own runner, found by name; never another's";
    EXPECT_TRUE(f.w.github.unlabelled.empty()) << "another tenant's runner unlabelled";
    EXPECT_EQ(v["runners"][f.id]["fate"].asString(), "deleted-by-runpoolctl") << f.w.out.str();
    EXPECT_TRUE(contains(failed ? v["terminated"] : v["returned"], f.id)) << f.w.out.str();
  }
}

TEST(DrainRunner, ADrainedGithubContradictsIsCheckedBeforeTheInstanceLeaves) {
  for (bool busy : {true, false}) {
    Fixture f;
    f.gh.listed.at(0).busy = busy;  // the assignment's runner, still listed
    if (busy) f.gh.outcome = github::DeleteOutcome::kBusy;
    f.agent_drains("", true);  // a forged drained: says deregistered
    Json::Value v = f.release();
    EXPECT_EQ(f.gh.deleted, std::vector<int64_t>{77});
    if (busy) {
      EXPECT_EQ(f.exit_code, kExitFailed) << f.w.out.str();
      EXPECT_FALSE(contains(v["returned"], f.id));
      EXPECT_TRUE(f.w.compute.terminated.empty());
      EXPECT_EQ(f.w.record(f.id).state, State::kDraining);
      EXPECT_EQ(v["runners"][f.id]["fate"].asString(), "left-registered");
    } else {
      EXPECT_EQ(f.exit_code, kExitOk) << f.w.out.str();
      EXPECT_TRUE(contains(v["returned"], f.id));
      EXPECT_EQ(v["runners"][f.id]["fate"].asString(), "deleted-by-runpoolctl");
      EXPECT_NE(v["runners"][f.id]["detail"].asString().find("GitHub still listed"), std::string::npos);
    }
  }
}

TEST(DrainRunner, ADrainedGithubCannotConfirmLeavesTheInstanceDraining) {
  class Unreadable final : public Runners {
   public:
    explicit Unreadable(Runners& inner) : inner_(inner) {}
    Secret registration_token() override { return inner_.registration_token(); }
    Secret remove_token() override { return inner_.remove_token(); }
    std::string registration_url() override { return inner_.registration_url(); }
    std::vector<github::Runner> list() override { throw std::runtime_error("GitHub list runners: HTTP 502"); }
    std::optional<github::Runner> get(int64_t) override { return std::nullopt; }
    bool remove_labels(int64_t id) override { return inner_.remove_labels(id); }
    github::DeleteOutcome remove(int64_t) override { return github::DeleteOutcome::kDeleted; }
    long requests_sent(const std::string&) override { return 0; }
    std::vector<github::WorkflowRun> workflow_runs(const std::string& r, const std::string& s) override {
      return inner_.workflow_runs(r, s);
    }
    std::vector<github::WorkflowJob> run_jobs(const std::string& r, int64_t id) override { return inner_.run_jobs(r, id); }

   private:
    Runners& inner_;
  };
  Fixture f;
  Unreadable gh{f.w.github};
  Context ctx{f.w.settings, f.w.clock, f.w.table, f.w.queue, f.w.compute, gh, f.w.out, f.w.cancelled};
  f.agent_drains("");
  f.w.out.str("");
  EXPECT_EQ(run_release(ctx, {"ci-1-1-build", true, std::chrono::seconds(30), true, {}}), kExitFailed) << f.w.out.str();
  Json::Value v = parse_json(f.w.out.str(), "release --json");
  EXPECT_EQ(f.w.record(f.id).state, State::kDraining);
  EXPECT_TRUE(f.w.compute.terminated.empty());
  EXPECT_NE(v["runners"][f.id]["detail"].asString().find("GitHub could not be asked"), std::string::npos) << f.w.out.str();
}

TEST(DrainRunner, ARunnerGithubNoLongerKnowsIsAlreadyGoneWithoutADelete) {
  Fixture f;
  f.gh.unlist(77);
  f.agent_drains(pool::runner_left_detail("ci-x-g1", 77, "timed out"));
  Json::Value v = f.release();
  EXPECT_EQ(f.exit_code, kExitOk) << f.w.out.str();
  EXPECT_TRUE(f.gh.deleted.empty());
  EXPECT_EQ(v["runners"][f.id]["fate"].asString(), "no-runner");
  EXPECT_TRUE(contains(v["returned"], f.id));
}

TEST(DrainRunner, AFailedAgentsRunnerIsDeletedBeforeItsInstanceIsTerminated) {
  Fixture f;
  f.w.agents.failing.insert(f.id);
  Json::Value v = f.release();
  EXPECT_TRUE(contains(v["terminated"], f.id)) << f.w.out.str();
  EXPECT_EQ(f.gh.deleted, std::vector<int64_t>{77});
  EXPECT_EQ(v["runners"][f.id]["fate"].asString(), "deleted-by-runpoolctl");
}

TEST(DrainRunner, ARefusedRemoveTokenGetsAFreshOne) {
  Fixture f;
  std::vector<std::string> seen;
  f.w.on_tick = [&] {
    auto r = f.w.table.get(f.id);
    if (!r || r->state != State::kDraining || pool::agent_reported(*r, AgentSignal::kDrained)) return;
    if (r->remove_token.empty()) return;
    seen.push_back(r->remove_token.reveal());
    pool::AgentReport a;
    a.generation = r->generation;
    a.take_remove_token = true;
    if (seen.size() > 1) {  // the fresh one works
      a.signal = AgentSignal::kDrained;
      a.signal_detail = "runner deregistered";
      f.gh.unlist(77);
    }
    f.w.table.report(f.id, a);
  };
  Json::Value v = f.release();
  EXPECT_EQ(f.exit_code, kExitOk) << f.w.out.str();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[0], seen[1]);
  EXPECT_TRUE(contains(v["returned"], f.id));
  EXPECT_TRUE(f.gh.deleted.empty());
}

}  // namespace
}  // namespace runpool::controller
