#include "common/github/actions_service.h"

#include <gtest/gtest.h>

#include "common/github/scaleset_test_support.h"

namespace runpool::github {
namespace {

using namespace std::chrono_literals;
using testing::authorization_of;
using testing::header_of;
using testing::kRegistrationToken;
using testing::kScaleSetApi;
using testing::kScaleSetPat;
using testing::kScaleSetService;
using testing::reply;

class ScaleSetDiscovery : public testing::ScaleSetFixture {};

TEST_F(ScaleSetDiscovery, RegistrationTokenThenRunnerRegistrationWithRemoteAuth) {
  std::string admin = admin_token();
  push_discovery(admin);
  ActionsServiceConnection c = auth_.connection();
  EXPECT_EQ(c.base_url, kScaleSetService);  // trailing slash dropped
  EXPECT_EQ(c.admin_token.reveal(), admin);
  EXPECT_EQ(c.expires_at, std::chrono::time_point_cast<std::chrono::seconds>(clock_.now() + 1h));

  HttpRequest reg = http_.request(0);
  EXPECT_EQ(reg.method, "POST");
  EXPECT_EQ(reg.url, kScaleSetApi + "/orgs/octo-org/actions/runners/registration-token");
  EXPECT_EQ(authorization_of(reg), "Bearer " + kScaleSetPat);

  HttpRequest disc = http_.request(1);
  EXPECT_EQ(disc.method, "POST");
  EXPECT_EQ(disc.url, kScaleSetApi + "/actions/runner-registration");
  EXPECT_EQ(authorization_of(disc), "RemoteAuth " + kRegistrationToken);
  EXPECT_EQ(header_of(disc, "Content-Type"), "application/json");
  EXPECT_EQ(header_of(disc, "User-Agent"), "runpool-test");
  Json::Value body = http_.body_json(1);
  EXPECT_EQ(body["url"].asString(), "https://ghe.example.com/octo-org");
  EXPECT_EQ(body["runner_event"].asString(), "register");
  for (const auto& [k, v] : disc.headers) EXPECT_EQ(v.find(kRegistrationToken), std::string::npos) << k;
}

TEST_F(ScaleSetDiscovery, KeepsTheTokenUntilItExpiresWithinAMinute) {
  push_discovery(admin_token("first"));
  auth_.connection();
  clock_.advance(58min);
  auth_.connection();
  EXPECT_EQ(auth_.discoveries(), 1);
  clock_.advance(61s);  // 59 s left
  std::string second = admin_token("second");
  push_discovery(second);
  EXPECT_EQ(auth_.connection().admin_token.reveal(), second);
  EXPECT_EQ(auth_.discoveries(), 2);
  EXPECT_EQ(http_.count(), 4u);
}

TEST_F(ScaleSetDiscovery, InvalidateDropsOnlyTheCurrentToken) {
  std::string first = admin_token("first");
  push_discovery(first);
  auth_.connection();
  EXPECT_FALSE(auth_.invalidate(Secret("some-older-token")));
  EXPECT_TRUE(auth_.invalidate(Secret(first)));
  push_discovery(admin_token("second"));
  EXPECT_NE(auth_.connection().admin_token.reveal(), first);
  EXPECT_EQ(auth_.discoveries(), 2);
}

TEST_F(ScaleSetDiscovery, RetriesAnUnauthorizedRegistration) {
  http_.push(reply(201, R"({"token":"REG","expires_at":"2030-01-01T00:00:00Z"})"));
  http_.push(reply(401, R"({"message":"Bad credentials"})"));
  http_.push(reply(403, R"({"message":"not yet"})"));
  http_.push(reply(201, R"({"url":"https://as.example.net/x","token":")" + admin_token() + R"("})"));
  EXPECT_EQ(auth_.connection().base_url, "https://as.example.net/x");
  EXPECT_EQ(http_.count(), 4u);
}

TEST_F(ScaleSetDiscovery, RefusesIncompleteAnswersWithoutQuotingThem) {
  const std::string leaked = "SECRET-ADMIN-TOKEN";
  const std::vector<std::string> bodies = {
      R"({"url":"","token":")" + leaked + R"("})",
      R"({"url":"https://as.example.net/","token":""})",
      R"({"url":"https://as.example.net/","token":")" + leaked + R"("})",  // not a JWT
      R"({"url":"https://as.example.net/","token":")" + leaked + R"(")",    // malformed
      R"({"url":"ftp://as.example.net/","token":")" + admin_token() + R"("})",
  };
  for (const std::string& b : bodies) {
    http_.push(reply(201, R"({"token":"REG","expires_at":"2030-01-01T00:00:00Z"})"));
    http_.push(reply(201, b));
    try {
      auth_.connection();
      ADD_FAILURE() << "accepted " << b;
    } catch (const GithubError& e) {
      EXPECT_EQ(std::string(e.what()).find(leaked), std::string::npos) << e.what();
      EXPECT_EQ(e.operation(), "RunnerRegistration");
    }
  }
}

TEST_F(ScaleSetDiscovery, AFailedRegistrationTokenRequestIsTheError) {
  http_.push(reply(403, R"({"message":"Resource not accessible by personal access token"})"));
  EXPECT_THROW(auth_.connection(), GithubError);
  EXPECT_EQ(http_.count(), 1u);
}

TEST(ScaleSetConfigUrl, FollowsTheServerOfTheApiBase) {
  EXPECT_EQ(scope_config_url("https://api.github.com", OwnerScope::parse("octo/repo")), "https://github.com/octo/repo");
  EXPECT_EQ(scope_config_url("https://ghe.example.com/api/v3/", OwnerScope::parse("octo")), "https://ghe.example.com/octo");
  EXPECT_EQ(scope_config_url("https://api.github.com", OwnerScope::parse("enterprise:corp")),
            "https://github.com/enterprises/corp");
  EXPECT_EQ(scope_config_url("http://127.0.0.1:8080/api/v3", OwnerScope::parse("o")), "http://127.0.0.1:8080/o");
}

TEST(ScaleSetJwtExpiry, ReadsExpAndRefusesAnythingElse) {
  WallTime t{std::chrono::seconds(1'900'000'000)};
  EXPECT_EQ(jwt_expiry_unverified(Secret(testing::jwt_expiring(t))), t);
  EXPECT_FALSE(jwt_expiry_unverified(Secret("not-a-jwt")));
  EXPECT_FALSE(jwt_expiry_unverified(Secret("a.b.c.d")));
  EXPECT_FALSE(jwt_expiry_unverified(Secret("a.!!!.c")));
  EXPECT_FALSE(jwt_expiry_unverified(Secret("a." + base64url_encode(R"({"exp":"soon"})") + ".c")));
  EXPECT_FALSE(jwt_expiry_unverified(Secret("a." + base64url_encode(R"({"iat":1})") + ".c")));
  EXPECT_FALSE(jwt_expiry_unverified(Secret("a." + base64url_encode(R"({"exp":1e300})") + ".c")));
}

// The caller: retries, Retry-After, BOM, masking, error bodies.
class ScaleSetCaller : public ::testing::Test {
 protected:
  ScaleSetCaller() : caller_(http_, clock_, ActionsServiceSettings{}) {}
  GithubReply get() {
    ActionsRequest r;
    r.url = "https://as.example.net/_apis/x";
    r.authorization = Secret("Bearer tok-SECRET");
    return caller_.send("Op", r);
  }
  testing::FakeHttp http_;
  FakeClock clock_;
  ActionsCaller caller_;
};

TEST_F(ScaleSetCaller, RetriesServerErrorsAndHonoursRetryAfter) {
  http_.push(reply(500, "Internal Server Error"));
  http_.push(reply(503, "Service Unavailable", {{"retry-after", "7"}}));
  http_.push(reply(429, "Too Many Requests", {{"retry-after", "3"}}));
  http_.push(reply(502));
  http_.push(reply(200, "{}"));
  GithubReply r = get();
  EXPECT_EQ(r.status(), 200);
  EXPECT_EQ(r.attempts, 5);
  EXPECT_GE(clock_.total_slept(), 10s);
  EXPECT_LE(clock_.total_slept(), 10s + 1s + 8s);  // backoffs after attempts 0 and 3: at most 1 s and 8 s
}

TEST_F(ScaleSetCaller, IsBoundedAndLeaves501AndClientErrorsAlone) {
  for (int i = 0; i < 5; ++i) http_.push(reply(500));
  EXPECT_EQ(get().status(), 500);
  EXPECT_EQ(http_.count(), 5u);
  http_.clear();
  http_.push(reply(501));
  EXPECT_EQ(get().attempts, 1);
  http_.push(reply(400, "{}"));
  EXPECT_EQ(get().attempts, 1);
  http_.push(reply(401, "{}"));
  EXPECT_EQ(get().attempts, 1);
}

TEST_F(ScaleSetCaller, RetriesConnectionErrorsThenGivesUp) {
  http_.push_transport_error();
  http_.push(reply(204));
  EXPECT_EQ(get().attempts, 2);
  http_.on(testing::FakeHttp::refused());
  try {
    get();
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 0);
  }
}

TEST_F(ScaleSetCaller, StripsAByteOrderMarkAndMasksTheTokenInErrors) {
  http_.push(reply(200, "\xEF\xBB\xBF{\"count\":0}"));
  EXPECT_EQ(get().http.body, "{\"count\":0}");
  http_.push(reply(400, "\xEF\xBB\xBF{\"message\":\"bad token tok-SECRET\"}"));
  GithubReply r = get();
  EXPECT_EQ(r.http.body.find("tok-SECRET"), std::string::npos);
  EXPECT_EQ(actions_error_from("Op", r.http).message(), "bad token <redacted>");
}

TEST(ScaleSetErrors, ReadTheServicesTypeNameAndActivityId) {
  HttpResponse r = reply(409,
                         R"({"typeName":"GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionConflictException, )"
                         R"(GitHub.Actions.Runtime.WebApi","message":"already has an active session"})",
                         {{"activityid", "act-1"}});
  ActionsServiceError e = actions_error_from("CreateMessageSession", r);
  EXPECT_EQ(e.type_name(), "RunnerScaleSetSessionConflictException");
  EXPECT_EQ(e.activity_id(), "act-1");
  EXPECT_TRUE(e.is("SessionConflictException"));
  EXPECT_NE(std::string(e.what()).find("already has an active session"), std::string::npos);
  EXPECT_NE(std::string(e.what()).find("act-1"), std::string::npos);

  ActionsServiceError plain = actions_error_from("Op", reply(502, "Bad Gateway", {{"content-type", "text/plain"}}));
  EXPECT_EQ(plain.type_name(), "");
  EXPECT_EQ(plain.message(), "Bad Gateway");
  EXPECT_EQ(actions_error_from("Op", reply(500)).message(), "HTTP 500");
}

TEST(ScaleSetErrors, TypedByException) {
  auto typed = [](long status, const std::string& type) {
    GithubReply r;
    r.http = reply(status, R"({"typeName":"X.)" + type + R"(, X","message":"m"})");
    try {
      throw_actions_error("Op", r);
    } catch (const SessionConflictError&) {
      return std::string("conflict");
    } catch (const ScaleSetGoneError&) {
      return std::string("gone");
    } catch (const SessionExpiredError&) {
      return std::string("expired");
    } catch (const ScaleSetExistsError&) {
      return std::string("exists");
    } catch (const RunnerNameTakenError&) {
      return std::string("taken");
    } catch (const ActionsServiceError& e) {
      return "other " + e.type_name();
    }
  };
  EXPECT_EQ(typed(409, "RunnerScaleSetSessionConflictException"), "conflict");
  EXPECT_EQ(typed(404, "RunnerScaleSetNotFoundException"), "gone");
  EXPECT_EQ(typed(404, "RunnerScaleSetSessionNotFoundException"), "expired");
  EXPECT_EQ(typed(400, "RunnerScaleSetSessionExpiredException"), "expired");
  EXPECT_EQ(typed(409, "RunnerScaleSetExistsException"), "exists");
  EXPECT_EQ(typed(409, "AgentExistsException"), "taken");
  EXPECT_EQ(typed(400, "ArgumentException"), "other ArgumentException");
}

}  // namespace
}  // namespace runpool::github
