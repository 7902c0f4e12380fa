// GithubCaller's redirect handling: GitHub answers 301 (GET) or 307 (other methods) for a renamed
// or transferred repository, with a Location on the API host; 302, 303 and 308 happen too.
#include "common/github/github_caller.h"

#include <gtest/gtest.h>

#include "common/github/auth.h"
#include "common/github/github_client.h"
#include "common/github/test_support.h"

namespace runpool::github {
namespace {

using testing::authorization_of;
using testing::FakeHttp;
using testing::LogCapture;
using testing::reply;

const std::string kApiBase = "https://ghe.example.com/api/v3";
const std::string kRedirectPat = "ghp_redirectsecret0123456789";
const std::string kOld = kApiBase + "/repos/old-owner/repo/actions/runners";
const std::string kNew = kApiBase + "/repositories/42/actions/runners";

std::string moved(long status) {
  return R"({"message":")" + std::string(status == 301 ? "Moved Permanently" : "Temporary Redirect") + R"(","url":"x"})";
}

class RedirectTest : public ::testing::Test {
 protected:
  RedirectTest() : caller_(http_, clock_, settings()), pat_(Secret(kRedirectPat)), client_(caller_, pat_, scope_) {}
  static GithubSettings settings() {
    GithubSettings s;
    s.api_base = kApiBase;
    return s;
  }
  FakeHttp http_;
  FakeClock clock_;
  GithubCaller caller_;
  StaticTokenSource pat_;
  OwnerScope scope_ = OwnerScope::parse("old-owner/repo");
  GithubClient client_;
};

TEST_F(RedirectTest, A301ToTheSameOriginIsFollowedAndLoggedOnce) {
  LogCapture log;
  http_.push(reply(301, moved(301), {{"location", kNew + "?per_page=100"}}));
  http_.push(reply(200, R"({"total_count":0,"runners":[]})"));
  EXPECT_TRUE(client_.list_runners().empty());
  ASSERT_EQ(http_.count(), 2u);
  EXPECT_EQ(http_.request(0).url, kOld + "?per_page=100");
  EXPECT_EQ(http_.request(1).url, kNew + "?per_page=100");
  EXPECT_EQ(http_.request(1).method, "GET");
  EXPECT_EQ(authorization_of(http_.request(1)), "Bearer " + kRedirectPat);
  EXPECT_EQ(caller_.redirects_followed(), 1);
  EXPECT_EQ(client_.requests_sent(), 2);

  // A second moved call follows again, without another warning.
  http_.push(reply(301, moved(301), {{"location", kNew + "/7"}}));
  http_.push(reply(404, R"({"message":"Not Found"})"));
  EXPECT_FALSE(client_.get_runner(7));
  std::string text = log.text();
  size_t first = text.find("github_owner");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("github_owner", first + 1), std::string::npos) << text;
  EXPECT_NE(text.find("[warning]"), std::string::npos) << text;
  EXPECT_NE(text.find("/repos/old-owner/repo/actions/runners"), std::string::npos) << text;
  EXPECT_NE(text.find("/repositories/42/actions/runners"), std::string::npos) << text;
  EXPECT_EQ(text.find(kRedirectPat), std::string::npos);
}

TEST_F(RedirectTest, TemporaryAndPermanentRedirectsKeepMethodAndBody) {
  for (long status : {301L, 302L, 307L, 308L}) {
    http_.clear();
    http_.push(reply(status, moved(status), {{"location", kNew + "/generate-jitconfig"}}));
    http_.push(reply(201, R"({"runner":{"id":5,"name":"n","os":"Linux","status":"offline","busy":false,)"
                          R"("ephemeral":true,"labels":[]},"encoded_jit_config":"e30="})"));
    client_.generate_jit_config({"n", 1, {"lbl"}, ""});
    ASSERT_EQ(http_.count(), 2u) << status;
    EXPECT_EQ(http_.request(1).method, "POST") << status;
    EXPECT_EQ(http_.request(1).url, kNew + "/generate-jitconfig") << status;
    EXPECT_EQ(http_.request(1).body, http_.request(0).body) << status;
    EXPECT_FALSE(http_.request(1).body.empty());
    EXPECT_EQ(testing::header_of(http_.request(1), "Content-Type"), "application/json");
  }
  http_.clear();
  http_.push(reply(307, moved(307), {{"location", kNew + "/9"}}));
  http_.push(reply(204));
  EXPECT_EQ(client_.delete_runner(9), DeleteOutcome::kDeleted);
  EXPECT_EQ(http_.request(1).method, "DELETE");
}

TEST_F(RedirectTest, ARelativeLocationIsOnTheApiOrigin) {
  http_.push(reply(301, moved(301), {{"location", "/api/v3/repositories/42/actions/runners/remove-token"}}));
  http_.push(reply(201, R"({"token":"RM","expires_at":"2030-01-01T00:00:00Z"})"));
  EXPECT_EQ(client_.create_remove_token().token.reveal(), "RM");
  EXPECT_EQ(http_.request(1).url, kNew + "/remove-token");
}

TEST_F(RedirectTest, NeverFollowsOffTheApiOriginWithTheToken) {
  for (const char* elsewhere : {"https://evil.example.com/api/v3/repositories/42/actions/runners",
                                "http://ghe.example.com/api/v3/repositories/42/actions/runners",
                                "https://ghe.example.com:8443/api/v3/repositories/42/actions/runners",
                                "//evil.example.com/x", "https://ghe.example.com.evil.example/x"}) {
    http_.clear();
    http_.push(reply(301, moved(301), {{"location", elsewhere}}));
    try {
      client_.list_runners();
      FAIL() << elsewhere;
    } catch (const GithubError& e) {
      EXPECT_NE(std::string(e.what()).find("refusing to follow a redirect off the API host"), std::string::npos)
          << e.what();
      EXPECT_EQ(std::string(e.what()).find(kRedirectPat), std::string::npos);
    }
    EXPECT_EQ(http_.count(), 1u) << elsewhere;  // nothing was sent there
  }
  http_.clear();
  http_.push(reply(302, "", {{"location", "not a url"}}));
  EXPECT_THROW(client_.list_runners(), GithubError);
  EXPECT_EQ(http_.count(), 1u);
}

TEST_F(RedirectTest, HopsAreBounded) {
  http_.on([](const HttpRequest& r) { return reply(302, "", {{"location", r.url + "x"}}); });
  try {
    client_.get_runner(1);
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 5 redirects"), std::string::npos) << e.what();
  }
  EXPECT_EQ(http_.count(), static_cast<size_t>(kMaxRedirects + 1));
}

TEST_F(RedirectTest, SeeOtherIsFollowedForAGetOnly) {
  http_.push(reply(303, "", {{"location", kNew + "/3"}}));
  http_.push(reply(200, R"({"id":3,"name":"r","os":"Linux","status":"online","busy":false,"labels":[]})"));
  EXPECT_EQ(client_.get_runner(3)->id, 3);
  EXPECT_EQ(http_.request(1).method, "GET");

  // A DELETE answered by another resource's GET would read as done: refused instead.
  http_.clear();
  http_.push(reply(303, "", {{"location", kNew + "/3"}}));
  EXPECT_THROW(client_.delete_runner(3), GithubError);
  EXPECT_EQ(http_.count(), 1u);
}

TEST_F(RedirectTest, ARedirectWithoutLocationIsTheAnswer) {
  http_.push(reply(301, R"({"message":"Moved Permanently"})"));
  try {
    client_.create_registration_token();
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 301);
  }
  EXPECT_EQ(http_.count(), 1u);
}

TEST_F(RedirectTest, RetriesApplyAfterARedirect) {
  http_.push(reply(301, moved(301), {{"location", kNew + "/1"}}));
  http_.push(reply(502, "bad gateway"));
  http_.push(reply(200, R"({"id":1,"name":"r","os":"Linux","status":"online","busy":false,"labels":[]})"));
  EXPECT_EQ(client_.get_runner(1)->id, 1);
  EXPECT_EQ(http_.count(), 3u);
  EXPECT_EQ(http_.request(2).url, kNew + "/1");
}

}  // namespace
}  // namespace runpool::github
