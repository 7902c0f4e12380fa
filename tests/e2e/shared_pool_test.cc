// Shared pools end to end: `runpoolctl scale-up` launches runners registered with the shared
// labels, the real agents keep them registered between jobs, and `scale-down` shrinks the pool to
// its idle quota — draining idle runners only, never one with a job in hand, terminating an
// instance only once its agent reported `drained` — with a bounded number of GitHub calls per pass.
// The window tests freeze a Listener with a job dispatched to it and not yet acknowledged (nobody
// reports busy) to land scale-down's drain inside that window every time.
#include "tests/e2e/shared_pool_fixture.h"

namespace runpool::controller::e2e {
namespace {

// Four shared runners, two of them busy with long jobs; scale-down to one idle runner drains and
// terminates exactly one idle runner and keeps the busy two and one idle; the jobs succeed.
TEST_F(SharedPool, ShrinksToTheQuotaWithoutKillingAJob) {
  const std::vector<std::string> ids = scale_up(4);
  ASSERT_EQ(ids.size(), 4u);
  std::map<std::string, std::string> runner_of;  // instance → runner name
  for (const auto& id : ids) {
    InstanceRecord r = record(id);
    EXPECT_EQ(r.state, State::kRunning) << id;
    EXPECT_TRUE(r.shared) << id;
    EXPECT_EQ(r.label, kLabel) << id;
    runner_of[id] = r.runner_name;
    Json::Value gh = github_runner(r.runner_name);
    ASSERT_FALSE(gh.isNull()) << r.runner_name << " is not registered on GitHub";
    EXPECT_EQ(gh["id"].asInt64(), r.runner_id) << id;
    std::set<std::string> labels;
    for (const auto& l : gh["labels"]) labels.insert(l["name"].asString());
    EXPECT_EQ(labels, kLabels) << r.runner_name;
  }
  EXPECT_EQ(registered_runners().size(), 4u);

  // Two long jobs land on two runners; their agents report busy.
  std::vector<int64_t> jobs;
  for (int i = 0; i < 2; ++i) jobs.push_back(queue_shared_job("long-" + std::to_string(i), 20000)["id"].asInt64());
  std::set<std::string> busy;
  ASSERT_TRUE(eventually(
      [&] {
        busy.clear();
        for (int64_t j : jobs) {
          Json::Value v = job(j);
          std::string id = instance_of_runner(v["runnerName"].asString());
          if (v["state"].asString() == "running" && !id.empty() && record(id).busy) busy.insert(id);
        }
        return busy.size() == 2;
      },
      30s))
      << consoles();

  // Dry runs: with the default minimum running time every runner is too young to go; with none,
  // the plan names the busy, the kept idle and the one to drain. Nothing changes.
  Json::Value young = scale_down({"--dry-run", "--idle", "1"});
  ASSERT_EQ(young["exit_code"].asInt(), 0) << write_json(young);
  for (const auto& id : ids) EXPECT_EQ(decision(young, id)["rule"].asString(), "min-running-time") << id;
  set_config("min_running_time_linux", "0s");
  std::map<std::string, InstanceRecord> before;
  for (const auto& id : ids) before[id] = record(id);
  cloud_.control("DELETE", "/_control/github/calls");
  Json::Value dry = scale_down({"--dry-run", "--idle", "1"});
  std::printf("dry run: %s\n", write_json(dry["summary"]).c_str());
  ASSERT_EQ(dry["exit_code"].asInt(), 0) << write_json(dry);
  EXPECT_TRUE(dry["dry_run"].asBool());
  std::map<std::string, int> rules;
  for (const auto& id : ids) {
    Json::Value d = decision(dry, id);
    EXPECT_EQ(d["outcome"].asString(), "planned") << write_json(d);
    ++rules[d["rule"].asString()];
    if (busy.count(id)) {
      EXPECT_TRUE(d["rule"].asString() == "busy.agent" || d["rule"].asString() == "busy.github") << write_json(d);
    }
  }
  EXPECT_EQ(rules["idle.quota"], 1) << write_json(dry);
  EXPECT_EQ(rules["idle.over-quota"], 1) << write_json(dry);
  EXPECT_EQ(dry["summary"]["drain"].asInt(), 1) << write_json(dry);
  EXPECT_EQ(rest_calls()["POST /repos/{owner}/{repo}/actions/runners/remove-token"], 0);
  for (const auto& id : ids) {
    InstanceRecord r = record(id);
    EXPECT_EQ(r.state, before[id].state) << id;
    EXPECT_EQ(r.generation, before[id].generation) << id;
    EXPECT_EQ(r.state_since_ms, before[id].state_since_ms) << id;
    EXPECT_EQ(r.orphan_since_ms, 0) << id;
    EXPECT_EQ(ec2_state(id), "running") << id;
  }
  EXPECT_EQ(registered_runners().size(), 4u);

  // The pass.
  cloud_.control("DELETE", "/_control/github/calls");
  Json::Value pass = scale_down({"--idle", "1"});
  std::map<std::string, int> calls = rest_calls();
  std::printf("scale-down --idle 1: %s, GitHub calls %s\n", write_json(pass["summary"]).c_str(),
              write_json(pass["github_calls"]).c_str());
  ASSERT_EQ(pass["exit_code"].asInt(), 0) << write_json(pass) << consoles();
  std::string drained;
  for (const auto& id : ids) {
    Json::Value d = decision(pass, id);
    if (d["decision"].asString() == "drain") {
      EXPECT_TRUE(drained.empty()) << "a second drain: " << write_json(d);
      drained = id;
      EXPECT_EQ(d["outcome"].asString(), "done") << write_json(d);
      EXPECT_EQ(d["detail"].asString(), "drained and deregistered") << write_json(d);
    } else {
      EXPECT_EQ(d["decision"].asString(), "keep") << write_json(d);
    }
  }
  ASSERT_FALSE(drained.empty()) << write_json(pass);
  EXPECT_EQ(busy.count(drained), 0u) << "a busy runner was drained";
  // The pass's list, and the drained runner looked up by its name before its instance goes (the
  // agent's drained is its word: GitHub must no longer list the runner).
  EXPECT_EQ(calls["GET /repos/{owner}/{repo}/actions/runners"], 2);
  EXPECT_EQ(calls["GET /repos/{owner}/{repo}/actions/runners/{runner_id}"], 1);
  EXPECT_EQ(calls["POST /repos/{owner}/{repo}/actions/runners/remove-token"], 1);
  EXPECT_EQ(calls["DELETE /repos/{owner}/{repo}/actions/runners/{runner_id}"], 0);

  EXPECT_EQ(record(drained).state, State::kTerminating);
  EXPECT_TRUE(eventually([&] { return ec2_state(drained) == "terminated"; }, 60s)) << ec2_state(drained);
  for (int64_t j : jobs) {
    Json::Value v = finished_job(j, 60s);
    EXPECT_EQ(v["result"].asString(), "Succeeded") << write_json(v) << consoles();
    EXPECT_EQ(v["dispatches"].size(), 1u) << write_json(v);
  }
  std::set<std::string> kept_runners, expected;
  for (const auto& id : ids) {
    if (id == drained) continue;
    InstanceRecord r = record(id);
    EXPECT_EQ(r.state, State::kRunning) << id;
    EXPECT_EQ(r.generation, before[id].generation) << id;
    EXPECT_EQ(ec2_state(id), "running") << id;
    expected.insert(runner_of[id]);
  }
  for (const auto& name : registered_runners()) kept_runners.insert(name);
  EXPECT_EQ(kept_runners, expected) << "the drained runner stays registered, or a kept one is gone";
  EXPECT_TRUE(github_runner(runner_of[drained]).isNull());
}


// Drain-capable runner: the job handed to its poll before the drain runs to success, then the
// runner exits on `.drain`, is deregistered, and only then is the instance terminated.
TEST_F(SharedPoolWindow, AJobDispatchedAtTheDrainRunsOnADrainCapableRunner) {
  WindowRun w = run_window(false);
  ASSERT_TRUE(w.hit) << "the drain missed the window";
  ASSERT_EQ(w.report["exit_code"].asInt(), 0) << write_json(w.report) << consoles();
  Json::Value d = decision(w.report, w.id);
  EXPECT_EQ(d["decision"].asString(), "drain") << write_json(d);
  EXPECT_EQ(d["rule"].asString(), "idle.over-quota") << write_json(d);
  EXPECT_EQ(d["outcome"].asString(), "done") << write_json(d);
  EXPECT_EQ(d["detail"].asString(), "drained and deregistered") << write_json(d);
  Json::Value fate = finished_job(w.job);
  std::printf("job dispatched %lld ms before the drain was seen, acquired %lld ms after; %s on %s\n",
              static_cast<long long>(w.drain_seen_ms - fate["dispatches"][0]["at"].asInt64()),
              static_cast<long long>(fate["dispatches"][0]["acquiredAt"].asInt64() - w.drain_seen_ms),
              fate["result"].asString().c_str(), fate["runnerName"].asString().c_str());
  EXPECT_EQ(fate["result"].asString(), "Succeeded") << write_json(fate) << consoles();
  EXPECT_EQ(fate["runnerName"].asString(), w.runner) << write_json(fate);
  EXPECT_EQ(fate["dispatches"].size(), 1u) << write_json(fate);
  EXPECT_LT(fate["dispatches"][0]["at"].asInt64(), w.drain_seen_ms) << "dispatched before the drain";
  EXPECT_GT(fate["dispatches"][0]["acquiredAt"].asInt64(), w.drain_seen_ms) << "acquired after the drain";
  expect_guarantees(w, fate);
}

// Stock runner, the Listener let go at the drain write: the agent's stock drain (wait idle, DELETE,
// stop) races the Listener's acknowledge and acquire.
TEST_F(SharedPoolStock, AJobDispatchedAtTheDrainOnAStockRunner) {
  WindowRun w = run_window(false);
  ASSERT_TRUE(w.hit) << "the drain missed the window";
  EXPECT_EQ(w.report["exit_code"].asInt(), 0) << write_json(w.report) << consoles();
  Json::Value fate = report_fate(w, "at the drain write");
  expect_guarantees(w, fate);
}

// Stock runner, the Listener let go only after the agent's DELETE: the documented window of the
// stock drain (docs/agent.md, known limits) — the job is the broker's until its lock expires.
TEST_F(SharedPoolStock, AJobDispatchedBeforeTheStockDeregistration) {
  WindowRun w = run_window(true);
  ASSERT_TRUE(w.hit) << "the drain missed the window";
  EXPECT_EQ(w.report["exit_code"].asInt(), 0) << write_json(w.report) << consoles();
  Json::Value fate = report_fate(w, "before the stock DELETE");
  expect_guarantees(w, fate);
}

// One pass over N idle shared runners with a quota of k: one runner list per owner (its pages), and
// one list by name per drained runner (GitHub must no longer list it before its instance goes), one
// GET per removal candidate (the busy re-check), one remove token, no DELETE (no orphan); the
// report's github_calls says the same.
TEST_F(SharedPool, OnePassMakesBoundedGithubCalls) {
  constexpr int kN = 3, kK = 1;
  const std::vector<std::string> ids = scale_up(kN);
  ASSERT_EQ(ids.size(), static_cast<size_t>(kN));
  set_config("min_running_time_linux", "0s");
  let_age(ids);
  const int pages = runner_list_pages();
  cloud_.control("DELETE", "/_control/github/calls");
  Json::Value pass = scale_down({"--idle", std::to_string(kK)});
  int total = 0;
  std::map<std::string, int> calls = rest_calls(&total);
  std::printf("%d runners, quota %d: %s; stand-in saw %s\n", kN, kK, write_json(pass["github_calls"]).c_str(),
              ::testing::PrintToString(calls).c_str());
  ASSERT_EQ(pass["exit_code"].asInt(), 0) << write_json(pass) << consoles();
  EXPECT_EQ(pass["summary"]["drain"].asInt(), kN - kK) << write_json(pass);
  int terminated = 0;
  for (const auto& d : pass["decisions"]) terminated += d["detail"].asString() == "drained and deregistered";
  EXPECT_EQ(terminated, kN - kK) << write_json(pass);

  const int lists = calls["GET /repos/{owner}/{repo}/actions/runners"];
  const int gets = calls["GET /repos/{owner}/{repo}/actions/runners/{runner_id}"];
  const int tokens = calls["POST /repos/{owner}/{repo}/actions/runners/remove-token"];
  const int deletes = calls["DELETE /repos/{owner}/{repo}/actions/runners/{runner_id}"];
  // Each drained runner's labels removed at the drain request, so nothing new is routed to it.
  const int unlabels = calls["DELETE /repos/{owner}/{repo}/actions/runners/{runner_id}/labels"];
  EXPECT_EQ(lists, pages + (kN - kK));
  EXPECT_EQ(gets, kN - kK);
  EXPECT_LE(tokens, 1);
  EXPECT_EQ(deletes, 0);
  EXPECT_EQ(unlabels, kN - kK);
  EXPECT_EQ(total, lists + gets + tokens + deletes + unlabels) << "a REST call outside the budget";
  const Json::Value& reported = pass["github_calls"];
  EXPECT_EQ(reported["list_runners"].asInt(), 1 + (kN - kK)) << "one list per owner, one by name per drained runner";
  EXPECT_EQ(reported["get_runner"].asInt(), gets);
  EXPECT_EQ(reported["remove_token"].asInt(), tokens);
  EXPECT_EQ(reported["delete_runner"].asInt(), deletes);
  EXPECT_EQ(registered_runners().size(), static_cast<size_t>(kK));
}

}  // namespace
}  // namespace runpool::controller::e2e
