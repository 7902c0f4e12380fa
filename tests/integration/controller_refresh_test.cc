// `runpoolctl refresh`, the real binary, against the local cloud: records written with the real
// lifecycle steps, instances launched through the EC2 stand-in with the pool's tags, runners
// registered on the GitHub stand-in, pool messages in local SQS. Each test has its own pool (one
// shared table), so the binary's scan and tag filters keep the tests apart.
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include <gtest/gtest.h>

#include "common/aws/dynamodb.h"
#include "common/aws/ec2.h"
#include "common/aws/sqs.h"
#include "common/github/github_client.h"
#include "common/json.h"
#include "common/pool/dynamo_state_table.h"
#include "common/pool/pool_message.h"
#include "common/pool/runner_name.h"
#include "common/pool/transitions.h"
#include "tests/support/local_cloud.h"

// The runpoolctl binary under test (tests/CMakeLists.txt passes its path once the target exists).
#ifndef RUNPOOL_CTL_BINARY
#define RUNPOOL_CTL_BINARY ""
#endif
#include "tests/support/runpoolctl_harness.h"

namespace runpool {
namespace {

using namespace std::chrono_literals;
using pool::AgentSignal;
using pool::InstanceRecord;
using pool::State;
using testing::LocalCloud;

constexpr const char* kTable = "refresh-it";
constexpr const char* kOwner = "refresh-org";
constexpr const char* kRepo = "refresh-org/refresh-repo";
constexpr const char* kPat = "ghp_refreshIntegrationToken0001";
constexpr const char* kClass = "small";
const pool::Timeouts kT;  // the binary's defaults (boot 10m, idle 1h, max runtime 6h, …)

int64_t now_ms() { return to_epoch_ms(system_clock().now()); }

struct CtlResult {
  int exit_code = -1;
  std::string out, err;
  Json::Value json;
};

// The process-wide AWS clients the test sets things up with (controller credentials).
struct Clients {
  explicit Clients(LocalCloud& cloud)
      : creds(cloud.controller_credentials()),
        ddb_caller(http_ddb, creds, system_clock(), {"dynamodb", cloud.dynamodb(), cloud.region()}),
        sqs_caller(http_sqs, creds, system_clock(), {"sqs", cloud.sqs(), cloud.region()}),
        ec2_caller(http_ec2, creds, system_clock(), {"ec2", cloud.ec2(), cloud.region()}),
        db(ddb_caller), sqs(sqs_caller), ec2(ec2_caller), table(db, kTable, cloud.instance_role_id()),
        gh_caller(gh_http, system_clock(), gh_settings(cloud)), pat(Secret(kPat)),
        github(gh_caller, pat, github::OwnerScope::parse(kRepo)) {}
  static github::GithubSettings gh_settings(LocalCloud& cloud) {
    github::GithubSettings s;
    s.api_base = cloud.github();
    s.user_agent = "runpool-refresh-test";
    s.timeout = 10s;
    return s;
  }
  CurlHttpClient http_ddb, http_sqs, http_ec2, gh_http;
  aws::StaticCredentialsProvider creds;
  aws::AwsCaller ddb_caller, sqs_caller, ec2_caller;
  aws::DynamoDbClient db;
  aws::SqsClient sqs;
  aws::Ec2Client ec2;
  pool::DynamoStateTable table;
  github::GithubCaller gh_caller;
  github::StaticTokenSource pat;
  github::GithubClient github;
};

class ControllerRefresh : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    LocalCloud& cloud = LocalCloud::shared();
    c_ = new Clients(cloud);
    c_->db.create_table(pool::DynamoStateTable::create_table_request(kTable));
    c_->db.wait_until_active(kTable, 20s);
    Json::Value pat;
    pat["token"] = kPat;
    pat["owners"].append(kOwner);
    cloud.control("POST", "/_control/github/pats", pat);
  }
  static void TearDownTestSuite() {
    delete c_;
    c_ = nullptr;
  }

  void SetUp() override {
    if (std::string(RUNPOOL_CTL_BINARY).empty()) GTEST_SKIP() << "runpoolctl is not built in this tree";
    // One pool per test: "rf-<test name>", lower-cased, within the label alphabet.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    pool_ = "rf-";
    for (char ch : name) pool_ += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (pool_.size() > 40) pool_.resize(40);
    queue_url_ = c_->sqs.create_queue(pool_ + "-" + kClass);
    dir_ = controller::testing::make_temp_dir(pool_);  // runpoolctl's stdout and stderr
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    cloud().clear_faults();
    if (!launched_.empty()) {
      try {
        c_->ec2.terminate_instances(launched_);
      } catch (const std::exception&) {
        // Already gone.
      }
    }
    for (const auto& r : c_->github.list_runners()) {
      if (r.name.rfind(pool_ + "-", 0) == 0) c_->github.delete_runner(r.id);
    }
  }

  static LocalCloud& cloud() { return LocalCloud::shared(); }

  // ---- running the binary

  CtlResult refresh(std::vector<std::string> args = {}, const std::map<std::string, std::string>& env = {}) {
    args.insert(args.begin(), {"--json", "refresh"});  // --json is a global flag
    return run_ctl(args, env);
  }

  CtlResult run_ctl(const std::vector<std::string>& args, const std::map<std::string, std::string>& extra) {
    LocalCloud& lc = cloud();
    auto creds = lc.controller_credentials();
    std::map<std::string, std::string> env = {
        {"PATH", "/usr/local/bin:/usr/bin:/bin"},
        {"HOME", "/tmp"},
        {"AWS_ACCESS_KEY_ID", creds.access_key_id},
        {"AWS_SECRET_ACCESS_KEY", creds.secret_access_key.reveal()},
        {"AWS_EC2_METADATA_DISABLED", "true"},
        {"RUNPOOL_TABLE", kTable},
        {"RUNPOOL_POOL", pool_},
        {"RUNPOOL_INSTANCE_ROLE_ID", lc.instance_role_id()},
        {"RUNPOOL_REGION", lc.region()},
        {"RUNPOOL_ENDPOINT_DYNAMODB", lc.dynamodb()},
        {"RUNPOOL_ENDPOINT_SQS", lc.sqs()},
        {"RUNPOOL_ENDPOINT_EC2", lc.ec2()},
        {"RUNPOOL_GITHUB_API_URL", lc.github()},
        {"RUNPOOL_GITHUB_OWNER", kRepo},
        {"RUNPOOL_GITHUB_TOKEN", kPat},
        {"RUNPOOL_RESOURCE_CLASSES", std::string(kClass) + "=t3.micro"},
        {"RUNPOOL_AWS_TIMEOUT", "10s"},
    };
    for (const auto& [k, v] : extra) env[k] = v;
    controller::testing::CtlResult done = controller::testing::CtlProcess(args, env, dir_).wait(120s);
    if (done.exit_code == -1) ADD_FAILURE() << "runpoolctl was killed or did not finish within 120 s";
    CtlResult r{done.exit_code, std::move(done.out), std::move(done.err), {}};
    if (auto doc = try_parse_json(r.out)) r.json = *doc;
    return r;
  }

  // ---- setting things up

  // A running instance tagged for this pool (and table).
  std::string launch() {
    aws::RunInstancesRequest r;
    r.image_id = "ami-12345678";
    r.instance_type = "t3.micro";
    r.tag_specifications = {{"instance", {{"runpool:pool", pool_}, {"runpool:table", kTable}}}};
    r.instance_initiated_shutdown_behavior = "terminate";
    auto result = c_->ec2.run_instances(r);
    std::string id = result.instances.at(0).instance_id;
    launched_.push_back(id);
    return id;
  }

  std::string ec2_state(const std::string& id) {
    aws::DescribeInstancesRequest d;
    d.filters = {{"instance-id", {id}}};
    auto found = c_->ec2.describe_instances(d);
    return found.empty() ? "<missing>" : found[0].state.name;
  }

  bool alive(const std::string& id) {
    std::string s = ec2_state(id);
    return s == "pending" || s == "running";
  }

  bool stopping_or_gone(const std::string& id) {
    std::string s = ec2_state(id);
    return s == "shutting-down" || s == "terminated";
  }

  void step(const std::string& id, const pool::Step& s) {
    ASSERT_TRUE(c_->table.transition(id, s.expect, s.change)) << id;
  }
  void agent(const std::string& id, AgentSignal signal, int64_t heartbeat_ms) {
    InstanceRecord r = record(id);
    ASSERT_TRUE(c_->table.report(id, {.heartbeat_ms = heartbeat_ms, .signal = signal, .generation = r.generation}));
  }
  InstanceRecord record(const std::string& id) {
    auto r = c_->table.get(id);
    if (!r) throw std::runtime_error("no record for " + id);
    return *r;
  }

  // A record for `id` in `state`, walked there through the real steps with times `age_ms` in the
  // past (so its deadline has passed when age_ms exceeds the state's timeout).
  InstanceRecord put(const std::string& id, State state, int64_t age_ms) {
    const int64_t t0 = now_ms() - age_ms;
    InstanceRecord launched = pool::launched_record(id, pool_, "run-1", kClass, pool::UsageClass::kOnDemand,
                                                    "t3.micro", Secret("reg-token"), "http://x/o/r", t0, kT);
    pool::give_seal_keys(launched, pool::make_seal_keys());  // as a launch does
    EXPECT_TRUE(c_->table.create(launched));
    if (state == State::kCreated) return record(id);
    if (state == State::kTerminating) {
      step(id, pool::begin_terminate(record(id), t0, kT));
      return record(id);
    }
    agent(id, AgentSignal::kRegistered, t0);
    if (state == State::kClaimed || state == State::kIdle) {
      step(id, pool::mark_running(record(id), t0, kT));
      step(id, pool::start_drain(record(id), Secret("rm"), t0, kT));
      agent(id, AgentSignal::kDrained, t0);
      step(id, pool::return_to_pool(record(id), t0, kT));
      step(id, pool::advertised(record(id)));
      if (state == State::kIdle) return record(id);
      step(id, pool::claim(record(id), "run-2", Secret("reg"), "http://x/o/r", t0, kT));
      return record(id);
    }
    step(id, pool::mark_running(record(id), t0, kT));
    if (state == State::kDraining) step(id, pool::start_drain(record(id), Secret("rm"), t0, kT));
    return record(id);
  }
  // An idle record whose agent beats now, so only its deadline speaks.
  InstanceRecord put_idle(const std::string& id, int64_t age_ms, bool with_message = true) {
    InstanceRecord r = put(id, State::kIdle, age_ms);
    agent(id, AgentSignal::kDrained, now_ms());
    if (with_message) send({id, r.generation});
    return record(id);
  }

  void send(const pool::PoolMessage& m) { c_->sqs.send_message(queue_url_, pool::pool_message_body(m)); }
  void send_raw(const std::string& body) { c_->sqs.send_message(queue_url_, body); }
  // Every message in the queue, received and at once made visible again.
  std::vector<std::string> queue_bodies() {
    std::vector<std::string> bodies;
    std::vector<std::string> receipts;
    for (int i = 0; i < 10; ++i) {
      aws::ReceiveRequest r;
      r.queue_url = queue_url_;
      r.max_messages = 10;
      r.wait_seconds = 1;
      r.visibility_timeout = 30;
      auto got = c_->sqs.receive_messages(r);
      if (got.empty()) break;
      for (auto& m : got) {
        bodies.push_back(m.body);
        receipts.push_back(m.receipt_handle);
      }
    }
    for (const auto& h : receipts) c_->sqs.change_message_visibility(queue_url_, h, 0);
    std::sort(bodies.begin(), bodies.end());
    return bodies;
  }
  int64_t visible_messages() {
    return c_->sqs.get_queue_attributes(queue_url_).approximate_number_of_messages.value_or(-1);
  }

  std::string register_runner(const std::string& name) {
    auto jit = c_->github.generate_jit_config({name, 1, {"refresh-test"}, ""});
    return std::to_string(jit.runner.id);
  }
  std::set<std::string> runner_names() {
    std::set<std::string> names;
    for (const auto& r : c_->github.list_runners()) {
      if (r.name.rfind(pool_ + "-", 0) == 0) names.insert(r.name);
    }
    return names;
  }

  // The outcome of the reported action `kind` for `id` ("<none>" when there is none).
  static std::string outcome(const CtlResult& r, const std::string& kind, const std::string& id) {
    for (const auto& a : r.json["actions"]) {
      if (a["action"].asString() == kind && (a["instance_id"].asString() == id || a["runner_name"].asString() == id)) {
        return a["outcome"].asString();
      }
    }
    return "<none>";
  }
  static std::string rule_of(const CtlResult& r, const std::string& id) {
    for (const auto& a : r.json["actions"]) {
      if (a["instance_id"].asString() == id) return a["rule"].asString();
    }
    return "<none>";
  }

  static inline Clients* c_ = nullptr;
  std::string pool_;
  std::string queue_url_;
  std::string dir_;
  std::vector<std::string> launched_;
};

#define EXPECT_RAN(r, code)                                                                     \
  EXPECT_EQ((r).exit_code, code) << "stdout:\n" << (r).out << "\nstderr:\n" << (r).err;           \
  ASSERT_TRUE((r).json.isObject()) << "stdout:\n" << (r).out << "\nstderr:\n" << (r).err

TEST_F(ControllerRefresh, ExpiredRecordsInEveryStateAreRetired) {
  const std::string idle = launch(), created = launch(), claimed = launch(), running = launch(),
                    hard = launch(), draining = launch(), terminating = launch(), healthy = launch();
  put_idle(idle, kT.idle_ttl_ms + 60'000);
  put(created, State::kCreated, kT.boot_ms + 60'000);
  put(claimed, State::kClaimed, kT.registration_ms + 60'000);
  put(running, State::kRunning, kT.max_runtime_ms + 60'000);
  put(hard, State::kRunning, kT.max_runtime_ms + kT.hard_grace_ms + 60'000);
  put(draining, State::kDraining, kT.drain_ms + 60'000);
  put(terminating, State::kTerminating, 60'000);  // termination began, never confirmed
  put_idle(healthy, 60'000);

  CtlResult r = refresh();
  EXPECT_RAN(r, 0);
  EXPECT_EQ(rule_of(r, idle), "deadline.idle");
  EXPECT_EQ(rule_of(r, created), "deadline.created");
  EXPECT_EQ(rule_of(r, claimed), "deadline.claimed");
  EXPECT_EQ(rule_of(r, running), "deadline.running");
  EXPECT_EQ(rule_of(r, hard), "deadline.running.hard");
  EXPECT_EQ(rule_of(r, draining), "deadline.draining");
  EXPECT_EQ(rule_of(r, terminating), "terminating.retry");
  EXPECT_EQ(rule_of(r, healthy), "<none>");

  for (const auto& id : {idle, created, claimed, hard, draining, terminating}) {
    EXPECT_TRUE(stopping_or_gone(id)) << id << " is " << ec2_state(id);
    EXPECT_EQ(record(id).state, State::kTerminated) << id << ": closed once EC2 reported it going";
  }
  // Past max runtime: drained first (with a remove token for the agent), not killed.
  InstanceRecord drained = record(running);
  EXPECT_EQ(drained.state, State::kDraining);
  EXPECT_FALSE(drained.remove_token.empty());
  EXPECT_TRUE(alive(running));
  EXPECT_EQ(record(healthy).state, State::kIdle);
  EXPECT_TRUE(alive(healthy));
  EXPECT_EQ(r.json["summary"]["terminate"].asInt(), 5) << r.out;
  EXPECT_EQ(r.json["summary"]["drain"].asInt(), 1) << r.out;

  // The retired idle instance's pool message is now stale: the next pass deletes it, keeps the
  // healthy one's.
  CtlResult again = refresh();
  EXPECT_RAN(again, 0);
  EXPECT_EQ(queue_bodies(), (std::vector<std::string>{pool::pool_message_body({healthy, record(healthy).generation})}));
}

TEST_F(ControllerRefresh, UntrackedInstancesAreTerminatedAfterTheGraceOnly) {
  const std::string orphan = launch();  // tagged for the pool, never recorded
  const std::string closed = launch();  // its record says terminated, yet it runs
  InstanceRecord r = put(closed, State::kCreated, 3'600'000);
  ASSERT_TRUE(c_->table.transition(closed, pool::close_record(r, now_ms(), kT).expect,
                                   pool::close_record(r, now_ms(), kT).change));

  CtlResult spared = refresh();  // default grace: 5 minutes
  EXPECT_RAN(spared, 0);
  EXPECT_TRUE(alive(orphan));
  EXPECT_TRUE(alive(closed));
  EXPECT_GE(spared.json["notes"].size(), 2u) << spared.out;

  std::this_thread::sleep_for(1100ms);
  CtlResult swept = refresh({}, {{"RUNPOOL_ORPHAN_GRACE", "1s"}});
  EXPECT_RAN(swept, 0);
  EXPECT_EQ(outcome(swept, "terminate-untracked", orphan), "done");
  EXPECT_EQ(outcome(swept, "terminate-untracked", closed), "done");
  EXPECT_TRUE(stopping_or_gone(orphan));
  EXPECT_TRUE(stopping_or_gone(closed));
}

TEST_F(ControllerRefresh, RecordsWhoseInstanceIsGoneAreClosed) {
  const std::string killed = launch();
  put(killed, State::kRunning, 600'000);
  c_->ec2.terminate_instances({killed});
  const std::string never = "i-0fedcba9876543210";  // EC2 never heard of it
  put(never, State::kIdle, 600'000);

  CtlResult r = refresh();
  EXPECT_RAN(r, 0);
  EXPECT_EQ(outcome(r, "close", killed), "done");
  EXPECT_EQ(outcome(r, "close", never), "done");
  EXPECT_EQ(record(killed).state, State::kTerminated);
  EXPECT_EQ(record(never).state, State::kTerminated);
}

TEST_F(ControllerRefresh, DrainedButNeverReturnedGoesBackToThePool) {
  const std::string id = launch();
  put(id, State::kDraining, 60'000);
  agent(id, AgentSignal::kDrained, now_ms());

  CtlResult r = refresh();
  EXPECT_RAN(r, 0);
  EXPECT_EQ(rule_of(r, id), "handshake.drained");
  InstanceRecord now = record(id);
  EXPECT_EQ(now.state, State::kIdle);
  EXPECT_FALSE(now.advertise_pending);
  EXPECT_TRUE(now.label.empty());
  EXPECT_EQ(queue_bodies(), (std::vector<std::string>{pool::pool_message_body({id, now.generation})}));
}

TEST_F(ControllerRefresh, LostPoolMessageIsReadvertised) {
  const std::string id = launch();
  InstanceRecord r = put_idle(id, 60'000, /*with_message=*/false);

  CtlResult res = refresh();
  EXPECT_RAN(res, 0);
  EXPECT_EQ(outcome(res, "advertise", id), "done");
  EXPECT_EQ(rule_of(res, id), "pool.lost");
  EXPECT_EQ(queue_bodies(), (std::vector<std::string>{pool::pool_message_body({id, r.generation})}));

  // Settled: the next pass finds depth and idle records equal, and sends nothing more.
  CtlResult again = refresh();
  EXPECT_RAN(again, 0);
  EXPECT_EQ(again.json["actions"].size(), 0u) << again.out;
}

TEST_F(ControllerRefresh, StaleDuplicateAndMalformedMessagesAreDeleted) {
  const std::string id = launch();
  InstanceRecord r = put_idle(id, 60'000);        // its valid message
  send({id, r.generation});                       // a duplicate
  send({id, r.generation + 5});                   // a generation the record is not at
  send({"i-0aaaaaaaaaaaaaaaa", 1});               // no record
  send_raw("{\"instance_id\": \"i-0123");         // truncated
  send_raw("\"just a string\"");                  // not an object

  CtlResult res = refresh();
  EXPECT_RAN(res, 0);
  EXPECT_EQ(res.json["summary"]["delete-message"].asInt(), 5) << res.out;
  EXPECT_EQ(res.json["summary"]["release-message"].asInt(), 1) << res.out;
  EXPECT_EQ(queue_bodies(), (std::vector<std::string>{pool::pool_message_body({id, r.generation})}));
  EXPECT_NE(res.err.find("pool.malformed"), std::string::npos) << "malformed bodies are warned about";
  EXPECT_EQ(record(id).state, State::kIdle);
}

TEST_F(ControllerRefresh, GhostRunnersAreDeletedAndServingOnesKept) {
  const std::string live = launch();
  put(live, State::kClaimed, 60'000);  // generation 2, then registered and running
  agent(live, AgentSignal::kRegistered, now_ms());
  step(live, pool::mark_running(record(live), now_ms(), kT));
  InstanceRecord running = record(live);
  ASSERT_EQ(running.generation, 2);
  const std::string serving = pool::runner_name(pool_, live, running.generation);
  const std::string old_generation = pool::runner_name(pool_, live, running.generation - 1);
  const std::string no_record = pool::runner_name(pool_, "i-0bbbbbbbbbbbbbbbb", 1);
  const std::string foreign = "someone-elses-runner-" + pool_;
  for (const auto& n : {serving, old_generation, no_record, foreign}) register_runner(n);

  CtlResult r = refresh();
  EXPECT_RAN(r, 0);
  EXPECT_EQ(outcome(r, "delete-runner", no_record), "done");
  EXPECT_EQ(outcome(r, "delete-runner", old_generation), "done");
  EXPECT_EQ(runner_names(), (std::set<std::string>{serving}));
  bool foreign_left = false;
  for (const auto& g : c_->github.list_runners()) foreign_left |= g.name == foreign;
  EXPECT_TRUE(foreign_left) << "runners not named by the pool's scheme are never touched";
  for (const auto& g : c_->github.list_runners()) {
    if (g.name == foreign) c_->github.delete_runner(g.id);
  }
}

TEST_F(ControllerRefresh, RetentionDeletesTerminatedRecordsOnceOver) {
  const std::string old_id = "i-0ccccccccccccccc1", young_id = "i-0ccccccccccccccc2";
  for (const auto& [id, closed_ago] : {std::pair{old_id, kT.retention_ms + 60'000}, std::pair{young_id, 60'000L}}) {
    InstanceRecord r = put(id, State::kCreated, closed_ago + 600'000);
    pool::Step close = pool::close_record(r, now_ms() - closed_ago, kT);
    ASSERT_TRUE(c_->table.transition(id, close.expect, close.change));
  }
  CtlResult r = refresh();
  EXPECT_RAN(r, 0);
  EXPECT_EQ(outcome(r, "delete-record", old_id), "done");
  EXPECT_FALSE(c_->table.get(old_id));
  EXPECT_EQ(record(young_id).state, State::kTerminated);
}

TEST_F(ControllerRefresh, DryRunChangesNothing) {
  const std::string expired = launch(), orphan = launch();
  put_idle(expired, kT.idle_ttl_ms + 60'000);
  send_raw("garbage");
  const std::string ghost = pool::runner_name(pool_, "i-0dddddddddddddddd", 1);
  register_runner(ghost);
  std::this_thread::sleep_for(1100ms);
  InstanceRecord before = record(expired);

  CtlResult r = refresh({"--dry-run"}, {{"RUNPOOL_ORPHAN_GRACE", "1s"}});
  EXPECT_RAN(r, 0);
  EXPECT_TRUE(r.json["dry_run"].asBool());
  std::set<std::string> rules;
  for (const auto& a : r.json["actions"]) {
    EXPECT_EQ(a["outcome"].asString(), "planned") << r.out;
    rules.insert(a["rule"].asString());
  }
  EXPECT_EQ(rules, (std::set<std::string>{"deadline.idle", "ec2.untracked", "pool.malformed", "pool.retiring",
                                          "ghost.runner"}))
      << r.out;
  InstanceRecord after = record(expired);
  EXPECT_EQ(after.state, before.state);
  EXPECT_EQ(after.deadline_ms, before.deadline_ms);
  EXPECT_TRUE(alive(expired));
  EXPECT_TRUE(alive(orphan));
  EXPECT_EQ(runner_names(), (std::set<std::string>{ghost}));
  EXPECT_EQ(visible_messages(), 2) << "swept messages are handed back at once";
  EXPECT_EQ(queue_bodies().size(), 2u);

  // The text form says what it would do, rule by rule.
  CtlResult text = run_ctl({"refresh", "--dry-run"}, {{"RUNPOOL_ORPHAN_GRACE", "1s"}});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("would terminate " + expired + " [deadline.idle]"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(dry run)"), std::string::npos) << text.out;
}

TEST_F(ControllerRefresh, AnEc2OutageFailsOnlyEc2sActionsAndExitsOne) {
  const std::string expired = launch(), draining = launch();
  put_idle(expired, kT.idle_ttl_ms + 60'000);
  put(draining, State::kDraining, 60'000);
  agent(draining, AgentSignal::kDrained, now_ms());
  const std::string ghost = pool::runner_name(pool_, "i-0eeeeeeeeeeeeeeee", 1);
  register_runner(ghost);

  Json::Value faults;
  faults["service"] = "ec2";
  faults["errorRate"] = 1.0;
  cloud().control("POST", "/_control/faults", faults);
  cloud().control("POST", "/_control/stats/reset");
  CtlResult r = refresh({}, {{"RUNPOOL_AWS_MAX_ATTEMPTS", "2"}});
  Json::Value stats = cloud().control("GET", "/_control/stats");
  cloud().clear_faults();

  EXPECT_RAN(r, 1);
  EXPECT_GE(r.json["errors"].size(), 1u) << "the pool's instances could not be described";
  EXPECT_EQ(outcome(r, "terminate", expired), "failed");
  EXPECT_GE(stats["ec2"]["TerminateInstances"]["errors"].asInt(), 2) << "tried, with a retry";
  // Everything that does not need EC2 was still done.
  EXPECT_EQ(outcome(r, "return-to-pool", draining), "done");
  EXPECT_EQ(record(draining).state, State::kIdle);
  EXPECT_EQ(outcome(r, "delete-runner", ghost), "done");
  EXPECT_TRUE(runner_names().empty());
  EXPECT_EQ(record(expired).state, State::kTerminating) << "the retry is the next pass's";

  // EC2 back: the next pass finishes the job.
  CtlResult next = refresh();
  EXPECT_RAN(next, 0);
  EXPECT_EQ(outcome(next, "retry-terminate", expired), "done");
  EXPECT_TRUE(stopping_or_gone(expired));
  EXPECT_EQ(record(expired).state, State::kTerminated);
}

TEST_F(ControllerRefresh, AGithubOutageSkipsOnlyTheGhostSweepAndExitsOne) {
  const std::string expired = launch();
  put_idle(expired, kT.idle_ttl_ms + 60'000);
  const std::string ghost = pool::runner_name(pool_, "i-0ffffffffffffffff", 1);
  register_runner(ghost);

  Json::Value faults;
  faults["service"] = "github";
  faults["errorRate"] = 1.0;
  cloud().control("POST", "/_control/faults", faults);
  CtlResult r = refresh();
  cloud().clear_faults();

  EXPECT_RAN(r, 1);
  EXPECT_EQ(r.json["errors"].size(), 1u) << r.out;
  EXPECT_EQ(outcome(r, "terminate", expired), "done");
  EXPECT_EQ(record(expired).state, State::kTerminated);
  EXPECT_EQ(runner_names(), (std::set<std::string>{ghost}));

  CtlResult next = refresh();
  EXPECT_RAN(next, 0);
  EXPECT_TRUE(runner_names().empty());
}

}  // namespace
}  // namespace runpool
