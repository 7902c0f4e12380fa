#include "common/github/message_session.h"

#include <gtest/gtest.h>

#include "common/github/scaleset_test_support.h"

namespace runpool::github {
namespace {

using testing::authorization_of;
using testing::header_of;
using testing::kQueueToken;
using testing::kScaleSetQueue;
using testing::kScaleSetService;
using testing::reply;
using testing::session_json;

std::string envelope(int64_t id, const std::string& jobs_json) {
  Json::Value e(Json::objectValue);
  e["messageId"] = static_cast<Json::Int64>(id);
  e["messageType"] = "RunnerScaleSetJobMessages";
  e["body"] = jobs_json;
  e["statistics"]["totalAvailableJobs"] = 1;
  e["statistics"]["totalAssignedJobs"] = 4;
  return write_json(e);
}

const std::string kJobAvailable =
    R"({"messageType":"JobAvailable","runnerRequestId":123,"repositoryName":"repo","ownerName":"octo-org",)"
    R"("jobId":"0b1c","jobWorkflowRef":"octo-org/repo/.github/workflows/ci.yml@refs/heads/main",)"
    R"("jobDisplayName":"build","workflowRunId":555,"eventName":"push","requestLabels":["rp-set"],)"
    R"("queueTime":"2026-05-01T10:00:00.1234567Z","scaleSetAssignTime":"0001-01-01T00:00:00Z",)"
    R"("runnerAssignTime":"0001-01-01T00:00:00Z","finishTime":"0001-01-01T00:00:00Z","acquireJobUrl":"https://x/acq"})";

class ScaleSetSession : public testing::ScaleSetFixture {
 protected:
  void SetUp() override {
    push_discovery(admin_token());
    http_.push(reply(200, session_json(kQueueToken)));
    session_ = std::make_unique<MessageSession>(client_, 7, "host-1");
    first_ = http_.count();
  }
  HttpRequest sent(size_t n = 0) { return http_.request(first_ + n); }
  std::unique_ptr<MessageSession> session_;
  size_t first_ = 0;
};

TEST_F(ScaleSetSession, PollsTheQueueWithTheQueueToken) {
  http_.push(reply(202));
  EXPECT_FALSE(session_->get_message(0, 10));
  HttpRequest r = sent();
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.url, kScaleSetQueue);  // no lastMessageId when 0
  EXPECT_EQ(authorization_of(r), "Bearer " + kQueueToken);
  EXPECT_EQ(header_of(r, "Accept"), "application/json; api-version=6.0-preview");
  EXPECT_EQ(header_of(r, "X-ScaleSetMaxCapacity"), "10");
  EXPECT_EQ(r.timeout, caller_.settings().poll_timeout);

  http_.push(reply(202));
  session_->get_message(100000171, 0);
  EXPECT_EQ(sent(1).url, kScaleSetQueue + "?lastMessageId=100000171");
  EXPECT_EQ(header_of(sent(1), "X-ScaleSetMaxCapacity"), "0");
  EXPECT_THROW(session_->get_message(0, -1), std::invalid_argument);
}

TEST_F(ScaleSetSession, DecodesTheEnvelopeAndItsStringBody) {
  std::string jobs = "[" + kJobAvailable +
                     R"(,{"messageType":"JobStarted","runnerRequestId":124,"runnerId":9,"runnerName":"rp-9"},)"
                     R"({"messageType":"SomethingNew","runnerRequestId":1},)"
                     R"({"messageType":"JobCompleted","runnerRequestId":125,"result":"canceled","runnerId":0}])";
  http_.push(reply(200, envelope(100000001, jobs)));
  auto m = session_->get_message(0, 5);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->message_id, 100000001);
  EXPECT_EQ(m->statistics->total_assigned_jobs, 4);
  EXPECT_EQ(m->skipped, 1);
  ASSERT_EQ(m->jobs.size(), 3u);
  const JobMessage& a = m->jobs[0];
  EXPECT_EQ(a.type, JobMessageType::kJobAvailable);
  EXPECT_EQ(a.runner_request_id, 123);
  EXPECT_EQ(a.job_workflow_ref, "octo-org/repo/.github/workflows/ci.yml@refs/heads/main");
  EXPECT_EQ(a.workflow_run_id, 555);
  EXPECT_EQ(a.request_labels, std::vector<std::string>{"rp-set"});
  EXPECT_TRUE(a.queue_time);
  EXPECT_FALSE(a.scale_set_assign_time);  // Go's zero time
  EXPECT_EQ(a.acquire_job_url, "https://x/acq");
  EXPECT_EQ(m->jobs[1].runner_name, "rp-9");
  EXPECT_EQ(m->jobs[2].result, "canceled");

  http_.push(reply(200, envelope(100000002, "")));
  EXPECT_TRUE(session_->get_message(100000001, 5)->jobs.empty());
}

TEST_F(ScaleSetSession, RefusesBadAndEmptyBodies) {
  const std::vector<std::string> bodies = {
      "",                                    // a 200 with nothing (seen in an outage)
      "{",                                   // malformed
      envelope(1, "{not json"),              // body not JSON
      envelope(1, R"({"a":1})"),             // body not an array
      envelope(1, R"([{"runnerRequestId":1}])"),                            // no messageType
      envelope(1, R"([{"messageType":"JobAvailable"}])"),                   // no runnerRequestId
      envelope(1, R"([{"messageType":"JobAvailable","runnerRequestId":"1"}])"),
      R"({"messageId":1,"messageType":"SomethingElse","body":"[]"})",
  };
  for (const std::string& b : bodies) {
    http_.push(reply(200, b));
    EXPECT_THROW(session_->get_message(0, 1), GithubError) << b;
  }
}

TEST_F(ScaleSetSession, RefreshesTheSessionOnceAfterA401) {
  http_.push(reply(401, "{}"));
  http_.push(reply(200, session_json("queue-token-0002")));
  http_.push(reply(202));
  EXPECT_FALSE(session_->get_message(0, 1));
  HttpRequest refresh = sent(1);
  EXPECT_EQ(refresh.method, "PATCH");
  EXPECT_EQ(refresh.url, kScaleSetService + "/_apis/runtime/runnerscalesets/7/sessions/5f1f-session?api-version=6.0-preview");
  EXPECT_EQ(authorization_of(sent(2)), "Bearer queue-token-0002");
  EXPECT_EQ(session_->refreshes(), 1);
  EXPECT_EQ(session_->info().message_queue_token.reveal(), "queue-token-0002");

  // Still 401 after the refresh: an error, not a loop.
  http_.push(reply(401, "{}"));
  http_.push(reply(200, session_json("queue-token-0003")));
  http_.push(reply(401, "{}"));
  EXPECT_THROW(session_->get_message(0, 1), ActionsServiceError);
  EXPECT_EQ(session_->refreshes(), 2);
}

TEST_F(ScaleSetSession, AGoneSetOrSessionIsTyped) {
  http_.push(reply(404, R"({"typeName":"X.RunnerScaleSetNotFoundException, X","message":"gone"})"));
  EXPECT_THROW(session_->get_message(0, 1), ScaleSetGoneError);
  http_.push(reply(401, "{}"));
  http_.push(reply(404, R"({"typeName":"X.RunnerScaleSetSessionNotFoundException, X","message":"no"})"));
  EXPECT_THROW(session_->get_message(0, 1), SessionExpiredError);
  // As GitHub was reported to answer a refresh of a session it evicted.
  http_.push(reply(401, "{}"));
  http_.push(reply(404, R"({"typeName":"RunnerAdminException","message":"runner referenced a session ID that doesn't exist in redis"})"));
  try {
    session_->get_message(0, 1);
    FAIL() << "no error";
  } catch (const SessionExpiredError& e) {
    EXPECT_EQ(e.status(), 404);
    EXPECT_EQ(e.type_name(), "RunnerAdminException");
  }
}

TEST_F(ScaleSetSession, AcknowledgesByDeletingTheMessage) {
  http_.push(reply(204));
  session_->delete_message(100000001);
  HttpRequest r = sent();
  EXPECT_EQ(r.method, "DELETE");
  EXPECT_EQ(r.url, kScaleSetQueue + "/100000001");
  EXPECT_EQ(authorization_of(r), "Bearer " + kQueueToken);
  EXPECT_EQ(header_of(r, "Content-Type"), "application/json");

  http_.push(reply(401, "{}"));
  http_.push(reply(200, session_json("queue-token-0002")));
  http_.push(reply(204));
  session_->delete_message(100000002);
  EXPECT_EQ(authorization_of(http_.last()), "Bearer queue-token-0002");
}

TEST(ScaleSetQueueUrl, AcknowledgementKeepsTheQuery) {
  testing::FakeHttp http;
  FakeClock clock;
  GithubCaller gc(http, clock, GithubSettings{});
  StaticTokenSource pat(Secret("p"));
  GithubClient gh(gc, pat, OwnerScope::parse("o"));
  ActionsCaller caller(http, clock, ActionsServiceSettings{});
  ActionsServiceAuth auth(gh, "https://api.github.com", caller);
  ScaleSetClient client(caller, auth);
  http.push(reply(201, R"({"token":"R","expires_at":"2030-01-01T00:00:00Z"})"));
  http.push(reply(201, R"({"url":"https://as.example.net","token":")" +
                           testing::jwt_expiring(clock.now() + std::chrono::hours(1)) + R"("})"));
  http.push(reply(200, R"({"sessionId":"s","messageQueueUrl":"https://b.example.net/m?tenant=1","messageQueueAccessToken":"q"})"));
  MessageSession session(client, 3, "h");
  http.push(reply(204));
  session.delete_message(5);
  EXPECT_EQ(http.last().url, "https://b.example.net/m/5?tenant=1");
  http.push(reply(202));
  session.get_message(6, 1);
  EXPECT_EQ(http.last().url, "https://b.example.net/m?tenant=1&lastMessageId=6");
}

TEST_F(ScaleSetSession, AcquiresJobsWithTheQueueToken) {
  http_.push(reply(200, R"({"count":1,"value":[123]})"));
  EXPECT_EQ(session_->acquire_jobs({123, 124}), std::vector<int64_t>{123});
  HttpRequest r = sent();
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, kScaleSetService + "/_apis/runtime/runnerscalesets/7/acquirejobs?api-version=6.0-preview");
  EXPECT_EQ(authorization_of(r), "Bearer " + kQueueToken);
  EXPECT_EQ(header_of(r, "Content-Type"), "application/json");
  EXPECT_EQ(r.body, "[123,124]");
  EXPECT_TRUE(session_->acquire_jobs({}).empty());  // nothing sent

  http_.push(reply(401, "{}"));
  http_.push(reply(200, session_json("queue-token-0002")));
  http_.push(reply(200, R"({"count":0,"value":[]})"));
  EXPECT_TRUE(session_->acquire_jobs({1}).empty());
  EXPECT_EQ(authorization_of(http_.last()), "Bearer queue-token-0002");
  http_.push(reply(200, R"({"count":1,"value":["1"]})"));
  EXPECT_THROW(session_->acquire_jobs({1}), GithubError);
}

TEST_F(ScaleSetSession, QueueCallsCanHaveAConnectionOfTheirOwn) {
  testing::FakeHttp queue_http;
  ActionsCaller queue_caller(queue_http, clock_, ActionsServiceSettings{});
  http_.push(reply(200, session_json("q-own")));
  MessageSession own(client_, 7, "host-2", &queue_caller);
  queue_http.push(reply(202));
  EXPECT_FALSE(own.get_message(0, 1));
  queue_http.push(reply(401, "{}"));
  http_.push(reply(200, session_json("q-own-2")));  // the refresh is an admin call
  queue_http.push(reply(204));
  own.delete_message(1);
  EXPECT_EQ(queue_http.count(), 3u);
  EXPECT_EQ(authorization_of(queue_http.last()), "Bearer q-own-2");
  EXPECT_EQ(http_.last().method, "PATCH");
}

TEST_F(ScaleSetSession, ClosesByDeletingTheSession) {
  http_.push(reply(204));
  EXPECT_EQ(session_->close(), DeleteOutcome::kDeleted);
  EXPECT_EQ(sent().method, "DELETE");
  EXPECT_EQ(sent().url, kScaleSetService + "/_apis/runtime/runnerscalesets/7/sessions/5f1f-session?api-version=6.0-preview");
}

TEST_F(ScaleSetSession, RetriesTheLongPollOnServerErrors) {
  http_.push(reply(503, "Service Unavailable", {{"retry-after", "2"}}));
  http_.push(reply(200, envelope(9, "[]")));
  EXPECT_EQ(session_->get_message(0, 1)->message_id, 9);
  EXPECT_GE(clock_.total_slept(), std::chrono::seconds(2));
}

}  // namespace
}  // namespace runpool::github
