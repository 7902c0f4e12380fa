// GithubRunners' request counts are the GitHub caller's: every HTTP request sent, retries included.
#include "controller/github_runners.h"

#include <gtest/gtest.h>

#include "common/testing/fake_http.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

using runpool::testing::FakeHttp;
using runpool::testing::reply;

TEST(GithubRunners, RequestsSentCountEveryHttpRequestRetriesIncluded) {
  Settings s = testing::test_settings();
  s.github_api_url = "https://api.github.com";
  s.github_server_url = "https://github.com";
  s.github_token = Secret("ghp_0123456789");
  FakeHttp http;
  FakeClock clock;  // the retry's back-off passes at once
  GithubRunners gh(s, http, clock);
  EXPECT_EQ(gh.requests_sent(""), 0) << "nothing sent before GitHub is first used";

  const std::string runner = R"({"id":7,"name":"ci-r","os":"linux","status":"online","busy":false,"labels":[]})";
  http.push(502, R"({"message":"Server Error"})");
  http.push(200, runner);
  ASSERT_TRUE(gh.get(7).has_value());
  http.push(200, R"({"total_count":0,"runners":[]})");
  EXPECT_TRUE(gh.list().empty());

  EXPECT_EQ(http.count(), 3u);
  EXPECT_EQ(gh.requests_sent("GetRunner"), 2) << "the 502 and its retry";
  EXPECT_EQ(gh.requests_sent("ListRunners"), 1);
  EXPECT_EQ(gh.requests_sent("DeleteRunner"), 0);
  EXPECT_EQ(gh.requests_sent(""), 3);
}

}  // namespace
}  // namespace runpool::controller
