// A job lost to a spot interruption runs again, end to end in step mode: the spot instance gets
// its interruption notice (the EC2 stand-in's IMDS spot/instance-action) mid-job and is then
// terminated, the job is lost (or cancelled by the runner's shutdown); its agent wrote the job in hand on its record, release notes the
// run, and once the run is over one refresh pass asks GitHub to re-run the job (the REST call
// POST …/actions/jobs/{job_id}/rerun on the GitHub stand-in). GitHub queues it again on the label
// its provision chose; refresh's re-run serving provisions for it, and it succeeds. More passes
// re-run nothing: one re-run, never two. In serve mode the same, the run named by the scale set's
// JobStarted message and noted by serve, and the job queued again for the scale set.
#include "tests/e2e/serve_fixture.h"

namespace runpool::controller::e2e {
namespace {

class SpotRerun : public E2eTest {
 protected:
  Json::Value github(const std::string& method, const std::string& path, const Json::Value& body = {}) {
    return cloud_.control(method, "/_control/github" + path, body);
  }
  int64_t job_of_run(int64_t run, const std::string& name, const std::string& label, bool hosted,
                  const std::vector<std::string>& needs, int duration_ms) {
    Json::Value body;
    body["runId"] = Json::Int64(run);
    body["name"] = name;
    body["labels"] = Json::Value(Json::arrayValue);
    body["labels"].append(label);
    body["hosted"] = hosted;
    body["durationMs"] = duration_ms;
    body["run"] = "true";
    body["needs"] = Json::Value(Json::arrayValue);
    for (const auto& n : needs) body["needs"].append(n);
    return github("POST", "/jobs", body)["id"].asInt64();
  }
  void complete_hosted(int64_t job) {
    Json::Value body;
    body["result"] = "Succeeded";
    github("POST", "/jobs/" + std::to_string(job) + "/complete", body);
  }
  static std::map<std::string, std::string> job_env(int64_t run, int attempt, const std::string& job) {
    return {{"GITHUB_ACTIONS", "true"}, {"GITHUB_REPOSITORY", "acme/app"}, {"GITHUB_RUN_ID", std::to_string(run)},
            {"GITHUB_RUN_ATTEMPT", std::to_string(attempt)}, {"GITHUB_JOB", job}};
  }
  // Every execution of the run's job `name`, oldest first, as control shows them.
  std::vector<Json::Value> executions(int64_t run, const std::string& name) {
    std::vector<Json::Value> out;
    const Json::Value view = github("GET", "/runs/" + std::to_string(run));
    for (const auto& j : view["jobs"]) {
      if (j["name"].asString() == name) out.push_back(j);
    }
    return out;
  }
  static Json::Value spot_entry(const Json::Value& refresh, const std::string& id) {
    for (const auto& s : refresh["spot_reruns"]) {
      if (s["instance_id"].asString() == id) return s;
    }
    return Json::Value();
  }
};

TEST_F(SpotRerun, AJobLostToASpotInterruptionRunsAgainOnceAndSucceeds) {
  Json::Value body;
  body["owner"] = "acme";
  body["repo"] = "app";
  const int64_t run = github("POST", "/runs", body)["id"].asInt64();
  const int64_t prov = job_of_run(run, "provision", "ubuntu-latest", true, {}, 200);
  CtlResult p = ctl({"--json", "provision", "--count", "1", "--usage-class", "spot", "--check-run-id", std::to_string(prov)},
                    job_env(run, 1, "provision"));
  ASSERT_EQ(p.exit_code, 0) << describe(p) << consoles();
  const Json::Value pj = parse_json(p.out, "provision");
  const std::string label = pj["label"].asString();
  ASSERT_EQ(ids_of(pj).size(), 1u);
  const std::string id = ids_of(pj)[0];
  complete_hosted(prov);

  // A long build on the spot instance; the release job runs after it whatever its result.
  const int64_t build = job_of_run(run, "build", label, false, {"provision"}, 20'000);
  const int64_t release_job = job_of_run(run, "release", "ubuntu-latest", true, {"provision", "build"}, 200);
  ASSERT_TRUE(eventually([&] { return job(build)["state"].asString() == "running"; }, 60s)) << write_json(job(build));

  // The notice, and two seconds later the instance is gone (AWS gives two minutes).
  Json::Value notice;
  notice["inSeconds"] = 2;
  cloud_.control("POST", "/_control/ec2/instances/" + id + "/spot-interruption", notice);
  ASSERT_TRUE(eventually([&] { return !record(id).spot_job.empty(); }, 10s)) << consoles();
  EXPECT_EQ(record(id).spot_job, "build");
  // Lost with the instance, or cancelled by the runner's shutdown as the instance goes down.
  Json::Value lost = finished_job(build);
  ASSERT_TRUE(lost["state"].asString() == "lost" || lost["result"].asString() == "Canceled") << write_json(lost);

  // The run's release job: release notes the run of the lost job, then the run is over.
  Json::Value rel = release(label, job_env(run, 1, "release"));
  ASSERT_EQ(rel["spot_jobs"].size(), 1u) << write_json(rel);
  EXPECT_EQ(record(id).spot_run, "acme/app " + std::to_string(run));
  complete_hosted(release_job);
  ASSERT_EQ(github("GET", "/runs/" + std::to_string(run))["status"].asString(), "completed");

  // One pass re-runs the job through GitHub's REST call; the label is then served again (by this
  // pass, or the next once the interrupted instance's record no longer holds the label).
  Json::Value first = refresh();
  Json::Value entry = spot_entry(first, id);
  ASSERT_EQ(entry["decision"].asString(), "spot-rerun") << write_json(first);
  EXPECT_EQ(entry["outcome"].asString(), "done") << write_json(first);
  EXPECT_EQ(entry["job_id"].asInt64(), build);
  EXPECT_EQ(record(id).spot_rerun, "rerun " + std::to_string(build));
  std::vector<Json::Value> builds = executions(run, "build");
  ASSERT_EQ(builds.size(), 2u);
  EXPECT_EQ(builds[1]["runAttempt"].asInt(), 2);
  EXPECT_EQ(builds[1]["labels"][0].asString(), label);
  const int64_t again = builds[1]["id"].asInt64();
  bool served = first["reruns"].size() == 1u;
  for (int i = 0; i < 5 && !served; ++i) {
    Json::Value more = refresh();
    EXPECT_TRUE(spot_entry(more, id).isNull()) << "decided once: " << write_json(more);
    served = more["reruns"].size() == 1u && more["reruns"][0]["outcome"].asString() == "done";
  }
  ASSERT_TRUE(served) << consoles();
  Json::Value ok = finished_job(again, 90s);
  EXPECT_EQ(ok["result"].asString(), "Succeeded") << write_json(ok) << consoles();
  EXPECT_NE(instance_of_runner(ok["runnerName"].asString()), id) << "on another instance";

  // The re-run's release; later passes re-run nothing: GitHub saw one re-run, never two.
  release(label, job_env(run, 2, "release"));
  for (const auto& j : executions(run, "release")) {
    if (j["runAttempt"].asInt() == 2) complete_hosted(j["id"].asInt64());
  }
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(spot_entry(refresh(), id).isNull());
  EXPECT_EQ(executions(run, "build").size(), 2u);
  const Json::Value view = github("GET", "/runs/" + std::to_string(run));
  EXPECT_EQ(view["attempt"].asInt(), 2);
  EXPECT_EQ(view["conclusion"].asString(), "success");
}

using SpotRerunServe = ServeTestOf<SpotRerun>;

TEST_F(SpotRerunServe, AScaleSetsJobLostToASpotInterruptionRunsAgainOnceAndSucceeds) {
  auto serve = start_ctl({"serve"});
  Json::Value body;
  body["owner"] = "acme";
  body["repo"] = "app";
  const int64_t run = github("POST", "/runs", body)["id"].asInt64();
  const int64_t build = job_of_run(run, "build", set_name(), false, {}, 20'000);
  ASSERT_TRUE(eventually([&] { return job(build)["state"].asString() == "running"; }, 90s))
      << write_json(job(build)) << consoles();
  const std::string id = instance_of_runner(job(build)["runnerName"].asString());
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(record(id).usage_class, pool::UsageClass::kSpot);

  Json::Value notice;
  notice["inSeconds"] = 2;
  cloud_.control("POST", "/_control/ec2/instances/" + id + "/spot-interruption", notice);
  ASSERT_TRUE(eventually([&] { return record(id).spot_job == "build"; }, 10s)) << consoles();
  ASSERT_TRUE(eventually([&] { return !record(id).spot_run.empty(); }, 10s)) << "noted by serve" << consoles();
  EXPECT_EQ(record(id).spot_run, "acme/app " + std::to_string(run));
  Json::Value lost = finished_job(build);
  ASSERT_TRUE(lost["state"].asString() == "lost" || lost["result"].asString() == "Canceled") << write_json(lost);

  // The scheduled refresh re-runs it once the run is over; serve runs it on another instance.
  Json::Value decided;
  ASSERT_TRUE(eventually(
      [&] {
        decided = spot_entry(refresh(), id);
        return !decided.isNull() && decided["decision"].asString() != "wait";
      },
      60s))
      << write_json(decided);
  ASSERT_EQ(decided["decision"].asString(), "spot-rerun") << write_json(decided);
  EXPECT_EQ(decided["outcome"].asString(), "done") << write_json(decided);
  std::vector<Json::Value> builds = executions(run, "build");
  ASSERT_EQ(builds.size(), 2u);
  Json::Value ok = finished_job(builds[1]["id"].asInt64(), 120s);
  EXPECT_EQ(ok["result"].asString(), "Succeeded") << write_json(ok) << consoles();
  EXPECT_NE(instance_of_runner(ok["runnerName"].asString()), id) << "on another instance";

  for (int i = 0; i < 2; ++i) EXPECT_TRUE(spot_entry(refresh(), id).isNull());
  EXPECT_EQ(executions(run, "build").size(), 2u) << "one re-run, never two";
  EXPECT_EQ(github("GET", "/runs/" + std::to_string(run))["attempt"].asInt(), 2);
  stop(*serve);
}

}  // namespace
}  // namespace runpool::controller::e2e
