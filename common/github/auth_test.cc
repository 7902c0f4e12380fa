#include "common/github/auth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "common/github/test_support.h"
#include "common/json.h"

namespace runpool::github {
namespace {

using namespace std::chrono_literals;
using testing::authorization_of;
using testing::FakeHttp;
using testing::reply;
using testing::test_key;

const std::string kAuthBase = "https://ghe.example.com/api/v3";

// Checks a request's bearer token is an App JWT signed by the test key with the given issuer.
void expect_app_jwt(const HttpRequest& req, const std::string& issuer, WallTime now) {
  std::string auth = authorization_of(req);
  ASSERT_EQ(auth.rfind("Bearer ", 0), 0u);
  std::string jwt = auth.substr(7);
  size_t d1 = jwt.find('.'), d2 = jwt.rfind('.');
  ASSERT_NE(d1, d2);
  auto claims = parse_json(*base64url_decode(jwt.substr(d1 + 1, d2 - d1 - 1)), "claims");
  EXPECT_EQ(claims["iss"].asString(), issuer);
  EXPECT_EQ(claims["iat"].asInt64(), std::chrono::duration_cast<std::chrono::seconds>(
                                         (now - 60s).time_since_epoch()).count());
  EXPECT_TRUE(testing::verify_rs256(test_key().pkey.get(), jwt.substr(0, d2), *base64url_decode(jwt.substr(d2 + 1))));
}

class AppAuthTest : public ::testing::Test {
 protected:
  AppAuthTest() : caller_(http_, clock_, settings()) {}

  static GithubSettings settings() {
    GithubSettings s;
    s.api_base = kAuthBase;
    return s;
  }
  GithubAppConfig config(std::optional<int64_t> installation = std::nullopt) {
    GithubAppConfig c;
    c.issuer = "Iv1.client";
    c.private_key_pem = Secret(test_key().pkcs1_pem);
    c.installation_id = installation;
    return c;
  }
  // Serves the installation lookup and token creation; tokens are "tok-1", "tok-2"… valid `ttl`.
  void serve(Duration ttl = 1h) {
    http_.on([this, ttl](const HttpRequest& req) {
      if (req.method == "GET" && req.url == kAuthBase + "/repos/octo/app-repo/installation") {
        return reply(200, R"({"id": 42, "app_id": 7, "account": {"login": "octo"}})");
      }
      if (req.method == "POST" && req.url == kAuthBase + "/app/installations/42/access_tokens") {
        ++issued_;
        return reply(201, R"({"token":"tok-)" + std::to_string(issued_) + R"(","expires_at":")" +
                              format_iso8601(clock_.now() + ttl) + R"(","permissions":{"administration":"write"}})");
      }
      return reply(404, R"({"message":"Not Found"})");
    });
  }

  FakeHttp http_;
  FakeClock clock_;
  GithubCaller caller_;
  int issued_ = 0;
  OwnerScope scope_ = OwnerScope::parse("octo/app-repo");
};

TEST_F(AppAuthTest, LooksUpTheInstallationWithASignedJwtAndCachesTheToken) {
  serve();
  AppInstallationTokenSource auth(caller_, scope_, config());
  EXPECT_EQ(auth.token().reveal(), "tok-1");
  auto reqs = http_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  expect_app_jwt(reqs[0], "Iv1.client", clock_.now());
  expect_app_jwt(reqs[1], "Iv1.client", clock_.now());
  EXPECT_EQ(reqs[1].method, "POST");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(auth.token().reveal(), "tok-1");
  EXPECT_EQ(http_.count(), 2u);
  EXPECT_EQ(auth.token_fetches(), 1);
  EXPECT_EQ(auth.installation_id(), 42);
  EXPECT_EQ(auth.cached_expiry(), clock_.now() + 1h);
}

TEST_F(AppAuthTest, AppsCannotManageAnEnterprisesRunners) {
  EXPECT_THROW(AppInstallationTokenSource(caller_, OwnerScope::parse("enterprise:octo"), config()),
               std::invalid_argument);
  EXPECT_EQ(http_.count(), 0u);
}

TEST_F(AppAuthTest, RefreshesTheMarginBeforeExpiryAndLooksUpOnlyOnce) {
  serve();
  AppInstallationTokenSource auth(caller_, scope_, config());
  EXPECT_EQ(auth.token().reveal(), "tok-1");
  clock_.advance(54min + 59s);
  EXPECT_EQ(auth.token().reveal(), "tok-1");  // not yet within 5 minutes of expiry
  clock_.advance(2s);
  EXPECT_EQ(auth.token().reveal(), "tok-2");
  EXPECT_EQ(auth.token_fetches(), 2);
  EXPECT_EQ(caller_.requests_for("GetInstallation"), 1);
  EXPECT_EQ(caller_.requests_for("CreateInstallationAccessToken"), 2);
}

TEST_F(AppAuthTest, AShortLivedTokenIsRefreshedHalfwayNotOnEveryCall) {
  serve(4s);
  AppInstallationTokenSource auth(caller_, scope_, config());
  EXPECT_EQ(auth.token().reveal(), "tok-1");
  clock_.advance(1900ms);
  EXPECT_EQ(auth.token().reveal(), "tok-1");
  clock_.advance(200ms);
  EXPECT_EQ(auth.token().reveal(), "tok-2");
}

TEST_F(AppAuthTest, ConfiguredInstallationSkipsTheLookup) {
  serve();
  AppInstallationTokenSource auth(caller_, scope_, config(42));
  EXPECT_EQ(auth.token().reveal(), "tok-1");
  ASSERT_EQ(http_.count(), 1u);
  EXPECT_EQ(http_.last().url, kAuthBase + "/app/installations/42/access_tokens");
}

TEST_F(AppAuthTest, InvalidateDropsOnlyTheRejectedToken) {
  serve();
  AppInstallationTokenSource auth(caller_, scope_, config());
  Secret first = auth.token();
  EXPECT_TRUE(auth.invalidate(first));
  Secret second = auth.token();
  EXPECT_EQ(second.reveal(), "tok-2");
  EXPECT_TRUE(auth.invalidate(first));  // a stale rejection does not throw away the new token
  EXPECT_EQ(auth.token().reveal(), "tok-2");
  EXPECT_EQ(auth.token_fetches(), 2);
}

TEST_F(AppAuthTest, ConcurrentCallersShareOneFetch) {
  serve();
  AppInstallationTokenSource auth(caller_, scope_, config());
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 20; ++j) good += auth.token().reveal() == "tok-1";
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 160);
  EXPECT_EQ(auth.token_fetches(), 1);
}

TEST_F(AppAuthTest, NotInstalledAndRejectedJwtAreGithubErrors) {
  http_.push(reply(404, R"({"message":"Not Found","documentation_url":"https://docs.github.com/x"})"));
  AppInstallationTokenSource auth(caller_, scope_, config());
  try {
    auth.token();
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 404);
    EXPECT_EQ(e.operation(), "GetInstallation");
    EXPECT_EQ(e.documentation_url(), "https://docs.github.com/x");
  }
  http_.push(reply(200, R"({"id": 42})"));
  http_.push(reply(401, R"({"message":"'Expiration time' claim ('exp') is too far in the future"})"));
  try {
    auth.token();
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 401);
    EXPECT_NE(std::string(e.what()).find("too far in the future"), std::string::npos);
  }
}

TEST_F(AppAuthTest, AVanishedInstallationIsLookedUpAgain) {
  AppInstallationTokenSource auth(caller_, scope_, config());
  http_.push(reply(200, R"({"id": 42})"));
  http_.push(reply(404, R"({"message":"Not Found"})"));
  EXPECT_THROW(auth.token(), GithubError);
  serve();  // reinstalled
  EXPECT_EQ(auth.token().reveal(), "tok-1");
  EXPECT_EQ(caller_.requests_for("GetInstallation"), 2);
}

TEST_F(AppAuthTest, MalformedTokenAnswersAreGithubErrorsWithoutTheBody) {
  const std::vector<std::string> bodies = {
      "",
      "not json",
      "[]",
      R"({"token":"ghs_leaky","expires_at":"tomorrow"})",
      R"({"token":"ghs_leaky"})",
      R"({"token":12345,"expires_at":"2030-01-01T00:00:00Z"})",
      R"({"token":"","expires_at":"2030-01-01T00:00:00Z"})",
      R"({"token":"ghs_leaky","expires_at":"2030-01-01T00:00:00Z")",  // truncated
  };
  for (const std::string& body : bodies) {
    FakeHttp http;
    GithubCaller caller(http, clock_, settings());
    AppInstallationTokenSource auth(caller, scope_, config(42));
    http.push(reply(201, body));
    try {
      auth.token();
      ADD_FAILURE() << "accepted " << body;
    } catch (const GithubError& e) {
      EXPECT_EQ(std::string(e.what()).find("ghs_leaky"), std::string::npos) << e.what();
      EXPECT_EQ(e.operation(), "CreateInstallationAccessToken");
    }
  }
  FakeHttp http;
  GithubCaller caller(http, clock_, settings());
  AppInstallationTokenSource auth(caller, scope_, config());
  http.push(reply(200, R"({"id":"forty-two"})"));
  EXPECT_THROW(auth.token(), GithubError);
}

TEST_F(AppAuthTest, BadConfigurationFailsAtConstruction) {
  auto c = config();
  c.issuer = "";
  EXPECT_THROW(AppInstallationTokenSource(caller_, scope_, c), std::invalid_argument);
  c = config();
  c.private_key_pem = Secret("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n");
  EXPECT_THROW(AppInstallationTokenSource(caller_, scope_, c), std::invalid_argument);
  EXPECT_EQ(http_.count(), 0u);
}

TEST(StaticTokenSource, ReturnsItsTokenAndCannotRefresh) {
  StaticTokenSource pat(Secret("github_pat_abc"));
  EXPECT_EQ(pat.token().reveal(), "github_pat_abc");
  EXPECT_FALSE(pat.invalidate(pat.token()));
  EXPECT_THROW(StaticTokenSource(Secret("")), std::invalid_argument);
}

TEST(LoadPrivateKey, FromTextOrFile) {
  const std::string pem = test_key().pkcs1_pem;
  EXPECT_EQ(load_private_key(pem).reveal(), pem);
  char path[] = "/tmp/runpool-github-key-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << pem;
  EXPECT_EQ(load_private_key(path).reveal(), pem);
  unlink(path);
  try {
    load_private_key("/nonexistent/key.pem");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/key.pem"), std::string::npos);
  }
}

}  // namespace
}  // namespace runpool::github
