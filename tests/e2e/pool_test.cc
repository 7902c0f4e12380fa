// The warm pool end to end, with real agents: a lost pool message is re-advertised by refresh and
// claimed warm; forged and stale messages are dropped and never win a claim; two provisions racing
// for one pool never both win an instance; a partial spot fleet falls back to on-demand, and the
// usage classes follow the instances into the pool.
#include "tests/e2e/e2e_fixture.h"

namespace runpool::controller::e2e {
namespace {

class Pool : public E2eTest {
 protected:
  // Runs one job per entry of `labels` and checks each ran, successfully, on an instance of
  // `owners[label]`.
  void jobs_run_on_their_label(const std::map<std::string, std::set<std::string>>& owners, int per_label) {
    std::vector<std::pair<std::string, int64_t>> jobs;
    for (const auto& [label, ids] : owners) {
      for (int i = 0; i < per_label; ++i) jobs.push_back({label, queue_job(label, label + "-" + std::to_string(i))});
    }
    for (const auto& [label, id] : jobs) {
      Json::Value j = finished_job(id);
      EXPECT_EQ(j["result"].asString(), "Succeeded") << write_json(j) << consoles();
      EXPECT_EQ(owners.at(label).count(instance_of_runner(j["runnerName"].asString())), 1u)
          << label << "'s job ran on " << j["runnerName"].asString();
    }
  }
  static std::set<std::string> set_of(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }
  static std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  }
  int ec2_calls(const std::string& action) {
    return cloud_.control("GET", "/_control/ec2/calls")["actions"][action].asInt();
  }
};

// One of two idle instances loses its pool message (deleted by hand) and forged messages join the
// queue: refresh re-advertises the lost one and drops the forged; the next provision claims both
// warm, each exactly once, dropping the forged duplicate and stale message it meets first.
TEST_F(Pool, ALostMessageIsReadvertisedAndStaleOnesAreDropped) {
  Json::Value first = provision("msg-1", 2);
  const std::vector<std::string> ids = ids_of(first);
  ASSERT_EQ(ids.size(), 2u);
  release("msg-1");
  const std::string a = ids[0], b = ids[1];
  const int64_t gen = record(a).generation;
  ASSERT_EQ(record(b).generation, gen);

  // Lost: a's message deleted by hand. Forged: a generation a never had, an instance with no
  // record, a malformed body, a duplicate of b's.
  auto left = queue_bodies("small", [&](const std::string& body) { return body == message_for(a, gen); });
  ASSERT_EQ(left, std::vector<std::string>{message_for(b, gen)});
  for (const auto& forged : {message_for(a, gen + 5), message_for("i-0123456789abcdef0", 1),
                             std::string("{\"instance_id\": 12"), message_for(b, gen)}) {
    send_message(forged);
  }
  Json::Value r = refresh();
  std::printf("refresh after a lost and four forged messages: %s\n", write_json(r["summary"]).c_str());
  EXPECT_EQ(r["exit_code"].asInt(), 0) << write_json(r);
  EXPECT_EQ(action(r, "advertise", a)["rule"].asString(), "pool.lost") << write_json(r);
  EXPECT_EQ(r["summary"]["delete-message"].asInt(), 4) << write_json(r);
  EXPECT_EQ(r["summary"]["release-message"].asInt(), 1) << write_json(r);
  const std::vector<std::string> valid = sorted({message_for(a, gen), message_for(b, gen)});
  EXPECT_EQ(queue_bodies(), valid);

  // Forged again, ahead of the valid messages (the queue hands out the oldest first; the valid
  // ones are re-sent, same bodies): a duplicate of a's and a generation b never had. The claim
  // meets them first, drops what no longer matches an idle record, and claims each instance once.
  queue_bodies("small", [](const std::string&) { return true; });
  send_message(message_for(a, gen));
  send_message(message_for(b, gen + 3));
  send_message(message_for(a, gen));
  send_message(message_for(b, gen));
  CtlResult claim = ctl(provision_args("msg-2", 2));
  ASSERT_EQ(claim.exit_code, 0) << describe(claim);
  Json::Value warm = parse_json(claim.out, "provision");
  int dropped = 0;
  for (size_t at = claim.err.find("dropping the pool message"); at != std::string::npos;
       at = claim.err.find("dropping the pool message", at + 1)) {
    ++dropped;
  }
  std::printf("the claim dropped %d stale message(s) on its way\n", dropped);
  EXPECT_EQ(dropped, 2) << claim.err;
  EXPECT_EQ(warm["warm"].asInt(), 2) << write_json(warm);
  EXPECT_EQ(warm["launched"].asInt(), 0) << write_json(warm);
  EXPECT_EQ(set_of(ids_of(warm)), set_of(ids));
  for (const auto& id : ids) EXPECT_EQ(record(id).generation, gen + 1) << id << " claimed exactly once";
  jobs_run_on_their_label({{"msg-2", set_of(ids)}}, 2);
  Json::Value rel = release("msg-2");
  EXPECT_EQ(rel["returned"].size(), 2u) << write_json(rel);

  // Whatever forged message the claim did not meet is now stale; refresh leaves the two valid ones.
  Json::Value after = refresh();
  EXPECT_EQ(after["exit_code"].asInt(), 0) << write_json(after);
  EXPECT_EQ(queue_bodies(), sorted({message_for(a, gen + 1), message_for(b, gen + 1)})) << write_json(after);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

// Three idle instances, two concurrent provisions of two: never both win an instance; together
// they take the three warm and launch the shortfall of one; every job runs on its own label.
TEST_F(Pool, TwoProvisionsRacingForThePoolNeverBothWin) {
  Json::Value seed = provision("race-seed", 3);
  const std::set<std::string> pooled = set_of(ids_of(seed));
  ASSERT_EQ(pooled.size(), 3u);
  release("race-seed");

  auto pa = start_ctl(provision_args("race-a", 2));
  auto pb = start_ctl(provision_args("race-b", 2));
  CtlResult ra = pa->wait(180s), rb = pb->wait(180s);
  ASSERT_EQ(ra.exit_code, 0) << describe(ra) << consoles();
  ASSERT_EQ(rb.exit_code, 0) << describe(rb) << consoles();
  Json::Value ja = parse_json(ra.out, "race-a"), jb = parse_json(rb.out, "race-b");
  std::printf("race-a: %d warm, %d launched in %.1fs; race-b: %d warm, %d launched in %.1fs\n", ja["warm"].asInt(),
              ja["launched"].asInt(), ja["elapsed_ms"].asDouble() / 1000, jb["warm"].asInt(),
              jb["launched"].asInt(), jb["elapsed_ms"].asDouble() / 1000);
  const std::set<std::string> a = set_of(ids_of(ja)), b = set_of(ids_of(jb));
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  std::set<std::string> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::inserter(both, both.begin()));
  EXPECT_TRUE(both.empty()) << "both won " << ::testing::PrintToString(both);
  EXPECT_EQ(ja["warm"].asInt() + jb["warm"].asInt(), 3);
  EXPECT_EQ(ja["launched"].asInt() + jb["launched"].asInt(), 1);
  for (const auto& id : pooled) {
    InstanceRecord r = record(id);
    EXPECT_EQ(r.generation, 2) << id << " claimed exactly once";
    EXPECT_EQ(r.state, State::kRunning) << id;
    EXPECT_EQ(r.label == "race-a" ? a.count(id) : b.count(id), 1u) << id << " is " << r.label;
  }
  EXPECT_TRUE(queue_bodies().empty());
  jobs_run_on_their_label({{"race-a", a}, {"race-b", b}}, 2);
  EXPECT_EQ(release("race-a")["returned"].size(), 2u);
  EXPECT_EQ(release("race-b")["returned"].size(), 2u);
  EXPECT_TRUE(registered_runners().empty()) << ::testing::PrintToString(registered_runners());
}

// Spot capacity for one c7i.large and no m7i.large: a spot provision of three keeps the partial
// fleet and tops it up on demand; the real agents register all three. Released into the pool, the
// usage classes decide the next claim: an on-demand provision takes only the on-demand two.
TEST_F(Pool, APartialSpotFleetFallsBackToOnDemand) {
  capacity("c7i.large", "spot", 1);
  capacity("m7i.large", "spot", false);
  const int fleets_before = ec2_calls("CreateFleet");
  Json::Value p = provision("fleet-1", 3, {"--usage-class", "spot"});
  const int fleets = ec2_calls("CreateFleet") - fleets_before;
  std::map<std::string, std::string> usage;  // instance → usage class, as provision reports it
  for (const auto& i : p["instances"]) usage[i["instance_id"].asString()] = i["usage_class"].asString();
  int spot = 0, on_demand = 0;
  for (const auto& [id, u] : usage) (u == "spot" ? spot : on_demand)++;
  std::printf("spot provision of 3 with spot capacity for 1: %d spot + %d on-demand, %d CreateFleet calls, %.1fs\n",
              spot, on_demand, fleets, p["elapsed_ms"].asDouble() / 1000);
  EXPECT_EQ(spot, 1);
  EXPECT_EQ(on_demand, 2);
  EXPECT_GE(fleets, 2) << "a spot fleet, then an on-demand one";
  for (const auto& [id, u] : usage) {
    EXPECT_EQ(cloud_.control("GET", "/_control/ec2/instances/" + id)["lifecycle"].asString(), u) << id;
    EXPECT_EQ(pool::usage_class_name(record(id).usage_class), u) << id;
    EXPECT_EQ(record(id).state, State::kRunning) << id;
  }
  std::set<std::string> all;
  for (const auto& [id, u] : usage) all.insert(id);
  jobs_run_on_their_label({{"fleet-1", all}}, 3);
  EXPECT_EQ(release("fleet-1")["returned"].size(), 3u);

  cloud_.control("DELETE", "/_control/ec2/capacity");
  Json::Value od = provision("fleet-2", 3, {"--usage-class", "on-demand"});
  EXPECT_EQ(od["warm"].asInt(), 2) << write_json(od);
  EXPECT_EQ(od["launched"].asInt(), 1) << write_json(od);
  for (const auto& i : od["instances"]) {
    EXPECT_EQ(i["usage_class"].asString(), "on-demand") << write_json(i);
    if (i["source"].asString() == "warm") {
      EXPECT_EQ(usage[i["instance_id"].asString()], "on-demand");
    }
  }
  std::string spot_id;
  for (const auto& [id, u] : usage) {
    if (u == "spot") spot_id = id;
  }
  EXPECT_EQ(record(spot_id).state, State::kIdle) << "left in the pool for a spot provision";
  EXPECT_EQ(queue_bodies(), std::vector<std::string>{message_for(spot_id, record(spot_id).generation)});
  EXPECT_EQ(release("fleet-2")["returned"].size(), 3u);
}

}  // namespace
}  // namespace runpool::controller::e2e
