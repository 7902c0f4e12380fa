// The reuse policy end to end, with real agents and jobs from two repositories of one owner: under
// reuse = same-scope an instance released by acme/app waits in the pool for acme/app (acme/other's
// provision launches another) and serves acme/app's next run; under reuse = never a release
// terminates the instance and the next run gets a new one.
#include "tests/e2e/e2e_fixture.h"

namespace runpool::controller::e2e {
namespace {

class Reuse : public E2eTest {
 protected:
  // runpoolctl for the runs of `repo` (the fixture's pool serves acme/app unless told otherwise).
  CtlResult ctl_for(const std::string& repo, std::vector<std::string> args) {
    args.insert(args.begin(), {"--set", "github_owner=acme/" + repo});
    return ctl(args);
  }
  Json::Value provision_for(const std::string& repo, const std::string& label) {
    CtlResult r = ctl_for(repo, provision_args(label, 1));
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
    return parse_json(r.out.empty() ? "{}" : r.out, "provision");
  }
  Json::Value release_for(const std::string& repo, const std::string& label) {
    CtlResult r = ctl_for(repo, {"--json", "release", "--wait", "--label", label});
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
    return parse_json(r.out.empty() ? "{}" : r.out, "release");
  }
  // Runs one job of acme/`repo` on `label`; the instance it ran on ("" if it did not succeed).
  std::string run_job(const std::string& repo, const std::string& label) {
    Json::Value body;
    body["label"] = label;
    body["name"] = label + "-job";
    body["durationMs"] = 200;
    body["owner"] = "acme";
    body["repo"] = repo;
    body["run"] = "true";
    const int64_t id = cloud_.control("POST", "/_control/github/jobs", body)["id"].asInt64();
    Json::Value j = finished_job(id);
    EXPECT_EQ(j["result"].asString(), "Succeeded") << write_json(j) << consoles();
    return j["result"].asString() == "Succeeded" ? instance_of_runner(j["runnerName"].asString()) : "";
  }
};

class SameScopeReuse : public Reuse {
  std::string more_config() const override { return "reuse = same-scope\n"; }
};

class NeverReuse : public Reuse {
  std::string more_config() const override { return "reuse = never\n"; }
};

TEST_F(SameScopeReuse, AnInstanceWaitsForItsOwnRepository) {
  Json::Value a1 = provision_for("app", "app-1");
  ASSERT_EQ(ids_of(a1).size(), 1u) << write_json(a1);
  const std::string kept = ids_of(a1)[0];
  EXPECT_EQ(run_job("app", "app-1"), kept);
  Json::Value rel = release_for("app", "app-1");
  ASSERT_EQ(rel["returned"].size(), 1u) << write_json(rel);
  EXPECT_EQ(record(kept).state, State::kIdle);
  EXPECT_EQ(record(kept).reuse_scope_key, "repository:acme/app");

  // acme/other's run leaves it in the pool and gets a launched instance.
  Json::Value b1 = provision_for("other", "other-1");
  EXPECT_EQ(b1["warm"].asInt(), 0) << write_json(b1);
  EXPECT_EQ(b1["launched"].asInt(), 1) << write_json(b1);
  ASSERT_EQ(ids_of(b1).size(), 1u) << write_json(b1);
  const std::string other = ids_of(b1)[0];
  EXPECT_NE(other, kept);
  EXPECT_EQ(record(kept).state, State::kIdle) << "not claimed by acme/other";
  EXPECT_EQ(run_job("other", "other-1"), other);
  EXPECT_EQ(release_for("other", "other-1")["returned"].size(), 1u);
  EXPECT_EQ(record(other).reuse_scope_key, "repository:acme/other");

  // acme/app's next run claims its instance warm (and leaves acme/other's).
  Json::Value a2 = provision_for("app", "app-2");
  EXPECT_EQ(a2["warm"].asInt(), 1) << write_json(a2);
  EXPECT_EQ(a2["launched"].asInt(), 0) << write_json(a2);
  EXPECT_EQ(ids_of(a2), std::vector<std::string>{kept}) << write_json(a2);
  EXPECT_EQ(record(other).state, State::kIdle);
  EXPECT_EQ(run_job("app", "app-2"), kept);
  EXPECT_EQ(release_for("app", "app-2")["returned"].size(), 1u);
  EXPECT_EQ(records().size(), 2u) << "nothing else launched";
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

TEST_F(NeverReuse, ReleaseTerminatesAndTheNextRunLaunches) {
  Json::Value p1 = provision_for("app", "never-1");
  ASSERT_EQ(ids_of(p1).size(), 1u) << write_json(p1);
  const std::string first = ids_of(p1)[0];
  EXPECT_EQ(run_job("app", "never-1"), first);
  Json::Value rel = release_for("app", "never-1");
  ASSERT_EQ(rel["retired"].size(), 1u) << write_json(rel);
  EXPECT_EQ(rel["retired"][0].asString(), first);
  EXPECT_EQ(rel["retired_reasons"][first].asString(), "reuse-never") << write_json(rel);
  EXPECT_EQ(rel["returned"].size(), 0u) << write_json(rel);
  EXPECT_EQ(record(first).state, State::kTerminated);
  EXPECT_TRUE(eventually([&] { return ec2_state(first) == "terminated"; }, 30s)) << ec2_state(first);
  EXPECT_TRUE(queue_bodies().empty()) << "nothing advertised";

  Json::Value p2 = provision_for("app", "never-2");
  EXPECT_EQ(p2["warm"].asInt(), 0) << write_json(p2);
  EXPECT_EQ(p2["launched"].asInt(), 1) << write_json(p2);
  ASSERT_EQ(ids_of(p2).size(), 1u) << write_json(p2);
  const std::string second = ids_of(p2)[0];
  EXPECT_NE(second, first);
  EXPECT_EQ(run_job("app", "never-2"), second);
  Json::Value rel2 = release_for("app", "never-2");
  EXPECT_EQ(rel2["retired_reasons"][second].asString(), "reuse-never") << write_json(rel2);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

}  // namespace
}  // namespace runpool::controller::e2e
