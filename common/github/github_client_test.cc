#include "common/github/github_client.h"

#include <gtest/gtest.h>

#include "common/github/test_support.h"
#include "common/json.h"

namespace runpool::github {
namespace {

using namespace std::chrono_literals;
using testing::authorization_of;
using testing::FakeHttp;
using testing::header_of;
using testing::reply;

const std::string kBase = "https://ghe.example.com/api/v3";
const std::string kPat = "github_pat_11ABCDEFG0123456789_secretsecret";
const std::string kRunners = kBase + "/repos/octo/repo/actions/runners";

std::string runner_json(int64_t id, const std::string& name, bool busy = false) {
  return R"({"id":)" + std::to_string(id) + R"(,"name":")" + name + R"(","os":"Linux","status":"online","busy":)" +
         (busy ? "true" : "false") +
         R"(,"ephemeral":true,"runner_group_id":1,"labels":[{"id":1,"name":"self-hosted","type":"read-only"},)"
         R"({"id":9,"name":"rp-123","type":"custom"}]})";
}

std::string page_json(int64_t first, int64_t count, int64_t total) {
  std::string s = R"({"total_count":)" + std::to_string(total) + R"(,"runners":[)";
  for (int64_t i = 0; i < count; ++i) s += (i ? "," : "") + runner_json(first + i, "r-" + std::to_string(first + i));
  return s + "]}";
}

class GithubClientTest : public ::testing::Test {
 protected:
  GithubClientTest() : caller_(http_, clock_, settings()), pat_(Secret(kPat)), client_(caller_, pat_, scope_) {}

  static GithubSettings settings() {
    GithubSettings s;
    s.api_base = kBase + "/";
    s.user_agent = "runpool-test";
    s.max_pages = 5;
    return s;
  }

  FakeHttp http_;
  FakeClock clock_;
  GithubCaller caller_;
  StaticTokenSource pat_;
  OwnerScope scope_ = OwnerScope::parse("octo/repo");
  GithubClient client_;
};

TEST_F(GithubClientTest, SendsGithubsHeadersAndTheTokenOnlyAsASecretHeader) {
  http_.push(reply(201, R"({"token":"AABBCC","expires_at":"2020-01-22T12:13:35.123-08:00"})"));
  RunnerToken t = client_.create_registration_token();
  EXPECT_EQ(t.token.reveal(), "AABBCC");
  EXPECT_EQ(t.expires_at, WallTime{std::chrono::seconds(1579724015)});
  HttpRequest req = http_.last();
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, kRunners + "/registration-token");
  EXPECT_EQ(header_of(req, "Accept"), "application/vnd.github+json");
  EXPECT_EQ(header_of(req, "X-GitHub-Api-Version"), "2022-11-28");
  EXPECT_EQ(header_of(req, "User-Agent"), "runpool-test");
  EXPECT_EQ(authorization_of(req), "Bearer " + kPat);
  for (const auto& [k, v] : req.headers) EXPECT_EQ(v.find(kPat), std::string::npos) << k;
  EXPECT_EQ(client_.requests_sent(), 1);
}

TEST_F(GithubClientTest, RemoveTokenAndOrganizationScope) {
  GithubClient org(caller_, pat_, OwnerScope::parse("octo-org"));
  http_.push(reply(201, R"({"token":"RMTOKEN","expires_at":"2030-01-01T00:00:00Z"})"));
  EXPECT_EQ(org.create_remove_token().token.reveal(), "RMTOKEN");
  EXPECT_EQ(http_.last().url, kBase + "/orgs/octo-org/actions/runners/remove-token");
  http_.push(reply(200, "[]"));
  org.list_downloads();
  EXPECT_EQ(http_.last().url, kBase + "/orgs/octo-org/actions/runners/downloads");
}

TEST_F(GithubClientTest, EnterpriseScopeUsesTheEnterprisePaths) {
  GithubClient ent(caller_, pat_, OwnerScope::parse("enterprise:octo-corp"));
  const std::string base = kBase + "/enterprises/octo-corp/actions/runners";
  http_.push(reply(201, R"({"token":"REG","expires_at":"2030-01-01T00:00:00Z"})"));
  ent.create_registration_token();
  EXPECT_EQ(http_.last().url, base + "/registration-token");
  http_.push(reply(201, R"({"token":"RM","expires_at":"2030-01-01T00:00:00Z"})"));
  ent.create_remove_token();
  EXPECT_EQ(http_.last().url, base + "/remove-token");
  http_.push(reply(200, page_json(1, 1, 1)));
  ent.list_runners();
  EXPECT_EQ(http_.last().url, base + "?per_page=100");
  http_.push(reply(200, runner_json(1, "r-1")));
  ent.get_runner(1);
  EXPECT_EQ(http_.last().url, base + "/1");
  http_.push(reply(204));
  ent.delete_runner(1);
  EXPECT_EQ(http_.last().method, "DELETE");
  EXPECT_EQ(http_.last().url, base + "/1");
  http_.push(reply(200, R"({"total_count":0,"labels":[]})"));
  ent.remove_all_labels(1);
  EXPECT_EQ(http_.last().url, base + "/1/labels");
  http_.push(reply(201, R"({"runner":)" + runner_json(2, "j") + R"(,"encoded_jit_config":"x"})"));
  ent.generate_jit_config({"j", 1, {"a"}, ""});
  EXPECT_EQ(http_.last().url, base + "/generate-jitconfig");
}

TEST_F(GithubClientTest, GeneratesAJitConfig) {
  http_.push(reply(201, R"({"runner":)" + runner_json(23, "rp-i-0abc") + R"(,"encoded_jit_config":"eyJKSVQ="})"));
  JitConfig c = client_.generate_jit_config({"rp-i-0abc", 1, {"rp-123", "linux"}, "_work"});
  EXPECT_EQ(c.runner.id, 23);
  EXPECT_EQ(c.runner.name, "rp-i-0abc");
  EXPECT_EQ(c.encoded_jit_config.reveal(), "eyJKSVQ=");
  HttpRequest req = http_.last();
  EXPECT_EQ(req.url, kRunners + "/generate-jitconfig");
  EXPECT_EQ(header_of(req, "Content-Type"), "application/json");
  auto body = parse_json(req.body, "body");
  EXPECT_EQ(body["name"].asString(), "rp-i-0abc");
  EXPECT_EQ(body["runner_group_id"].asInt64(), 1);
  ASSERT_EQ(body["labels"].size(), 2u);
  EXPECT_EQ(body["labels"][1].asString(), "linux");
  EXPECT_EQ(body["work_folder"].asString(), "_work");

  http_.push(reply(201, R"({"runner":)" + runner_json(24, "n") + R"(,"encoded_jit_config":"x"})"));
  client_.generate_jit_config({"n", 3, {"a"}, ""});
  body = parse_json(http_.last().body, "body");
  EXPECT_FALSE(body.isMember("work_folder"));
  EXPECT_EQ(body["runner_group_id"].asInt64(), 3);
}

TEST_F(GithubClientTest, JitConfigTakenNameIsDistinct) {
  http_.push(reply(409, R"({"message":"Already exists - A runner with the name rp-x already exists."})"));
  try {
    client_.generate_jit_config({"rp-x", 1, {"a"}, ""});
    FAIL();
  } catch (const RunnerNameTakenError& e) {
    EXPECT_EQ(e.status(), 409);
    EXPECT_FALSE(e.after_retry());
  }
  // The first attempt's answer was lost (502) but it registered the runner: the retry sees 409.
  http_.push(reply(502, "bad gateway"));
  http_.push(reply(409, R"({"message":"Already exists"})"));
  try {
    client_.generate_jit_config({"rp-x", 1, {"a"}, ""});
    FAIL();
  } catch (const RunnerNameTakenError& e) {
    EXPECT_TRUE(e.after_retry());
  }
  http_.push(reply(422, R"({"message":"Runner with name rp-x already exists"})"));
  EXPECT_THROW(client_.generate_jit_config({"rp-x", 1, {"a"}, ""}), RunnerNameTakenError);
  // Other validation failures are plain errors.
  http_.push(reply(422, R"({"message":"Validation Failed","errors":[{"resource":"Runner","field":"labels","code":"invalid"}]})"));
  try {
    client_.generate_jit_config({"rp-x", 1, {"a"}, ""});
    FAIL();
  } catch (const RunnerNameTakenError&) {
    FAIL() << "not a taken name";
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 422);
    EXPECT_EQ(e.message(), "Validation Failed; labels invalid");
  }
}

TEST_F(GithubClientTest, JitConfigArgumentsAreCheckedBeforeAnyRequest) {
  EXPECT_THROW(client_.generate_jit_config({"", 1, {"a"}, ""}), std::invalid_argument);
  EXPECT_THROW(client_.generate_jit_config({"n", 1, {}, ""}), std::invalid_argument);
  EXPECT_THROW(client_.generate_jit_config({"n", 1, std::vector<std::string>(101, "l"), ""}), std::invalid_argument);
  EXPECT_THROW(client_.generate_jit_config({"n", 1, {"a", ""}, ""}), std::invalid_argument);
  EXPECT_EQ(http_.count(), 0u);
}

TEST_F(GithubClientTest, ListsEveryPageByFollowingLinks) {
  auto link = [](int next, int last) {
    return "<" + kBase + "/repositories/1/actions/runners?per_page=100&page=" + std::to_string(next) +
           ">; rel=\"next\", <" + kBase + "/repositories/1/actions/runners?per_page=100&page=" + std::to_string(last) +
           ">; rel=\"last\"";
  };
  http_.push(reply(200, page_json(1, 100, 250), {{"link", link(2, 3)}}));
  http_.push(reply(200, page_json(101, 100, 250), {{"link", link(3, 3)}}));
  http_.push(reply(200, page_json(201, 50, 250),
                   {{"link", "<" + kBase + "/repositories/1/actions/runners?per_page=100&page=2>; rel=\"prev\""}}));
  auto runners = client_.list_runners();
  ASSERT_EQ(runners.size(), 250u);
  EXPECT_EQ(runners.front().id, 1);
  EXPECT_EQ(runners.back().id, 250);
  EXPECT_EQ(runners[0].labels.size(), 2u);
  EXPECT_EQ(runners[0].label_names()[1], "rp-123");
  EXPECT_TRUE(runners[0].online());
  EXPECT_TRUE(runners[0].ephemeral);
  EXPECT_EQ(runners[0].runner_group_id, 1);
  auto reqs = http_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].url, kRunners + "?per_page=100");
  EXPECT_EQ(reqs[1].url, kBase + "/repositories/1/actions/runners?per_page=100&page=2");
  EXPECT_EQ(reqs[2].url, kBase + "/repositories/1/actions/runners?per_page=100&page=3");
  for (const auto& r : reqs) EXPECT_EQ(authorization_of(r), "Bearer " + kPat);
}

TEST_F(GithubClientTest, ListDeduplicatesShiftedPagesAndFiltersByName) {
  http_.push(reply(200, page_json(1, 2, 3), {{"link", "<" + kRunners + "?page=2>; rel=\"next\""}}));
  http_.push(reply(200, page_json(2, 2, 3)));  // runner 2 again: the list shifted
  auto runners = client_.list_runners();
  ASSERT_EQ(runners.size(), 3u);
  EXPECT_EQ(runners[2].id, 3);

  // A server that ignores ?name= still yields only the runner asked for.
  http_.push(reply(200, page_json(1, 3, 3)));
  auto named = client_.list_runners("R-2");
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].id, 2);
  EXPECT_EQ(http_.last().url, kRunners + "?per_page=100&name=R-2");
  http_.push(reply(200, R"({"total_count":0,"runners":[]})"));
  EXPECT_TRUE(client_.list_runners("a b&c").empty());
  EXPECT_EQ(http_.last().url, kRunners + "?per_page=100&name=a%20b%26c");
}

TEST_F(GithubClientTest, ListIsBoundedAndNeverLeavesTheApiHost) {
  http_.on([](const HttpRequest&) {
    return reply(200, page_json(1, 1, 1000), {{"link", "<" + kRunners + "?page=99>; rel=\"next\""}});
  });
  try {
    client_.list_runners();
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 5 pages"), std::string::npos);
  }
  EXPECT_EQ(http_.count(), 5u);

  FakeHttp http;
  GithubCaller caller(http, clock_, settings());
  GithubClient client(caller, pat_, scope_);
  http.push(reply(200, page_json(1, 1, 2), {{"link", "<https://evil.example.com/steal?page=2>; rel=\"next\""}}));
  EXPECT_THROW(client.list_runners(), GithubError);
  EXPECT_EQ(http.count(), 1u);  // the token never went to the other host
}

TEST_F(GithubClientTest, GetRunner) {
  http_.push(reply(200, runner_json(7, "rp-7", true)));
  auto r = client_.get_runner(7);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->busy);
  EXPECT_EQ(http_.last().url, kRunners + "/7");
  http_.push(reply(404, R"({"message":"Not Found"})"));
  EXPECT_EQ(client_.get_runner(8), std::nullopt);
  http_.push(reply(403, R"({"message":"Resource not accessible by integration"})", {{"x-ratelimit-remaining", "4000"}}));
  try {
    client_.get_runner(9);
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 403);
    EXPECT_EQ(e.message(), "Resource not accessible by integration");
  }
}

TEST_F(GithubClientTest, DeleteIsTriState) {
  http_.push(reply(204));
  EXPECT_EQ(client_.delete_runner(7), DeleteOutcome::kDeleted);
  EXPECT_EQ(http_.last().method, "DELETE");
  EXPECT_EQ(http_.last().url, kRunners + "/7");
  http_.push(reply(404, R"({"message":"Not Found"})"));
  EXPECT_EQ(client_.delete_runner(7), DeleteOutcome::kAlreadyGone);
  http_.push(reply(422, R"({"message":"Bad request - Runner \"rp-7\" is still running a job\""})"));
  EXPECT_EQ(client_.delete_runner(7), DeleteOutcome::kBusy);
  http_.push(reply(400, R"({"message":"nope"})"));
  EXPECT_THROW(client_.delete_runner(7), GithubError);
  EXPECT_EQ(to_string(DeleteOutcome::kBusy), "busy");
}

TEST_F(GithubClientTest, LabelCalls) {
  const std::string labels = R"({"total_count":2,"labels":[{"id":1,"name":"self-hosted","type":"read-only"},)"
                             R"({"id":5,"name":"gpu","type":"custom"}]})";
  http_.on([&](const HttpRequest&) { return reply(200, labels); });
  auto l = client_.list_labels(7);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[1], (RunnerLabel{5, "gpu", "custom"}));
  EXPECT_EQ(http_.last().method, "GET");
  EXPECT_EQ(http_.last().url, kRunners + "/7/labels");

  client_.add_labels(7, {"gpu"});
  EXPECT_EQ(http_.last().method, "POST");
  EXPECT_EQ(parse_json(http_.last().body, "b")["labels"][0].asString(), "gpu");
  client_.set_labels(7, {});
  EXPECT_EQ(http_.last().method, "PUT");
  EXPECT_EQ(http_.last().body, R"({"labels":[]})");
  client_.remove_label(7, "a/b c");
  EXPECT_EQ(http_.last().method, "DELETE");
  EXPECT_EQ(http_.last().url, kRunners + "/7/labels/a%2Fb%20c");
  client_.remove_all_labels(7);
  EXPECT_EQ(http_.last().url, kRunners + "/7/labels");
  EXPECT_THROW(client_.add_labels(7, {}), std::invalid_argument);
  EXPECT_THROW(client_.remove_label(7, ""), std::invalid_argument);
}

TEST_F(GithubClientTest, Downloads) {
  http_.push(reply(200, R"([{"os":"linux","architecture":"x64","download_url":"https://x/r.tar.gz",)"
                        R"("filename":"r.tar.gz","sha256_checksum":"abc"},)"
                        R"({"os":"osx","architecture":"arm64","download_url":"u","filename":"f"}])"));
  auto d = client_.list_downloads();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].sha256_checksum, "abc");
  EXPECT_EQ(d[1].architecture, "arm64");
  EXPECT_EQ(d[1].sha256_checksum, "");
}

// --- retries and rate limits ---

TEST_F(GithubClientTest, ServerErrorsAndConnectionErrorsAreRetried) {
  http_.push(reply(502, "<html>bad gateway</html>"));
  http_.push_transport_error();
  http_.push(reply(200, runner_json(1, "a")));
  EXPECT_TRUE(client_.get_runner(1));
  EXPECT_EQ(client_.requests_sent(), 3);
  EXPECT_EQ(caller_.requests_for("GetRunner"), 3);

  http_.on([](const HttpRequest&) { return reply(503, "unavailable"); });
  try {
    client_.get_runner(1);
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 503);
  }
  EXPECT_EQ(client_.requests_sent(), 3 + RetryPolicy{}.max_attempts);
}

TEST_F(GithubClientTest, ConnectionErrorsToTheEndAreStatusZero) {
  http_.on([](const HttpRequest& req) -> HttpResponse { throw HttpTransportError(req.url + ": refused", false); });
  try {
    client_.list_downloads();
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 0);
  }
}

TEST_F(GithubClientTest, SecondaryLimitRetryAfterIsHonoured) {
  http_.push(reply(429, R"({"message":"You have exceeded a secondary rate limit"})", {{"retry-after", "7"}}));
  http_.push(reply(403, R"({"message":"You have exceeded a secondary rate limit"})", {{"retry-after", "3"}}));
  http_.push(reply(200, R"({"total_count":0,"runners":[]})"));
  client_.list_runners();
  EXPECT_EQ(clock_.total_slept(), 10s);
  EXPECT_EQ(client_.requests_sent(), 3);
}

TEST_F(GithubClientTest, SecondaryLimitWithoutRetryAfterWaitsAMinute) {
  http_.push(reply(403, R"({"message":"You have exceeded a secondary rate limit. Please wait."})"));
  http_.push(reply(204));
  EXPECT_EQ(client_.delete_runner(3), DeleteOutcome::kDeleted);
  EXPECT_EQ(clock_.total_slept(), 60s);
}

TEST_F(GithubClientTest, PrimaryLimitWaitsUntilReset) {
  auto reset = std::chrono::duration_cast<std::chrono::seconds>((clock_.now() + 30s).time_since_epoch()).count();
  http_.push(reply(403, R"({"message":"API rate limit exceeded"})",
                   {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", std::to_string(reset)}}));
  http_.push(reply(200, runner_json(1, "a")));
  EXPECT_TRUE(client_.get_runner(1));
  EXPECT_EQ(clock_.total_slept(), 31s);
}

TEST_F(GithubClientTest, AWaitBeyondThePolicyIsSurfacedNotSatThrough) {
  auto reset = std::chrono::duration_cast<std::chrono::seconds>((clock_.now() + 40min).time_since_epoch()).count();
  http_.push(reply(429, R"({"message":"API rate limit exceeded for installation ID 42."})",
                   {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", std::to_string(reset)}}));
  try {
    client_.get_runner(1);
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 429);
    EXPECT_NE(e.message().find("rate limit"), std::string::npos);
  }
  EXPECT_EQ(clock_.total_slept(), 0s);
  EXPECT_EQ(http_.count(), 1u);
}

// --- authentication failures ---

TEST_F(GithubClientTest, BadPatIsA401GithubErrorWithoutRetry) {
  http_.push(reply(401, R"({"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"})"));
  try {
    client_.create_registration_token();
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 401);
    EXPECT_EQ(e.message(), "Bad credentials");
    EXPECT_EQ(e.documentation_url(), "https://docs.github.com/rest");
  }
  EXPECT_EQ(http_.count(), 1u);
}

class AppClientTest : public GithubClientTest {
 protected:
  AppClientTest() : app_(caller_, scope_, app_config()), app_client_(caller_, app_, scope_) {}
  static GithubAppConfig app_config() {
    GithubAppConfig c;
    c.issuer = "123";
    c.private_key_pem = Secret(testing::test_key().pkcs8_pem);
    c.installation_id = 42;
    return c;
  }
  void serve_tokens(const std::function<HttpResponse(const HttpRequest&)>& api) {
    http_.on([this, api](const HttpRequest& req) {
      if (req.url == kBase + "/app/installations/42/access_tokens") {
        ++issued_;
        return reply(201, R"({"token":"ghs_inst)" + std::to_string(issued_) + R"(","expires_at":")" +
                              format_iso8601(clock_.now() + 1h) + R"("})");
      }
      return api(req);
    });
  }
  AppInstallationTokenSource app_;
  GithubClient app_client_;
  int issued_ = 0;
};

TEST_F(AppClientTest, A401ToTheCachedInstallationTokenRefetchesItOnce) {
  int rejections = 1;
  serve_tokens([&](const HttpRequest& req) {
    if (authorization_of(req) == "Bearer ghs_inst1" && rejections-- > 0) return reply(401, R"({"message":"Bad credentials"})");
    return reply(200, runner_json(5, "x"));
  });
  EXPECT_TRUE(app_client_.get_runner(5));  // fetch token 1, 401 … fetch token 2, 200
  EXPECT_TRUE(app_client_.get_runner(5));
  EXPECT_EQ(app_.token_fetches(), 2);
  EXPECT_EQ(app_client_.requests_sent(), 3);
  EXPECT_EQ(authorization_of(http_.last()), "Bearer ghs_inst2");
}

TEST_F(AppClientTest, APersistent401IsSurfacedAfterOneRefetch) {
  serve_tokens([](const HttpRequest&) { return reply(401, R"({"message":"Bad credentials"})"); });
  try {
    app_client_.list_runners();
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 401);
  }
  EXPECT_EQ(app_.token_fetches(), 2);
  EXPECT_EQ(app_client_.requests_sent(), 2);
}

// --- malformed answers and secrecy ---

TEST_F(GithubClientTest, MalformedBodiesAreGithubErrorsNeverCrashes) {
  const std::vector<std::string> bodies = {
      "", "null", "not json", "[]", "{}", "{\"runners\":{}}", "{\"runners\":[1,2]}",
      R"({"runners":[{"id":"1","name":"a","status":"online","busy":false}]})",
      R"({"runners":[{"id":1,"name":"a","status":"online","busy":"no"}]})",
      R"({"runners":[{"id":1,"name":"a","status":"online"}]})",
      R"({"runners":[{"id":1.5,"name":"a","status":"online","busy":false}]})",
      R"({"runners":[{"id":18446744073709551615,"name":"a","status":"online","busy":false}]})",
      R"({"runners":[{"id":1,"name":"a","status":"online","busy":false,"labels":"x"}]})",
      R"({"runners":[{"id":1,"name":"a","status":"online","busy":false,"labels":[{"id":1}]}]})",
      R"({"runners":[{"id":1,"name":"a","status":"online","busy":false,"labels":[7]}]})",
      R"({"total_count":1,"runners":[)",
      "\x01\x02\xff\xfe",
  };
  for (const std::string& body : bodies) {
    http_.push(reply(200, body));
    EXPECT_THROW(client_.list_runners(), GithubError) << body;
    http_.push(reply(200, body));
    EXPECT_THROW(client_.get_runner(1), GithubError) << body;
    http_.push(reply(201, body));
    EXPECT_THROW(client_.create_registration_token(), GithubError) << body;
    http_.push(reply(201, body));
    EXPECT_THROW(client_.generate_jit_config({"n", 1, {"a"}, ""}), GithubError) << body;
    http_.push(reply(200, body));
    EXPECT_THROW(client_.list_labels(1), GithubError) << body;
    http_.push(reply(200, body == "[]" ? "[{}]" : body));
    EXPECT_THROW(client_.list_downloads(), GithubError) << body;
  }
  // Error bodies that are not GitHub's JSON still make a readable error.
  http_.push(reply(400, "<html>\nproxy says no\n</html>"));
  try {
    client_.list_labels(1);
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.message(), "<html> proxy says no </html>");
  }
}

TEST_F(AppClientTest, NoTokenReachesAnErrorMessageOrALogLine) {
  testing::LogCapture logs;
  std::vector<std::string> messages;
  const std::string reg_token = "AREGTOKENVALUE0123456789ABCDEFG";
  const std::string jit = "eyJqaXRjb25maWciOiJzZWNyZXQifQ==";
  int step = 0;
  serve_tokens([&](const HttpRequest& req) -> HttpResponse {
    std::string echoed = authorization_of(req).substr(7);
    switch (step++) {
      case 0: return reply(401, R"({"message":"Bad credentials )" + echoed + R"("})");  // echoes the token
      case 1: return reply(201, R"({"token":")" + reg_token + R"(","expires_at":"2030-01-01T00:00:00Z"})");
      case 2: return reply(201, R"({"token":")" + reg_token + R"(","expires_at":"soon"})");
      case 3: return reply(201, R"({"runner":)" + runner_json(1, "n") + R"(,"encoded_jit_config":")" + jit + "\"}");
      case 4: return reply(201, R"({"runner":{"id":"bad"},"encoded_jit_config":")" + jit + "\"}");
      case 5: return reply(201, R"({"runner":)" + runner_json(1, "n") + R"(,"encoded_jit_config":")" + jit);
      case 6: return reply(403, "token " + echoed + " is not allowed here");
      default: return reply(500, R"({"message":")" + echoed + R"("})");
    }
  });
  auto attempt = [&](const std::function<void()>& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      messages.push_back(e.what());
    }
  };
  attempt([&] { app_client_.create_registration_token(); });  // 401 echoing the token, then refetch → success
  attempt([&] { app_client_.create_registration_token(); });  // malformed expires_at
  attempt([&] { app_client_.generate_jit_config({"n", 1, {"a"}, ""}); });
  attempt([&] { app_client_.generate_jit_config({"n", 1, {"a"}, ""}); });
  attempt([&] { app_client_.generate_jit_config({"n", 1, {"a"}, ""}); });
  attempt([&] { app_client_.list_labels(1); });
  attempt([&] { app_client_.list_labels(1); });  // 500 until the attempts run out

  GithubClient pat_client(caller_, pat_, scope_);
  http_.on([](const HttpRequest& req) { return reply(401, "{\"message\":\"" + authorization_of(req) + "\"}"); });
  attempt([&] { pat_client.list_runners(); });

  ASSERT_GE(messages.size(), 6u);
  std::string all_text = logs.text();
  for (const std::string& m : messages) all_text += "\n" + m;
  EXPECT_NE(logs.text().find("GitHub"), std::string::npos);  // the capture did see the client's logs
  for (const std::string& secret : {std::string("ghs_inst1"), std::string("ghs_inst2"), std::string("ghs_inst3"), kPat,
                                    reg_token, jit, std::string("eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9")}) {
    EXPECT_EQ(all_text.find(secret), std::string::npos) << secret << " leaked into:\n" << all_text;
  }
}

}  // namespace
}  // namespace runpool::github
