#include "common/github/scaleset_client.h"

#include <gtest/gtest.h>

#include "common/github/scaleset_test_support.h"

namespace runpool::github {
namespace {

using namespace std::chrono_literals;
using testing::authorization_of;
using testing::header_of;
using testing::kScaleSetService;
using testing::reply;

const std::string kSets = kScaleSetService + "/_apis/runtime/runnerscalesets";
const std::string kAgents = kScaleSetService + "/_apis/distributedtask/pools/0/agents";
const std::string kVersion = "api-version=6.0-preview";

std::string set_json(int64_t id, const std::string& name) {
  return R"({"id":)" + std::to_string(id) + R"(,"name":")" + name +
         R"(","runnerGroupId":1,"runnerGroupName":"Default","labels":[{"type":"System","name":")" + name +
         R"("}],"RunnerSetting":{"ephemeral":false,"isElastic":false,"disableUpdate":true},)"
         R"("createdOn":"2026-05-01T10:00:00Z","runnerJitConfigUrl":"u","statistics":{"totalAssignedJobs":3}})";
}

std::string as_error(const std::string& type, const std::string& ns = "GitHub.Actions.Runtime.WebApi") {
  return R"({"typeName":")" + ns + "." + type + ", " + ns + R"(","message":"m"})";
}

class ScaleSetClientTest : public testing::ScaleSetFixture {
 protected:
  void SetUp() override {
    admin_ = admin_token();
    push_discovery(admin_);
  }
  // The n-th request after discovery.
  HttpRequest sent(size_t n = 0) { return http_.request(2 + n); }
  void expect_admin_call(const HttpRequest& r, const std::string& method, const std::string& url) {
    EXPECT_EQ(r.method, method);
    EXPECT_EQ(r.url, url);
    EXPECT_EQ(authorization_of(r), "Bearer " + admin_);
    EXPECT_EQ(header_of(r, "User-Agent"), "runpool-test");
    for (const auto& [k, v] : r.headers) EXPECT_EQ(v.find(admin_), std::string::npos) << k;
  }
  std::string admin_;
};

TEST_F(ScaleSetClientTest, GetsAScaleSetByNameInAGroup) {
  http_.push(reply(200, R"({"count":1,"value":[)" + set_json(7, "rp set") + "]}"));
  auto set = client_.get_scale_set(3, "rp set");
  expect_admin_call(sent(), "GET", kSets + "?runnerGroupId=3&name=rp%20set&" + kVersion);
  ASSERT_TRUE(set);
  EXPECT_EQ(set->id, 7);
  EXPECT_EQ(set->runner_group_name, "Default");
  EXPECT_TRUE(set->runner_setting.disable_update);
  ASSERT_EQ(set->labels.size(), 1u);
  EXPECT_EQ(set->labels[0].name, "rp set");
  EXPECT_EQ(set->statistics->total_assigned_jobs, 3);

  http_.push(reply(200, R"({"count":0,"value":[]})"));
  EXPECT_FALSE(client_.get_scale_set(1, "none"));
  http_.push(reply(200, R"({"count":2,"value":[)" + set_json(1, "a") + "," + set_json(2, "a") + "]}"));
  EXPECT_THROW(client_.get_scale_set(1, "a"), GithubError);
}

TEST_F(ScaleSetClientTest, GetsBySetIdAndSeesAGoneSetAsNullopt) {
  http_.push(reply(200, set_json(7, "rp")));
  EXPECT_EQ(client_.get_scale_set_by_id(7)->name, "rp");
  expect_admin_call(sent(), "GET", kSets + "/7?" + kVersion);
  http_.push(reply(404, as_error("RunnerScaleSetNotFoundException")));
  EXPECT_FALSE(client_.get_scale_set_by_id(7));
}

TEST_F(ScaleSetClientTest, CreatesWithSystemLabelsAndDisableUpdate) {
  http_.push(reply(200, set_json(9, "rp")));
  ScaleSetSpec spec;
  spec.name = "rp";
  spec.runner_group_id = 4;
  spec.labels = {{"", "linux"}, {"Custom", "gpu"}};
  EXPECT_EQ(client_.create_scale_set(spec).id, 9);
  expect_admin_call(sent(), "POST", kSets + "?" + kVersion);
  EXPECT_EQ(header_of(sent(), "Content-Type"), "application/json");
  Json::Value body = http_.body_json(2);
  EXPECT_EQ(body["name"].asString(), "rp");
  EXPECT_EQ(body["runnerGroupId"].asInt64(), 4);
  EXPECT_EQ(body["labels"][0]["type"].asString(), "System");
  EXPECT_EQ(body["labels"][1]["type"].asString(), "Custom");
  EXPECT_TRUE(body["RunnerSetting"]["disableUpdate"].asBool());
  EXPECT_FALSE(body["RunnerSetting"].isMember("ephemeral"));

  http_.push(reply(200, set_json(10, "plain")));
  ScaleSetSpec plain_spec;
  plain_spec.name = "plain";
  client_.create_scale_set(plain_spec);
  Json::Value plain = http_.body_json(3);
  ASSERT_EQ(plain["labels"].size(), 1u);
  EXPECT_EQ(plain["labels"][0]["name"].asString(), "plain");  // no labels: the name is the label

  http_.push(reply(409, as_error("RunnerScaleSetExistsException")));
  EXPECT_THROW(client_.create_scale_set(spec), ScaleSetExistsError);
  EXPECT_THROW(client_.create_scale_set({}), std::invalid_argument);
}

TEST_F(ScaleSetClientTest, UpdatesOnlyWhatIsGiven) {
  http_.push(reply(200, set_json(7, "renamed")));
  ScaleSetUpdate rename;
  rename.name = "renamed";
  client_.update_scale_set(7, rename);
  expect_admin_call(sent(), "PATCH", kSets + "/7?" + kVersion);
  Json::Value body = http_.body_json(2);
  EXPECT_EQ(body.getMemberNames(), std::vector<std::string>{"name"});

  http_.push(reply(200, set_json(7, "renamed")));
  ScaleSetUpdate regroup;
  regroup.runner_group_id = 2;
  regroup.disable_update = false;
  client_.update_scale_set(7, regroup);
  Json::Value b2 = http_.body_json(3);
  EXPECT_EQ(b2["runnerGroupId"].asInt64(), 2);
  EXPECT_FALSE(b2["RunnerSetting"]["disableUpdate"].asBool());
  EXPECT_FALSE(b2.isMember("name"));

  http_.push(reply(404, as_error("RunnerScaleSetNotFoundException")));
  EXPECT_THROW(client_.update_scale_set(7, rename), ScaleSetGoneError);
}

TEST_F(ScaleSetClientTest, DeleteOutcomes) {
  http_.push(reply(204));
  EXPECT_EQ(client_.delete_scale_set(7), DeleteOutcome::kDeleted);
  expect_admin_call(sent(), "DELETE", kSets + "/7?" + kVersion);
  http_.push(reply(404, as_error("RunnerScaleSetNotFoundException")));
  EXPECT_EQ(client_.delete_scale_set(7), DeleteOutcome::kAlreadyGone);
  http_.push(reply(400, as_error("JobStillRunningException", "GitHub.DistributedTask.WebApi")));
  EXPECT_EQ(client_.delete_scale_set(7), DeleteOutcome::kBusy);
  http_.push(reply(400, as_error("ArgumentException", "System")));
  EXPECT_THROW(client_.delete_scale_set(7), ActionsServiceError);
}

TEST_F(ScaleSetClientTest, RunnerGroupByName) {
  http_.push(reply(200, R"({"count":1,"value":[{"id":1,"name":"Default","size":4,"isDefaultGroup":true}]})"));
  auto g = client_.get_runner_group("default");
  expect_admin_call(sent(), "GET", kScaleSetService + "/_apis/runtime/runnergroups/?groupName=default&" + kVersion);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->id, 1);
  EXPECT_TRUE(g->is_default);
  http_.push(reply(200, R"({"count":0,"value":[]})"));
  EXPECT_FALSE(client_.get_runner_group("nope"));
}

TEST_F(ScaleSetClientTest, SessionsCreateRefreshDelete) {
  http_.push(reply(200, testing::session_json("q1")));
  MessageSessionInfo s = client_.create_session(7, "host-1");
  expect_admin_call(sent(), "POST", kSets + "/7/sessions?" + kVersion);
  EXPECT_EQ(http_.body_json(2)["ownerName"].asString(), "host-1");
  EXPECT_EQ(s.session_id, "5f1f-session");
  EXPECT_EQ(s.message_queue_url, testing::kScaleSetQueue);
  EXPECT_EQ(s.message_queue_token.reveal(), "q1");
  EXPECT_EQ(s.statistics->total_assigned_jobs, 2);

  http_.push(reply(200, testing::session_json("q2")));
  EXPECT_EQ(client_.refresh_session(7, s.session_id).message_queue_token.reveal(), "q2");
  expect_admin_call(sent(1), "PATCH", kSets + "/7/sessions/5f1f-session?" + kVersion);
  EXPECT_EQ(sent(1).body, "");

  http_.push(reply(204));
  EXPECT_EQ(client_.delete_session(7, s.session_id), DeleteOutcome::kDeleted);
  expect_admin_call(sent(2), "DELETE", kSets + "/7/sessions/5f1f-session?" + kVersion);
  http_.push(reply(400, as_error("RunnerScaleSetSessionExpiredException")));
  EXPECT_EQ(client_.delete_session(7, s.session_id), DeleteOutcome::kAlreadyGone);
}

TEST_F(ScaleSetClientTest, SessionErrorsAreTyped) {
  http_.push(reply(409, as_error("RunnerScaleSetSessionConflictException")));
  EXPECT_THROW(client_.create_session(7, "h"), SessionConflictError);
  http_.push(reply(404, as_error("RunnerScaleSetNotFoundException")));
  EXPECT_THROW(client_.create_session(7, "h"), ScaleSetGoneError);
  http_.push(reply(404, as_error("RunnerScaleSetSessionNotFoundException")));
  EXPECT_THROW(client_.refresh_session(7, "s"), SessionExpiredError);
  // GitHub's reported answer for a session it evicted: typed the same, by its status.
  http_.push(reply(404, R"({"typeName":"RunnerAdminException","message":"runner referenced a session ID that doesn't exist in redis"})"));
  EXPECT_THROW(client_.refresh_session(7, "s"), SessionExpiredError);
  http_.push(reply(404, ""));
  EXPECT_THROW(client_.refresh_session(7, "s"), SessionExpiredError);
  http_.push(reply(404, as_error("RunnerScaleSetNotFoundException")));
  EXPECT_THROW(client_.refresh_session(7, "s"), ScaleSetGoneError);
  // An empty queue URL (seen in an outage) is an error, as is a missing token.
  http_.push(reply(200, R"({"sessionId":"s","messageQueueUrl":"","messageQueueAccessToken":"SECRETQ"})"));
  try {
    client_.create_session(7, "h");
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(std::string(e.what()).find("SECRETQ"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("messageQueueUrl"), std::string::npos);
  }
}

TEST_F(ScaleSetClientTest, GeneratesAJitConfig) {
  http_.push(reply(200, R"({"runner":{"id":42,"name":"rp-1","runnerScaleSetId":7},"encodedJITConfig":"eyJ9"})"));
  ScaleSetJitConfig c = client_.generate_jit_config(7, "rp-1", "_work");
  expect_admin_call(sent(), "POST", kSets + "/7/generatejitconfig?" + kVersion);
  Json::Value body = http_.body_json(2);
  EXPECT_EQ(body["name"].asString(), "rp-1");
  EXPECT_EQ(body["workFolder"].asString(), "_work");
  EXPECT_EQ(c.runner.id, 42);
  EXPECT_EQ(c.runner.scale_set_id, 7);
  EXPECT_EQ(c.encoded_jit_config.reveal(), "eyJ9");
  EXPECT_EQ(fmt::format("{}", c.encoded_jit_config), Secret::kMask);

  http_.push(reply(409, as_error("AgentExistsException", "GitHub.DistributedTask.WebApi")));
  try {
    client_.generate_jit_config(7, "rp-1");
    FAIL();
  } catch (const RunnerNameTakenError& e) {
    EXPECT_EQ(e.status(), 409);
    EXPECT_FALSE(e.after_retry());
  }
  http_.push(reply(503));
  http_.push(reply(409, as_error("AgentExistsException", "GitHub.DistributedTask.WebApi")));
  try {
    client_.generate_jit_config(7, "rp-1");
    FAIL();
  } catch (const RunnerNameTakenError& e) {
    EXPECT_TRUE(e.after_retry());  // maybe our own first attempt's runner
  }
  http_.push(reply(404, as_error("RunnerScaleSetNotFoundException")));
  EXPECT_THROW(client_.generate_jit_config(7, "rp-2"), ScaleSetGoneError);
  EXPECT_THROW(client_.generate_jit_config(7, ""), std::invalid_argument);
}

TEST_F(ScaleSetClientTest, Runners) {
  http_.push(reply(200, R"({"id":42,"name":"rp-1","runnerScaleSetId":7})"));
  EXPECT_EQ(client_.get_runner(42)->name, "rp-1");
  expect_admin_call(sent(), "GET", kAgents + "/42?" + kVersion);
  http_.push(reply(404, as_error("AgentNotFoundException", "GitHub.DistributedTask.WebApi")));
  EXPECT_FALSE(client_.get_runner(42));

  http_.push(reply(200, R"({"count":1,"value":[{"id":42,"name":"rp 1","runnerScaleSetId":7}]})"));
  EXPECT_EQ(client_.get_runner_by_name("rp 1")->id, 42);
  expect_admin_call(sent(2), "GET", kAgents + "?agentName=rp%201&" + kVersion);
  http_.push(reply(200, R"({"count":0,"value":[]})"));
  EXPECT_FALSE(client_.get_runner_by_name("x"));

  http_.push(reply(204));
  EXPECT_EQ(client_.delete_runner(42), DeleteOutcome::kDeleted);
  expect_admin_call(sent(4), "DELETE", kAgents + "/42?" + kVersion);
  http_.push(reply(400, as_error("JobStillRunningException", "GitHub.DistributedTask.WebApi")));
  EXPECT_EQ(client_.delete_runner(42), DeleteOutcome::kBusy);
}

TEST_F(ScaleSetClientTest, RediscoversOnceAfterA401) {
  http_.push(reply(401, as_error("VssUnauthorizedException", "GitHub.Services.Common")));
  std::string second = admin_token("second");
  push_discovery(second);
  http_.push(reply(200, set_json(7, "rp")));
  EXPECT_TRUE(client_.get_scale_set_by_id(7));
  EXPECT_EQ(authorization_of(http_.last()), "Bearer " + second);
  EXPECT_EQ(auth_.discoveries(), 2);

  // A second 401 stands: no loop.
  http_.push(reply(401, "{}"));
  push_discovery(admin_token("third"));
  http_.push(reply(401, "{}"));
  EXPECT_THROW(client_.get_scale_set_by_id(7), ActionsServiceError);
  EXPECT_EQ(auth_.discoveries(), 3);
}

TEST_F(ScaleSetClientTest, RediscoversBeforeTheTokenExpires) {
  http_.push(reply(200, set_json(7, "rp")));
  client_.get_scale_set_by_id(7);
  clock_.advance(59min + 30s);
  std::string second = admin_token("second");
  push_discovery(second);
  http_.push(reply(200, set_json(7, "rp")));
  client_.get_scale_set_by_id(7);
  EXPECT_EQ(authorization_of(http_.last()), "Bearer " + second);
  EXPECT_EQ(auth_.discoveries(), 2);
}

TEST_F(ScaleSetClientTest, MalformedAnswersAreGithubErrors) {
  http_.push(reply(200, "not json"));
  EXPECT_THROW(client_.get_scale_set_by_id(7), GithubError);
  http_.push(reply(200, R"({"id":"7","name":"x"})"));
  EXPECT_THROW(client_.get_scale_set_by_id(7), GithubError);
  http_.push(reply(200, R"({"id":99999999999999999999,"name":"x"})"));
  EXPECT_THROW(client_.get_scale_set_by_id(7), GithubError);
  http_.push(reply(200, "\xEF\xBB\xBF" + set_json(7, "bom")));
  EXPECT_EQ(client_.get_scale_set_by_id(7)->name, "bom");
}

}  // namespace
}  // namespace runpool::github
