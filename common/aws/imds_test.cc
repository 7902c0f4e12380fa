#include "common/aws/imds.h"

#include <gtest/gtest.h>

#include <vector>

#include <map>

#include "common/aws/credentials.h"
#include "common/testing/fake_http.h"

namespace runpool::aws {
namespace {

using runpool::testing::FakeHttp;
using runpool::testing::header_of;
using runpool::testing::secret_header_of;

// A small IMDSv2 in memory, the FakeHttp's fallback: PUT /latest/api/token issues numbered tokens;
// GETs need the current one. Paths answer 200 with their document, or 404 when unknown. Answers
// pushed on the FakeHttp go to the next requests instead.
struct ImdsServer {
  HttpResponse answer(const HttpRequest& req) {
    HttpResponse r;
    const std::string prefix = "http://imds.test/latest/";
    if (req.url.rfind(prefix, 0) != 0) {
      r.status = 400;
      return r;
    }
    std::string path = req.url.substr(prefix.size());
    if (req.method == "PUT" && path == "api/token") {
      ttl_headers.push_back(header_of(req, "X-aws-ec2-metadata-token-ttl-seconds"));
      token = "token-" + std::to_string(++issued);
      r.status = 200;
      r.body = token;
      if (!granted_ttl.empty()) r.headers["x-aws-ec2-metadata-token-ttl-seconds"] = granted_ttl;
      return r;
    }
    if (req.method != "GET") {
      r.status = 405;
      return r;
    }
    std::string sent = secret_header_of(req, "X-aws-ec2-metadata-token");
    tokens_seen.push_back(sent);
    if (sent.empty() || sent != token || reject_tokens) {
      if (reject_tokens > 0) --reject_tokens;
      r.status = 401;
      return r;
    }
    auto it = docs.find(path);
    r.status = it == docs.end() ? 404 : 200;
    if (it != docs.end()) r.body = it->second;
    return r;
  }

  std::map<std::string, std::string> docs;
  int reject_tokens = 0;  // answer 401 to this many GETs whatever their token
  std::string granted_ttl;  // echoed in the token answer when set
  std::string token;
  int issued = 0;
  std::vector<std::string> ttl_headers;
  std::vector<std::string> tokens_seen;
};

class ImdsTest : public ::testing::Test {
 protected:
  ImdsTest() : imds_(http_, clock_, options()) {
    http_.on([this](const HttpRequest& req) { return server_.answer(req); });
    server_.docs["meta-data/instance-id"] = "i-0123456789abcdef0";
    server_.docs["meta-data/placement/region"] = "eu-west-1";
    server_.docs["meta-data/instance-type"] = "m5.large";
    server_.docs["user-data"] = "#!/bin/sh\necho hi\n";
    server_.docs["meta-data/tags/instance/runpool:pool"] = "linux-x64";
    server_.docs["meta-data/iam/security-credentials/"] = "runner-role";
    server_.docs["meta-data/iam/security-credentials/runner-role"] =
        R"({"Code":"Success","LastUpdated":"2024-04-26T16:39:16Z","Type":"AWS-HMAC",)"
        R"("AccessKeyId":"ASIAIOSFODNN7EXAMPLE","SecretAccessKey":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",)"
        R"("Token":"IQoJb3JpZ2luX2VjEXAMPLETOKEN","Expiration":"2024-04-26T22:39:16Z"})";
  }

  static ImdsOptions options() {
    ImdsOptions o;
    o.endpoint = "http://imds.test/";
    o.token_ttl = std::chrono::seconds(60);
    return o;
  }

  FakeHttp http_;
  ImdsServer server_;
  FakeClock clock_;
  ImdsClient imds_;
};

TEST_F(ImdsTest, FetchesATokenWithItsTtlAndReusesIt) {
  EXPECT_EQ(imds_.instance_id(), "i-0123456789abcdef0");
  EXPECT_EQ(imds_.region(), "eu-west-1");
  EXPECT_EQ(imds_.instance_type(), "m5.large");
  EXPECT_EQ(imds_.user_data(), "#!/bin/sh\necho hi\n");
  EXPECT_EQ(imds_.endpoint(), "http://imds.test");
  EXPECT_EQ(imds_.token_fetches(), 1);
  EXPECT_EQ(server_.ttl_headers, std::vector<std::string>{"60"});
  EXPECT_EQ(http_.request(0).method, "PUT");
  EXPECT_EQ(http_.request(0).url, "http://imds.test/latest/api/token");
  EXPECT_EQ(server_.tokens_seen, (std::vector<std::string>(4, "token-1")));
  // The token travels as a secret header, never a plain one.
  for (const HttpRequest& r : http_.requests()) EXPECT_EQ(header_of(r, "X-aws-ec2-metadata-token"), "");
}

TEST_F(ImdsTest, RefreshesTheTokenBeforeItsTtlRunsOut) {
  imds_.instance_id();
  clock_.advance(std::chrono::seconds(50));  // inside the TTL less its 10% margin (54 s)
  imds_.instance_id();
  EXPECT_EQ(imds_.token_fetches(), 1);
  clock_.advance(std::chrono::seconds(5));  // 55 s: past the margin
  imds_.instance_id();
  EXPECT_EQ(imds_.token_fetches(), 2);
  EXPECT_EQ(server_.tokens_seen.back(), "token-2");
}

TEST_F(ImdsTest, ShortTtlStillKeepsAMargin) {
  ImdsOptions o = options();
  o.token_ttl = std::chrono::seconds(5);
  ImdsClient imds(http_, clock_, o);
  imds.instance_id();
  clock_.advance(std::chrono::milliseconds(4600));  // past 4.5 s: refresh rather than risk expiry
  imds.instance_id();
  EXPECT_EQ(imds.token_fetches(), 2);
}

TEST_F(ImdsTest, AShorterGrantedTtlWins) {
  server_.granted_ttl = "10";  // asked for 60
  imds_.instance_id();
  clock_.advance(std::chrono::milliseconds(9100));  // past 90% of the granted 10 s
  imds_.instance_id();
  EXPECT_EQ(imds_.token_fetches(), 2);
  server_.granted_ttl = "oops";  // garbage is ignored: the asked-for TTL stands
  clock_.advance(std::chrono::seconds(20));
  imds_.instance_id();
  EXPECT_EQ(imds_.token_fetches(), 3);
  clock_.advance(std::chrono::seconds(20));
  imds_.instance_id();
  EXPECT_EQ(imds_.token_fetches(), 3);
}

TEST_F(ImdsTest, A401DropsTheTokenAndRetriesOnceWithANewOne) {
  imds_.instance_id();
  server_.token = "rotated-by-imds";  // IMDS restarted: our token is no longer known
  EXPECT_EQ(imds_.region(), "eu-west-1");
  EXPECT_EQ(imds_.token_fetches(), 2);
  EXPECT_EQ(server_.tokens_seen, (std::vector<std::string>{"token-1", "token-1", "token-2"}));
}

TEST_F(ImdsTest, RepeatedRejectionIsAnErrorNotALoop) {
  server_.reject_tokens = 100;
  EXPECT_THROW(imds_.instance_id(), ImdsError);
  EXPECT_LE(http_.count(), 6u);
  // With a single attempt allowed, a 401 is still a clear ImdsError.
  ImdsOptions o = options();
  o.retry.max_attempts = 1;
  ImdsClient once(http_, clock_, o);
  try {
    once.instance_id();
    FAIL() << "expected ImdsError";
  } catch (const ImdsError& e) {
    EXPECT_NE(std::string(e.what()).find("401"), std::string::npos) << e.what();
  }
}

TEST_F(ImdsTest, NotFoundIsNullopt) {
  server_.docs.erase("user-data");
  EXPECT_FALSE(imds_.user_data());
  EXPECT_FALSE(imds_.spot_instance_action());
  EXPECT_FALSE(imds_.rebalance_notice_time());
  EXPECT_FALSE(imds_.tag("absent"));
  EXPECT_EQ(imds_.tag("runpool:pool"), "linux-x64");  // the key as is: IMDS matches it literally
  EXPECT_FALSE(imds_.get("meta-data/nothing-here"));
}

TEST_F(ImdsTest, TagKeysAreTheOnesInstanceMetadataCanServe) {
  // Every character AWS allows goes into the path unencoded.
  const std::string key = "Az09+-=.,_:@";
  server_.docs["meta-data/tags/instance/" + key] = "v";
  http_.clear();
  EXPECT_EQ(imds_.tag(key), "v");
  EXPECT_EQ(http_.last().url, "http://imds.test/latest/meta-data/tags/instance/" + key);
  // Spaces, '/', other punctuation, and the reserved names: refused before any request.
  size_t before = http_.count();
  for (std::string bad : std::vector<std::string>{"", "a b", "a/b", "../x", ".", "..", "_index", "a%3Ab", "a?b", "a#b", "a\nb", "é",
                          std::string(129, 'k')}) {
    EXPECT_THROW(imds_.tag(bad), std::invalid_argument) << bad;
    EXPECT_FALSE(metadata_tag_key_valid(bad)) << bad;
  }
  EXPECT_EQ(http_.count(), before);
  for (std::string good : std::vector<std::string>{"Name", "runpool:resource-class", "aws:autoscaling:groupName", "a@b", "x.", "_idx",
                           std::string(128, 'k')}) {
    EXPECT_TRUE(metadata_tag_key_valid(good)) << good;
  }
}

TEST_F(ImdsTest, RequiredDocumentsMissingAreErrors) {
  server_.docs.erase("meta-data/instance-id");
  EXPECT_THROW(imds_.instance_id(), ImdsError);
}

TEST_F(ImdsTest, ServerErrorsAreRetried) {
  http_.push(500);  // the token PUT
  EXPECT_EQ(imds_.instance_id(), "i-0123456789abcdef0");
  http_.push(503);  // GETs
  http_.push(503);
  EXPECT_EQ(imds_.region(), "eu-west-1");
  EXPECT_GT(clock_.total_slept().count(), 0);
  for (int i = 0; i < 6; ++i) http_.push(500);
  EXPECT_THROW(imds_.instance_type(), ImdsError);
}

TEST_F(ImdsTest, UnreachableIsAnImdsError) {
  FakeHttp down;
  down.on(FakeHttp::refused());
  ImdsClient imds(down, clock_, options());
  EXPECT_THROW(imds.instance_id(), ImdsError);
}

TEST_F(ImdsTest, SpotAndRebalanceNoticesParse) {
  server_.docs["meta-data/spot/instance-action"] = R"({"action": "terminate", "time": "2017-09-18T08:22:00Z"})";
  server_.docs["meta-data/events/recommendations/rebalance"] = R"({"noticeTime": "2020-10-27T08:22:00Z"})";
  auto action = imds_.spot_instance_action();
  ASSERT_TRUE(action);
  EXPECT_EQ(action->action, "terminate");
  EXPECT_EQ(action->time, "2017-09-18T08:22:00Z");
  EXPECT_EQ(imds_.rebalance_notice_time(), "2020-10-27T08:22:00Z");
}

TEST_F(ImdsTest, MalformedNoticesAreImdsErrors) {
  server_.docs["meta-data/spot/instance-action"] = R"({"action": )";
  EXPECT_THROW(imds_.spot_instance_action(), ImdsError);
  server_.docs["meta-data/spot/instance-action"] = R"({"time": "2017-09-18T08:22:00Z"})";
  EXPECT_THROW(imds_.spot_instance_action(), ImdsError);
  server_.docs["meta-data/events/recommendations/rebalance"] = "[1,2]";
  EXPECT_NO_THROW(imds_.rebalance_notice_time());  // a list has no noticeTime: empty, not a crash
  server_.docs["meta-data/events/recommendations/rebalance"] = R"({"noticeTime": 5})";
  EXPECT_THROW(imds_.rebalance_notice_time(), ImdsError);
}

TEST_F(ImdsTest, RoleCredentialsParse) {
  RoleCredentials c = imds_.role_credentials();
  EXPECT_EQ(c.access_key_id, "ASIAIOSFODNN7EXAMPLE");
  EXPECT_EQ(c.secret_access_key.reveal(), "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
  EXPECT_EQ(c.session_token.reveal(), "IQoJb3JpZ2luX2VjEXAMPLETOKEN");
  WallTime expected;
  ASSERT_TRUE(parse_iso8601("2024-04-26T22:39:16Z", &expected));
  EXPECT_EQ(c.expiration, expected);
}

TEST_F(ImdsTest, MalformedRoleCredentialsAreClearErrorsWithoutTheSecret) {
  const std::string secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  const std::string key = "meta-data/iam/security-credentials/runner-role";
  std::string full = server_.docs[key];
  for (std::string body : {full.substr(0, full.size() - 20), std::string("[]"), std::string(""),
                           std::string(R"({"Code":"Success","AccessKeyId":"A","SecretAccessKey":")") + secret +
                               R"(","Token":"T"})",
                           std::string(R"({"Code":"Success","AccessKeyId":"A","SecretAccessKey":")") + secret +
                               R"(","Token":"T","Expiration":"soon"})",
                           std::string(R"({"Code":"AssumeRoleUnauthorizedAccess","Message":"denied"})"),
                           std::string(R"({"Code":"Success","AccessKeyId":7,"SecretAccessKey":"s","Token":"t",)"
                                       R"("Expiration":"2024-04-26T22:39:16Z"})")}) {
    server_.docs[key] = body;
    try {
      imds_.role_credentials();
      FAIL() << "expected ImdsError for " << body.size() << " bytes";
    } catch (const ImdsError& e) {
      EXPECT_EQ(std::string(e.what()).find(secret.substr(0, 12)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("IMDS"), std::string::npos) << e.what();
    }
  }
  server_.docs.erase("meta-data/iam/security-credentials/");
  EXPECT_THROW(imds_.role_credentials(), ImdsError);  // no role attached
}

TEST_F(ImdsTest, CredentialsProviderCachesUntilShortlyBeforeExpiration) {
  WallTime expiration;
  ASSERT_TRUE(parse_iso8601("2024-04-26T22:39:16Z", &expiration));
  FakeClock clock(expiration - std::chrono::minutes(30));
  ImdsClient imds(http_, clock, options());
  ImdsCredentialsProvider provider(imds, clock, std::chrono::minutes(5));
  EXPECT_EQ(provider.get().access_key_id, "ASIAIOSFODNN7EXAMPLE");
  provider.get();
  EXPECT_EQ(provider.fetches(), 1);
  clock.advance(std::chrono::minutes(26));  // within 5 minutes of expiring
  provider.get();
  EXPECT_EQ(provider.fetches(), 2);
}

}  // namespace
}  // namespace runpool::aws
