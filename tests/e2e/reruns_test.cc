// Re-runs and reusable workflows end to end, with GitHub's semantics replayed on the stand-in's
// workflow runs: "re-run failed jobs" re-queues a failed job in a new attempt on the label its
// provision chose in the first attempt, after release returned that label's runners; one refresh
// pass serves it again, and the re-run's own release returns the runner. A reusable workflow
// called twice in one run (same run, attempt and job name) gets a label per call, from the job's
// check run id, so the calls never share runners.
#include "tests/e2e/e2e_fixture.h"

namespace runpool::controller::e2e {
namespace {

class Reruns : public E2eTest {
 protected:
  Json::Value github(const std::string& method, const std::string& path, const Json::Value& body = {}) {
    return cloud_.control(method, "/_control/github" + path, body);
  }
  int64_t new_run() {
    Json::Value body;
    body["owner"] = "acme";
    body["repo"] = "app";
    return github("POST", "/runs", body)["id"].asInt64();
  }
  // A job of the run: hosted (GitHub's own runners; completed here) or for `label`.
  int64_t run_job(int64_t run, const std::string& name, const std::string& label, bool hosted,
                  const std::vector<std::string>& needs = {}, const std::string& script = "true") {
    Json::Value body;
    body["runId"] = Json::Int64(run);
    body["name"] = name;
    body["labels"] = Json::Value(Json::arrayValue);
    body["labels"].append(label);
    body["hosted"] = hosted;
    body["durationMs"] = 200;
    body["run"] = script;
    body["needs"] = Json::Value(Json::arrayValue);
    for (const auto& n : needs) body["needs"].append(n);
    return github("POST", "/jobs", body)["id"].asInt64();
  }
  void complete_hosted(int64_t job) {
    Json::Value body;
    body["result"] = "Succeeded";
    github("POST", "/jobs/" + std::to_string(job) + "/complete", body);
  }
  // What a workflow step's runpoolctl sees of its job.
  static std::map<std::string, std::string> job_env(int64_t run, int attempt, const std::string& job) {
    return {{"GITHUB_ACTIONS", "true"},
            {"GITHUB_REPOSITORY", "acme/app"},
            {"GITHUB_RUN_ID", std::to_string(run)},
            {"GITHUB_RUN_ATTEMPT", std::to_string(attempt)},
            {"GITHUB_JOB", job}};
  }
  // The provision step as the action runs it: no --label, the job's check run id.
  Json::Value provision_step(int64_t run, int64_t check_run_id) {
    CtlResult r = ctl({"--json", "provision", "--count", "1", "--usage-class", "on-demand", "--check-run-id",
                       std::to_string(check_run_id)},
                      job_env(run, 1, "provision"));
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
    return parse_json(r.out.empty() ? "{}" : r.out, "provision");
  }
  // The newest job of the run named `name`, as control shows it.
  Json::Value latest_job(int64_t run, const std::string& name) {
    Json::Value latest;
    const Json::Value view = github("GET", "/runs/" + std::to_string(run));
    for (const auto& j : view["jobs"]) {
      if (j["name"].asString() == name) latest = j;
    }
    return latest;
  }
};

TEST_F(Reruns, ReRunningAFailedJobGetsItsLabelServedAgainByOneRefresh) {
  const int64_t run = new_run();
  const int64_t prov = run_job(run, "provision", "ubuntu-latest", true);
  Json::Value p = provision_step(run, prov);
  const std::string label = p["label"].asString();
  ASSERT_EQ(label, pool_name_ + "-" + std::to_string(run) + "-1-provision-" + std::to_string(prov));
  complete_hosted(prov);
  // The build fails on the pool's runner; release runs anyway (if: always()).
  const int64_t build = run_job(run, "build", label, false, {"provision"}, "exit 1");
  const int64_t release_job = run_job(run, "release", "ubuntu-latest", true, {"provision", "build"});
  Json::Value b = finished_job(build);
  ASSERT_EQ(b["result"].asString(), "Failed") << write_json(b) << consoles();
  Json::Value rel = release(label, job_env(run, 1, "release"));
  ASSERT_EQ(rel["returned"].size(), 1u) << write_json(rel);
  complete_hosted(release_job);
  ASSERT_EQ(github("GET", "/runs/" + std::to_string(run))["conclusion"].asString(), "failure");

  // Nothing to serve before the re-run.
  Json::Value quiet = refresh();
  EXPECT_EQ(quiet["reruns"].size(), 0u) << write_json(quiet);

  // "Re-run failed jobs": the build again on the first attempt's label, and the release after it.
  github("POST", "/runs/" + std::to_string(run) + "/rerun-failed-jobs");
  Json::Value again = latest_job(run, "build");
  ASSERT_EQ(again["runAttempt"].asInt(), 2);
  ASSERT_EQ(again["labels"][0].asString(), label);
  EXPECT_EQ(again["state"].asString(), "queued");

  Json::Value served = refresh();
  ASSERT_EQ(served["reruns"].size(), 1u) << write_json(served);
  EXPECT_EQ(served["reruns"][0]["action"].asString(), "serve-rerun");
  EXPECT_EQ(served["reruns"][0]["outcome"].asString(), "done") << write_json(served);
  EXPECT_EQ(served["reruns"][0]["attempt"].asInt(), 2);
  Json::Value b2 = finished_job(again["id"].asInt64());
  EXPECT_EQ(b2["result"].asString(), "Failed") << "it ran (and failed again, as its script says)" << write_json(b2);
  EXPECT_FALSE(instance_of_runner(b2["runnerName"].asString()).empty()) << "on one of the pool's runners";

  // The re-run's release returns the runner; a later pass serves nothing more.
  Json::Value rel2 = release(label, job_env(run, 2, "release"));
  EXPECT_EQ(rel2["returned"].size(), 1u) << write_json(rel2);
  complete_hosted(latest_job(run, "release")["id"].asInt64());
  Json::Value after = refresh();
  EXPECT_EQ(after["reruns"].size(), 0u) << write_json(after);
}

TEST_F(Reruns, AReusableWorkflowCalledTwiceGetsALabelPerCall) {
  const int64_t run = new_run();
  // Both calls' provision jobs share run, attempt and GITHUB_JOB; only their check run ids differ.
  const int64_t first = run_job(run, "call-1 / provision", "ubuntu-latest", true);
  const int64_t second = run_job(run, "call-2 / provision", "ubuntu-latest", true);
  Json::Value p1 = provision_step(run, first);
  Json::Value p2 = provision_step(run, second);
  const std::string l1 = p1["label"].asString(), l2 = p2["label"].asString();
  ASSERT_NE(l1, l2);
  ASSERT_EQ(ids_of(p1).size(), 1u);
  ASSERT_EQ(ids_of(p2).size(), 1u);
  EXPECT_NE(ids_of(p1)[0], ids_of(p2)[0]) << "the second call took none of the first's runners";
  EXPECT_EQ(record(ids_of(p1)[0]).label, l1);
  EXPECT_EQ(record(ids_of(p2)[0]).label, l2);
  // Each call's job runs on its own call's runner.
  const int64_t j1 = run_job(run, "call-1 / build", l1, false);
  const int64_t j2 = run_job(run, "call-2 / build", l2, false);
  EXPECT_EQ(instance_of_runner(finished_job(j1)["runnerName"].asString()), ids_of(p1)[0]);
  EXPECT_EQ(instance_of_runner(finished_job(j2)["runnerName"].asString()), ids_of(p2)[0]);
  EXPECT_EQ(release(l1)["returned"].size(), 1u);
  EXPECT_EQ(release(l2)["returned"].size(), 1u);
}

}  // namespace
}  // namespace runpool::controller::e2e
