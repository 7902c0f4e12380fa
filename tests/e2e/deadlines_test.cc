// Expired deadlines in every state, end to end: real agents (whose own deadline backstop waits
// deadline_grace, 10 minutes, so refresh acts first), short controller timeouts, and
// `runpoolctl refresh` deciding. created and claimed instances whose agents never register are
// terminated; a running one past max_runtime is drained first and its job in hand finishes; a
// draining one whose agent never confirms is terminated, and when EC2 fails that termination the
// next pass retries it; an idle one past its TTL is terminated through the conditional
// idle → terminating write, and its pool message is dropped.
#include "tests/e2e/e2e_fixture.h"

namespace runpool::controller::e2e {
namespace {

// runpoolctl compares deadlines on the AWS clock, learnt from Date headers of one-second
// resolution: it may run up to a second behind the test's clock.
constexpr int64_t kClockMargin = 1500;

class Deadlines : public E2eTest {
 protected:
  InstanceRecord only_record_of(const std::string& label) {
    auto found = table_->by_label(label);
    if (found.size() != 1) throw std::runtime_error(label + ": " + std::to_string(found.size()) + " records");
    return record(found[0].instance_id);
  }
  static void expect_ok(CtlResult r, const std::string& what) { ASSERT_EQ(r.exit_code, 0) << what << describe(r); }
  void expect_action(const Json::Value& pass, const std::string& kind, const std::string& id, const std::string& rule,
                     const std::string& outcome = "done") {
    Json::Value a = action(pass, kind, id);
    EXPECT_EQ(a["rule"].asString(), rule) << kind << " " << id << ":\n" << write_json(pass);
    EXPECT_EQ(a["outcome"].asString(), outcome) << kind << " " << id << ":\n" << write_json(pass);
  }
  // One line per action: "terminate deadline.idle done i-…".
  static void print_pass(const char* title, const Json::Value& pass) {
    std::printf("%s: exit %d\n", title, pass["exit_code"].asInt());
    for (const auto& a : pass["actions"]) {
      std::printf("  %s %s %s %s\n", a["action"].asCString(), a["rule"].asCString(), a["outcome"].asCString(),
                  (a.isMember("runner_name") ? a["runner_name"] : a["instance_id"]).asCString());
    }
  }
  bool gone_in_ec2(const std::string& id) {
    std::string s = ec2_state(id);
    return s == "shutting-down" || s == "terminated";
  }
};

TEST_F(Deadlines, ExpiredInEveryStateRefreshRetiresOrDrains) {
  // Five assignments at once, each its own provision: running (max_runtime 6 s), draining,
  // idle, a seed for the pool, and one whose agent never registers (boot_timeout 4 s). running
  // is of the large class: the never-registering provisions' replacements (small) would
  // otherwise wait for its drain and take it.
  auto running_p =
      start_ctl(provision_args("dl-running", 1, {"--resource-class", "large"}), {{"RUNPOOL_MAX_RUNTIME", "6s"}});
  auto draining_p = start_ctl(provision_args("dl-draining", 1));
  auto idle_p = start_ctl(provision_args("dl-idle", 1));
  auto seed_p = start_ctl(provision_args("dl-seed", 1));
  const std::string created_label = std::string("dl-created-") + kNeverRegisters;
  auto created_p = start_ctl(provision_args(created_label, 1, {"--timeout", "120s"}), {{"RUNPOOL_BOOT_TIMEOUT", "4s"}});
  expect_ok(running_p->wait(180s), "dl-running");
  expect_ok(draining_p->wait(180s), "dl-draining");
  expect_ok(idle_p->wait(180s), "dl-idle");
  expect_ok(seed_p->wait(180s), "dl-seed");
  const std::string running = only_record_of("dl-running").instance_id;
  const std::string draining = only_record_of("dl-draining").instance_id;
  const std::string idle = only_record_of("dl-idle").instance_id;
  const std::string seed = only_record_of("dl-seed").instance_id;
  ASSERT_TRUE(eventually([&] { return table_->by_label(created_label).size() == 1; }, 30s));
  const std::string created = only_record_of(created_label).instance_id;

  // The job in hand when max_runtime passes.
  int64_t long_job = queue_job("dl-running", "outlives-max-runtime", "true", 14'000);
  // idle with a 5 s TTL; the seed idle for the default hour.
  auto idle_r = start_ctl({"--json", "release", "--wait", "--label", "dl-idle"}, {{"RUNPOOL_IDLE_TTL", "5s"}});
  auto seed_r = start_ctl({"--json", "release", "--wait", "--label", "dl-seed"});
  expect_ok(idle_r->wait(60s), "release dl-idle");
  expect_ok(seed_r->wait(60s), "release dl-seed");
  // claimed: the seed, claimed for a label its agent never registers (registration_timeout 4 s).
  // The idle instance's message is not claimable: it has less than claim_min_remaining left.
  const std::string claimed_label = std::string("dl-claimed-") + kNeverRegisters;
  auto claimed_p = start_ctl(provision_args(claimed_label, 1, {"--timeout", "120s"}),
                             {{"RUNPOOL_REGISTRATION_TIMEOUT", "4s"}});
  ASSERT_TRUE(eventually([&] { return record(seed).state == State::kClaimed; }, 30s));
  const std::string claimed = seed;
  EXPECT_EQ(record(claimed).label, claimed_label);
  // draining: its agent hangs (SIGSTOP), so it can never confirm; a release that waits longer
  // than the drain deadline (12 s), and than the provisions above take to give up (their 120 s
  // timeouts, then their clean-up), sets it draining.
  auto agent = pids_matching(draining, "runpool-agent --config");
  ASSERT_EQ(agent.size(), 1u) << console(draining);
  ASSERT_EQ(kill(agent[0], SIGSTOP), 0);
  auto draining_r = start_ctl({"--json", "release", "--wait", "--label", "dl-draining", "--timeout", "300s"},
                              {{"RUNPOOL_DRAIN_TIMEOUT", "12s"}});
  ASSERT_TRUE(eventually([&] { return record(draining).state == State::kDraining; }, 30s));

  // Pass 1, once the created, claimed, running and idle deadlines have passed (not draining's).
  int64_t latest = 0;
  for (const auto& id : {created, claimed, running, idle}) latest = std::max(latest, record(id).deadline_ms);
  while (now_ms() < latest + kClockMargin) std::this_thread::sleep_for(100ms);
  ASSERT_LT(now_ms(), record(draining).deadline_ms - 1000) << "the test's timing assumption";
  ASSERT_EQ(job(long_job)["state"].asString(), "running") << write_json(job(long_job));
  Json::Value pass1 = refresh();
  print_pass("pass 1 (deadlines of created, claimed, running, idle passed)", pass1);
  EXPECT_EQ(pass1["exit_code"].asInt(), 0) << write_json(pass1);
  expect_action(pass1, "terminate", created, "deadline.created");
  expect_action(pass1, "terminate", claimed, "deadline.claimed");
  expect_action(pass1, "terminate", idle, "deadline.idle");
  expect_action(pass1, "drain", running, "deadline.running");
  EXPECT_TRUE(action(pass1, "terminate", draining).isNull()) << "within its drain deadline";
  for (const auto& id : {created, claimed, idle}) {
    EXPECT_EQ(record(id).state, State::kTerminated) << id;
    EXPECT_TRUE(gone_in_ec2(id)) << id << " " << ec2_state(id);
  }
  EXPECT_EQ(record(running).state, State::kDraining);
  EXPECT_EQ(ec2_state(running), "running");
  // The provisions waiting on the never-registering instances give up: each lets its retired
  // instance go and replaces it once, and the replacement (whose agent never registers either)
  // keeps it waiting until its --timeout.
  CtlResult created_res = created_p->wait(180s), claimed_res = claimed_p->wait(180s);
  EXPECT_EQ(created_res.exit_code, 1) << describe(created_res);
  EXPECT_EQ(claimed_res.exit_code, 1) << describe(claimed_res);

  // running: the drain lets the job in hand finish, then the agent confirms.
  Json::Value finished = finished_job(long_job, 30s);
  EXPECT_EQ(finished["result"].asString(), "Succeeded") << write_json(finished) << console(running);
  EXPECT_EQ(finished["dispatches"].size(), 1u);
  ASSERT_TRUE(eventually([&] { return pool::agent_reported(record(running), pool::AgentSignal::kDrained); }, 30s))
      << console(running);

  // Pass 2, past the draining deadline, with EC2 failing: the draining instance is marked
  // terminating but its TerminateInstances fails; the drained one goes back to the pool; the
  // idle instance's stale pool message is dropped.
  while (now_ms() < record(draining).deadline_ms + kClockMargin) std::this_thread::sleep_for(100ms);
  Json::Value fault;
  fault["service"] = "ec2";
  fault["errorRate"] = 1.0;
  cloud_.control("POST", "/_control/faults", fault);
  Json::Value pass2 = refresh({{"RUNPOOL_AWS_MAX_ATTEMPTS", "2"}});
  cloud_.clear_faults();
  print_pass("pass 2 (draining deadline passed, EC2 failing)", pass2);
  EXPECT_EQ(pass2["exit_code"].asInt(), 1) << write_json(pass2);
  expect_action(pass2, "terminate", draining, "deadline.draining", "failed");
  expect_action(pass2, "return-to-pool", running, "handshake.drained");
  EXPECT_EQ(record(draining).state, State::kTerminating);
  EXPECT_EQ(ec2_state(draining), "running");

  // Pass 3, EC2 back: the termination is retried; the hung agent's runner, never deregistered, is
  // removed as a ghost.
  Json::Value pass3 = refresh();
  print_pass("pass 3 (EC2 back)", pass3);
  EXPECT_EQ(pass3["exit_code"].asInt(), 0) << write_json(pass3);
  expect_action(pass3, "retry-terminate", draining, "terminating.retry");
  EXPECT_EQ(record(draining).state, State::kTerminated);
  EXPECT_TRUE(gone_in_ec2(draining)) << ec2_state(draining);
  CtlResult draining_res = draining_r->wait(60s);
  EXPECT_EQ(draining_res.exit_code, 0) << describe(draining_res);
  EXPECT_EQ(parse_json(draining_res.out, "release")["gone"].size(), 1u) << draining_res.out;

  // What is left: the drained instance, idle and advertised once (the retired idle instance's
  // message was dropped — by the claim above, which found it too short-lived, or by pass 2's
  // sweep, as stale); no runner registered.
  EXPECT_EQ(record(running).state, State::kIdle);
  EXPECT_EQ(queue_bodies("large"), std::vector<std::string>{message_for(running, record(running).generation)});
  EXPECT_TRUE(queue_bodies().empty()) << ::testing::PrintToString(queue_bodies());
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
  for (const auto& r : records()) {
    if (r.instance_id != running) {
      EXPECT_EQ(r.state, State::kTerminated) << r.instance_id;
    }
  }
}

// keep_failed: an instance whose agent failed to register is kept running for inspection, not
// terminated, by provision (which replaces it) and left alone by refresh while kept; the first
// refresh after the keep terminates it.
TEST_F(Deadlines, AFailedInstanceIsKeptForInspectionThenTerminated) {
  const std::map<std::string, std::string> keep{{"RUNPOOL_KEEP_FAILED", "6s"}};
  const std::string label = std::string("dl-kept-") + kFailsRegistration;
  CtlResult p = ctl(provision_args(label, 1, {"--timeout", "90s"}), keep);
  ASSERT_EQ(p.exit_code, 1) << describe(p) << consoles();
  auto kept = table_->by_label(label);
  ASSERT_EQ(kept.size(), 2u) << "the first and its replacement, both failed:\n" << describe(p);
  for (const auto& k : kept) {
    InstanceRecord r = record(k.instance_id);
    EXPECT_GT(r.kept_until_ms, 0) << r.instance_id;
    EXPECT_EQ(ec2_state(r.instance_id), "running") << r.instance_id << " is kept, not terminated";
    EXPECT_TRUE(r.reg_token.empty()) << r.instance_id;
  }
  EXPECT_NE(p.err.find("kept for inspection until"), std::string::npos) << p.err;

  Json::Value during = refresh(keep);
  for (const auto& k : kept) {
    EXPECT_TRUE(action(during, "terminate", k.instance_id).isNull()) << write_json(during);
    EXPECT_EQ(ec2_state(k.instance_id), "running");
  }

  int64_t until = 0;
  for (const auto& k : kept) until = std::max(until, record(k.instance_id).kept_until_ms);
  ASSERT_TRUE(eventually([&] { return now_ms() > until + kClockMargin; }, 30s));
  Json::Value after = refresh();  // keep_failed off by now: a kept instance still ends when its keep does
  print_pass("after the keep", after);
  for (const auto& k : kept) {
    expect_action(after, "terminate", k.instance_id, "keep_failed.over");
    EXPECT_TRUE(gone_in_ec2(k.instance_id)) << ec2_state(k.instance_id);
  }
}

}  // namespace
}  // namespace runpool::controller::e2e
