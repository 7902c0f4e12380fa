#include "common/aws/sts.h"

#include <gtest/gtest.h>

#include "common/testing/fake_http.h"
#include "common/testing/fake_env.h"

namespace runpool::aws {
namespace {

using runpool::testing::FakeHttp;

using runpool::testing::env_of;

// STS's answer, as the API reference shows it.
std::string credentials_xml(const std::string& action, const std::string& key = "ASIAEXAMPLESTS0001",
                            const std::string& expiration = "2023-11-14T23:13:20Z") {
  return "<" + action + "Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><" + action +
         "Result><AssumedRoleUser><Arn>arn:aws:sts::000000000000:assumed-role/runpoolctl/s</Arn>"
         "<AssumedRoleId>AROAEXAMPLE:s</AssumedRoleId></AssumedRoleUser><Credentials>"
         "<AccessKeyId>" + key + "</AccessKeyId><SecretAccessKey>sts-secret</SecretAccessKey>"
         "<SessionToken>sts-session-token</SessionToken><Expiration>" + expiration + "</Expiration>"
         "</Credentials></" + action + "Result><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></" +
         action + "Response>";
}

std::string sts_error_xml(const std::string& code, const std::string& message) {
  return "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type><Code>" + code +
         "</Code><Message>" + message + "</Message></Error><RequestId>r</RequestId></ErrorResponse>";
}

class Sts : public ::testing::Test {
 protected:
  FakeClock clock_{from_epoch_ms(1'700'000'000'000)};
  FakeHttp http_;
  StsClient sts_{http_, clock_, StsSettings{"https://sts.eu-west-1.amazonaws.com", "eu-west-1"}};
  AssumeRoleRequest request_{"arn:aws:iam::000000000000:role/runpoolctl", "runpoolctl-1700000000", "", std::nullopt};
  Secret token_{"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJyZXBvOmFjbWUvYXBwIn0.c2lnbmF0dXJl"};
};

TEST(StsEndpoint, RegionalInTheRegionsPartitionUnlessOverridden) {
  auto s = sts_settings("eu-west-1", env_of({}));
  EXPECT_EQ(s.endpoint, "https://sts.eu-west-1.amazonaws.com");
  EXPECT_EQ(s.region, "eu-west-1");
  EXPECT_EQ(sts_settings("cn-north-1", env_of({})).endpoint, "https://sts.cn-north-1.amazonaws.com.cn");
  EXPECT_EQ(sts_settings("cn-northwest-1", env_of({})).endpoint, "https://sts.cn-northwest-1.amazonaws.com.cn");
  EXPECT_EQ(sts_settings("us-gov-west-1", env_of({})).endpoint, "https://sts.us-gov-west-1.amazonaws.com");
  auto none = sts_settings("", env_of({}));
  EXPECT_EQ(none.endpoint, "https://sts.us-east-1.amazonaws.com");
  EXPECT_EQ(none.region, "us-east-1");
  EXPECT_EQ(sts_settings("eu-west-1", env_of({{"AWS_ENDPOINT_URL", "http://127.0.0.1:1/"}})).endpoint, "http://127.0.0.1:1");
  EXPECT_EQ(sts_settings("eu-west-1", env_of({{"AWS_ENDPOINT_URL", "http://g"}, {"AWS_ENDPOINT_URL_STS", "http://s"}}))
                .endpoint,
            "http://s");
}

TEST_F(Sts, WebIdentityIsAnUnsignedFormPost) {
  http_.push(200, credentials_xml("AssumeRoleWithWebIdentity"));
  AwsCredentials c = sts_.assume_role_with_web_identity(request_, token_);
  EXPECT_EQ(c.access_key_id, "ASIAEXAMPLESTS0001");
  EXPECT_EQ(c.secret_access_key.reveal(), "sts-secret");
  EXPECT_EQ(c.session_token.reveal(), "sts-session-token");
  ASSERT_TRUE(c.expiration);
  EXPECT_EQ(format_iso8601(*c.expiration), "2023-11-14T23:13:20Z");

  HttpRequest r = http_.last();
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, "https://sts.eu-west-1.amazonaws.com/");
  EXPECT_FALSE(r.sigv4) << "the token is the proof: no signature";
  EXPECT_EQ(runpool::testing::header_of(r, "Content-Type"), "application/x-www-form-urlencoded; charset=utf-8");
  EXPECT_EQ(r.body,
            "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A000000000000%3Arole%2F"
            "runpoolctl&RoleSessionName=runpoolctl-1700000000&WebIdentityToken=" + token_.reveal());
}

TEST_F(Sts, AssumeRoleIsSignedWithTheSourceCredentials) {
  StaticCredentialsProvider source(AwsCredentials{"AKIDSOURCE", Secret("source-secret"), Secret("source-token"), {}});
  request_.external_id = "ext id";
  request_.duration_seconds = 900;
  http_.push(200, credentials_xml("AssumeRole", "ASIAEXAMPLESTS0002"));
  EXPECT_EQ(sts_.assume_role(request_, source).access_key_id, "ASIAEXAMPLESTS0002");
  HttpRequest r = http_.last();
  ASSERT_TRUE(r.sigv4);
  EXPECT_EQ(r.sigv4->service, "sts");
  EXPECT_EQ(r.sigv4->region, "eu-west-1");
  EXPECT_EQ(r.sigv4->access_key_id, "AKIDSOURCE");
  EXPECT_EQ(r.sigv4->session_token.reveal(), "source-token");
  EXPECT_EQ(r.body,
            "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A000000000000%3Arole%2Frunpoolctl&"
            "RoleSessionName=runpoolctl-1700000000&ExternalId=ext%20id&DurationSeconds=900");
}

TEST_F(Sts, ErrorsCarryStsCodesAndNeverTheToken) {
  struct Case {
    long status;
    const char* code;
    const char* message;
  };
  for (const Case& c : std::initializer_list<Case>{
           {400, "InvalidIdentityToken", "No OpenIDConnect provider found in your account for https://issuer"},
           {400, "ExpiredTokenException", "Token expired: current date/time 1700000000 must be before 1699999999"},
           {403, "AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity"},
           {400, "ValidationError", "1 validation error detected"}}) {
    http_.push(c.status, sts_error_xml(c.code, c.message));
    try {
      sts_.assume_role_with_web_identity(request_, token_);
      ADD_FAILURE() << c.code << " is an error";
    } catch (const AwsError& e) {
      EXPECT_EQ(e.code(), c.code);
      EXPECT_EQ(e.status(), c.status);
      EXPECT_EQ(e.message(), c.message);
      EXPECT_EQ(std::string(e.what()).find(token_.reveal()), std::string::npos);
    }
  }
  EXPECT_EQ(http_.count(), 4u) << "none of these is retried";
  // An answer that quotes the token back loses it.
  http_.push(400, sts_error_xml("InvalidIdentityToken", "bad token " + token_.reveal() + " here"));
  try {
    sts_.assume_role_with_web_identity(request_, token_);
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.message(), "bad token <redacted> here");
    EXPECT_EQ(std::string(e.what()).find(token_.reveal()), std::string::npos);
  }
}

TEST_F(Sts, RetriesThrottlingServerErrorsAndIdpCommunicationErrors) {
  http_.push(400, sts_error_xml("Throttling", "Rate exceeded"));
  http_.push(503, sts_error_xml("ServiceUnavailable", ""));
  http_.push(400, sts_error_xml("IDPCommunicationError", "could not reach the provider"));
  http_.push(200, credentials_xml("AssumeRoleWithWebIdentity"));
  EXPECT_EQ(sts_.assume_role_with_web_identity(request_, token_).access_key_id, "ASIAEXAMPLESTS0001");
  EXPECT_EQ(http_.count(), 4u);

  http_.clear();
  for (int i = 0; i < 3; ++i) http_.push(400, sts_error_xml("IDPCommunicationError", "unreachable"));
  try {
    sts_.assume_role_with_web_identity(request_, token_);
    ADD_FAILURE();
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "IDPCommunicationError");
  }
  EXPECT_EQ(http_.count(), 3u);
}

TEST_F(Sts, MalformedAnswersNameWhatIsMissingNotWhatIsThere) {
  for (const std::string& body :
       {std::string("not xml <"), std::string("<Other/>"),
        credentials_xml("AssumeRole"),  // the wrong operation's wrapper
        std::string("<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
                    "<AccessKeyId>ASIAX</AccessKeyId><SecretAccessKey>sts-secret</SecretAccessKey>"
                    "<Expiration>2023-11-14T23:13:20Z</Expiration></Credentials></AssumeRoleWithWebIdentityResult>"
                    "</AssumeRoleWithWebIdentityResponse>"),
        credentials_xml("AssumeRoleWithWebIdentity", "ASIAX", "tomorrow")}) {
    http_.push(200, body);
    try {
      sts_.assume_role_with_web_identity(request_, token_);
      ADD_FAILURE() << body;
    } catch (const AwsError& e) {
      EXPECT_EQ(e.code(), "MalformedResponse");
      EXPECT_EQ(std::string(e.what()).find("sts-secret"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace runpool::aws
