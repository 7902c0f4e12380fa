// The credential chain and each of its sources, against FakeHttp (STS, the container endpoint,
// IMDS), temporary files (token files, the shared config files) and real child processes
// (credential_process).
#include "common/aws/credentials.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>

#include "common/aws/credentials_providers.h"
#include "common/testing/fake_http.h"
#include "common/testing/fake_env.h"

namespace runpool::aws {
namespace {

using runpool::testing::authorization_of;
using runpool::testing::FakeHttp;
using runpool::testing::reply;

// 1'700'000'000 s: 2023-11-14T22:13:20Z.
constexpr int64_t kStartMs = 1'700'000'000'000;

using runpool::testing::env_of;

std::string sts_answer(const std::string& action, const std::string& key, const std::string& expiration) {
  return "<" + action + "Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><" + action +
         "Result><Credentials><AccessKeyId>" + key + "</AccessKeyId><SecretAccessKey>secret-of-" + key +
         "</SecretAccessKey><SessionToken>token-of-" + key + "</SessionToken><Expiration>" + expiration +
         "</Expiration></Credentials></" + action + "Result></" + action + "Response>";
}

std::string sts_error(const std::string& code, const std::string& message) {
  return "<ErrorResponse><Error><Type>Sender</Type><Code>" + code + "</Code><Message>" + message +
         "</Message></Error><RequestId>r</RequestId></ErrorResponse>";
}

std::string container_answer(const std::string& key, const std::string& expiration) {
  return R"({"AccessKeyId":")" + key + R"(","SecretAccessKey":"secret-of-)" + key + R"(","Token":"token-of-)" + key +
         R"(","Expiration":")" + expiration + R"(","RoleArn":"arn:aws:iam::000000000000:role/task"})";
}

// The form field `name` of a request body, decoded ("" when absent).
std::string form_field(const std::string& body, const std::string& name) {
  size_t at = ("&" + body).find("&" + name + "=");
  if (at == std::string::npos) return "";
  std::string raw = body.substr(at + name.size() + 1);
  raw = raw.substr(0, raw.find('&'));
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '%' && i + 2 < raw.size()) {
      out += static_cast<char>(std::stoi(raw.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += raw[i];
    }
  }
  return out;
}

class CredentialChain : public ::testing::Test {
 protected:
  CredentialChain() {
    char tmpl[] = "/tmp/runpool-credentials-XXXXXX";
    dir_ = mkdtemp(tmpl);
    env_["HOME"] = dir_;
  }
  ~CredentialChain() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
    return path;
  }

  std::unique_ptr<CredentialsProvider> chain(ImdsClient* imds = nullptr) {
    CredentialChainOptions o;
    o.region = "eu-west-1";
    o.http = &http_;
    o.imds = imds;
    return credential_chain(o, clock_, env_of(env_));
  }

  // What get() throws ("" when it succeeds).
  static std::string failure(CredentialsProvider& p) {
    try {
      p.get();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }

  std::map<std::string, std::string> env_;
  FakeClock clock_{from_epoch_ms(kStartMs)};
  FakeHttp http_;
  std::string dir_;
};

// --- The environment and the order ------------------------------------------------------------

TEST_F(CredentialChain, TheEnvironmentComesFirst) {
  env_["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  env_["AWS_SECRET_ACCESS_KEY"] = "env-secret";
  env_["AWS_SESSION_TOKEN"] = "env-token";
  env_["AWS_WEB_IDENTITY_TOKEN_FILE"] = write("token", "t");
  env_["AWS_ROLE_ARN"] = "arn:aws:iam::000000000000:role/r";
  env_["AWS_CONFIG_FILE"] = write("conf", "[default]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = s\n");
  auto c = chain()->get();
  EXPECT_EQ(c.access_key_id, "AKIDENV");
  EXPECT_EQ(c.secret_access_key.reveal(), "env-secret");
  EXPECT_EQ(c.session_token.reveal(), "env-token");
  EXPECT_EQ(http_.count(), 0u);
}

TEST_F(CredentialChain, HalfAKeyPairInTheEnvironmentIsAnError) {
  env_["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  EXPECT_EQ(failure(*chain()), "environment: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  env_.erase("AWS_ACCESS_KEY_ID");
  env_["AWS_SECRET_ACCESS_KEY"] = "s";
  EXPECT_EQ(failure(*chain()), "environment: AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
}

TEST_F(CredentialChain, WhenNothingWorksTheErrorNamesEverySourceInOrder) {
  EXPECT_EQ(failure(*chain()),
            "no AWS credentials: environment: AWS_ACCESS_KEY_ID not set; web identity: AWS_WEB_IDENTITY_TOKEN_FILE "
            "not set; shared config: no " + dir_ + "/.aws/config or " + dir_ +
                "/.aws/credentials; container: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI not set; "
                "instance role (IMDS): not on EC2");
  env_["AWS_EC2_METADATA_DISABLED"] = "TRUE";
  EXPECT_NE(failure(*chain()).find("instance role (IMDS): AWS_EC2_METADATA_DISABLED is true"), std::string::npos);
}

// The IMDS of an instance whose role is "runner-role".
HttpResponse imds_answer(const HttpRequest& req, const std::string& expiration) {
  if (req.url == "http://imds.test/latest/api/token") return reply(200, "imds-token");
  if (req.url == "http://imds.test/latest/meta-data/iam/security-credentials/") return reply(200, "runner-role");
  if (req.url == "http://imds.test/latest/meta-data/iam/security-credentials/runner-role") {
    return reply(200, R"({"Code":"Success","AccessKeyId":"ASIAIMDS","SecretAccessKey":"s","Token":"t","Expiration":")" +
                          expiration + "\"}");
  }
  return reply(404);
}

TEST_F(CredentialChain, TheInstanceRoleComesLast) {
  http_.on([](const HttpRequest& r) { return imds_answer(r, "2023-11-15T04:13:20Z"); });
  ImdsOptions o;
  o.endpoint = "http://imds.test";
  ImdsClient imds(http_, clock_, o);
  auto p = chain(&imds);
  EXPECT_EQ(p->get().access_key_id, "ASIAIMDS");
  p->get();
  EXPECT_EQ(http_.count(), 3u) << "kept until near its expiration";
}

TEST_F(CredentialChain, TheAgentsChainIsTheEnvironmentThenTheInstanceRoleOnly) {
  env_["AWS_WEB_IDENTITY_TOKEN_FILE"] = write("token", "t");
  env_["AWS_ROLE_ARN"] = "arn:aws:iam::000000000000:role/r";
  env_["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = "http://127.0.0.1:9/creds";
  env_["AWS_CONFIG_FILE"] = write("config", "[default]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = s\n");
  EXPECT_EQ(failure(*default_credentials(nullptr, clock_, env_of(env_))),
            "no AWS credentials: environment: AWS_ACCESS_KEY_ID not set; instance role (IMDS): not on EC2");
  http_.on([](const HttpRequest& r) { return imds_answer(r, "2023-11-15T04:13:20Z"); });
  ImdsOptions o;
  o.endpoint = "http://imds.test";
  ImdsClient imds(http_, clock_, o);
  EXPECT_EQ(default_credentials(&imds, clock_, env_of(env_))->get().access_key_id, "ASIAIMDS");
  for (const auto& r : http_.requests()) EXPECT_EQ(r.url.rfind("http://imds.test/", 0), 0u) << r.url;
}

// --- Web identity ------------------------------------------------------------------------------

TEST_F(CredentialChain, WebIdentityReadsTheTokenFileAndRefreshesBeforeExpiry) {
  const std::string file = write("token", "first-token\n");
  env_["AWS_WEB_IDENTITY_TOKEN_FILE"] = file;
  env_["AWS_ROLE_ARN"] = "arn:aws:iam::000000000000:role/runpoolctl";
  env_["AWS_ROLE_SESSION_NAME"] = "ci-run-42";
  http_.push(200, sts_answer("AssumeRoleWithWebIdentity", "ASIAWEB1", "2023-11-14T23:13:20Z"));
  auto p = chain();
  EXPECT_EQ(p->get().access_key_id, "ASIAWEB1");
  HttpRequest r = http_.last();
  EXPECT_EQ(r.url, "https://sts.eu-west-1.amazonaws.com/");
  EXPECT_FALSE(r.sigv4);
  EXPECT_EQ(form_field(r.body, "Action"), "AssumeRoleWithWebIdentity");
  EXPECT_EQ(form_field(r.body, "WebIdentityToken"), "first-token");
  EXPECT_EQ(form_field(r.body, "RoleArn"), "arn:aws:iam::000000000000:role/runpoolctl");
  EXPECT_EQ(form_field(r.body, "RoleSessionName"), "ci-run-42");

  clock_.advance(std::chrono::minutes(50));
  EXPECT_EQ(p->get().access_key_id, "ASIAWEB1");
  EXPECT_EQ(http_.count(), 1u);
  // Within five minutes of expiring: a new call, with the token the file holds now.
  write("token", "second-token");
  clock_.advance(std::chrono::minutes(6));
  http_.push(200, sts_answer("AssumeRoleWithWebIdentity", "ASIAWEB2", "2023-11-15T00:13:20Z"));
  EXPECT_EQ(p->get().access_key_id, "ASIAWEB2");
  EXPECT_EQ(form_field(http_.last().body, "WebIdentityToken"), "second-token");
}

TEST_F(CredentialChain, WebIdentityDefaultsItsSessionNameAndHonoursTheStsEndpointVariable) {
  env_["AWS_WEB_IDENTITY_TOKEN_FILE"] = write("token", "tok");
  env_["AWS_ROLE_ARN"] = "arn:aws:iam::000000000000:role/runpoolctl";
  env_["AWS_ENDPOINT_URL_STS"] = "http://127.0.0.1:4566/";
  http_.push(200, sts_answer("AssumeRoleWithWebIdentity", "ASIAWEB1", "2023-11-14T23:13:20Z"));
  chain()->get();
  EXPECT_EQ(http_.last().url, "http://127.0.0.1:4566/");
  EXPECT_EQ(form_field(http_.last().body, "RoleSessionName"), "runpoolctl-1700000000");
}

TEST_F(CredentialChain, WebIdentityFailuresAreClearAndHoldNoToken) {
  const std::string token = "eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjF9.c2ln";
  env_["AWS_WEB_IDENTITY_TOKEN_FILE"] = write("token", token);
  EXPECT_EQ(failure(*chain()),
            "web identity: AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not (before it, environment: "
            "AWS_ACCESS_KEY_ID not set)");
  env_["AWS_ROLE_ARN"] = "arn:aws:iam::000000000000:role/runpoolctl";
  for (const auto& [code, status] : std::vector<std::pair<std::string, long>>{
           {"InvalidIdentityToken", 400}, {"ExpiredTokenException", 400}, {"AccessDenied", 403}}) {
    http_.push(status, sts_error(code, "refused"));
    std::string why = failure(*chain());
    EXPECT_EQ(why.rfind("web identity (arn:aws:iam::000000000000:role/runpoolctl): sts AssumeRoleWithWebIdentity: " +
                            code + ": refused (HTTP " + std::to_string(status) + ")",
                        0),
              0u)
        << why;
    EXPECT_EQ(why.find(token), std::string::npos);
  }
  env_["AWS_WEB_IDENTITY_TOKEN_FILE"] = dir_ + "/absent";
  std::string why = failure(*chain());
  EXPECT_NE(why.find("the web identity token file " + dir_ + "/absent cannot be read"), std::string::npos) << why;
  env_["AWS_WEB_IDENTITY_TOKEN_FILE"] = write("empty", "\n");
  EXPECT_NE(failure(*chain()).find(dir_ + "/empty is empty"), std::string::npos);
}

// --- Refreshing --------------------------------------------------------------------------------

class Scripted final : public RefreshingCredentialsProvider {
 public:
  explicit Scripted(Clock& clock) : RefreshingCredentialsProvider(clock, std::chrono::minutes(5)) {}
  std::deque<std::function<AwsCredentials()>> answers;
  int calls = 0;

 private:
  AwsCredentials fetch() override {
    ++calls;
    auto next = std::move(answers.front());
    answers.pop_front();
    return next();
  }
};

TEST_F(CredentialChain, AFailedRefreshKeepsTheCurrentCredentialsUntilAMinuteBeforeExpiry) {
  Scripted p(clock_);
  const WallTime expiry = clock_.now() + std::chrono::minutes(60);
  p.answers.push_back([&] { return AwsCredentials{"ASIA1", Secret("s"), Secret("t"), expiry}; });
  EXPECT_EQ(p.get().access_key_id, "ASIA1");
  auto fails = [] () -> AwsCredentials { throw std::runtime_error("STS is down"); };
  clock_.advance(std::chrono::minutes(56));  // in the refresh window
  p.answers.push_back(fails);
  EXPECT_EQ(p.get().access_key_id, "ASIA1");
  EXPECT_EQ(p.calls, 2);
  clock_.advance(std::chrono::seconds(10));
  EXPECT_EQ(p.get().access_key_id, "ASIA1");
  EXPECT_EQ(p.calls, 2) << "not tried again within 30 s";
  clock_.advance(std::chrono::seconds(25));
  p.answers.push_back(fails);
  EXPECT_EQ(p.get().access_key_id, "ASIA1");
  EXPECT_EQ(p.calls, 3);
  clock_.advance(std::chrono::minutes(2) + std::chrono::seconds(30));  // 25 s before expiry
  p.answers.push_back(fails);
  EXPECT_THROW(p.get(), std::runtime_error);
  p.answers.push_back([&] { return AwsCredentials{"ASIA2", Secret("s"), Secret("t"), expiry + std::chrono::hours(1)}; });
  EXPECT_EQ(p.get().access_key_id, "ASIA2");
  EXPECT_EQ(p.fetches(), 2);
}

TEST_F(CredentialChain, CredentialsWithoutExpirationAreKept) {
  Scripted p(clock_);
  p.answers.push_back([] { return AwsCredentials{"AKID", Secret("s"), Secret(), std::nullopt}; });
  p.get();
  clock_.advance(std::chrono::hours(1000));
  EXPECT_EQ(p.get().access_key_id, "AKID");
  EXPECT_EQ(p.calls, 1);
}

// --- Shared config -----------------------------------------------------------------------------

TEST_F(CredentialChain, ProfileStaticKeysTheCredentialsFileWinning) {
  std::system(("mkdir -p '" + dir_ + "/.aws'").c_str());
  write(".aws/config",
        "[default]\naws_access_key_id = AKIDCONFIG\naws_secret_access_key = config-secret\n"
        "[profile dev]\naws_access_key_id = AKIDDEV\naws_secret_access_key = dev-secret\naws_session_token = dev-token\n");
  write(".aws/credentials", "[default]\naws_access_key_id = AKIDCREDS\naws_secret_access_key = creds-secret\n");
  auto c = chain()->get();
  EXPECT_EQ(c.access_key_id, "AKIDCREDS");
  EXPECT_EQ(c.secret_access_key.reveal(), "creds-secret");
  env_["AWS_PROFILE"] = "dev";
  c = chain()->get();
  EXPECT_EQ(c.access_key_id, "AKIDDEV");
  EXPECT_EQ(c.session_token.reveal(), "dev-token");
  EXPECT_EQ(http_.count(), 0u);
}

TEST_F(CredentialChain, ProfileFromOtherFilesAndItsFailures) {
  env_["AWS_CONFIG_FILE"] = write("conf", "[profile half]\naws_access_key_id = AKID\n[profile empty]\nregion = x\n");
  env_["AWS_SHARED_CREDENTIALS_FILE"] = dir_ + "/absent";
  env_["AWS_PROFILE"] = "nope";
  EXPECT_EQ(failure(*chain()).rfind("shared config: AWS_PROFILE names profile nope, which is not in " + dir_ +
                                        "/conf or " + dir_ + "/absent",
                                    0),
            0u);
  env_["AWS_PROFILE"] = "half";
  EXPECT_EQ(failure(*chain()).rfind("shared config: profile half sets aws_access_key_id without aws_secret_access_key", 0),
            0u);
  // A profile with no credentials in it is passed over, as is a missing default profile.
  env_["AWS_PROFILE"] = "empty";
  EXPECT_NE(failure(*chain()).find("shared config: profile empty sets no credentials; container:"), std::string::npos);
  env_.erase("AWS_PROFILE");
  EXPECT_NE(failure(*chain()).find("shared config: no profile default in " + dir_ + "/conf or " + dir_ + "/absent;"),
            std::string::npos);
  // A file that does not parse stops the search.
  write("conf", "aws_access_key_id = AKID\n");
  EXPECT_EQ(failure(*chain()).rfind("shared config: " + dir_ + "/conf line 1: a line before the first [section]", 0), 0u);
}

TEST_F(CredentialChain, SsoProfilesSayWhatToRunAndStopTheSearch) {
  env_["AWS_CONFIG_FILE"] = write("conf",
                                  "[profile admin]\nsso_session = corp\nsso_account_id = 000000000000\n"
                                  "sso_role_name = Admin\n[sso-session corp]\nsso_start_url = https://corp/start\n");
  env_["AWS_PROFILE"] = "admin";
  EXPECT_EQ(failure(*chain()),
            "shared config: profile admin signs in through IAM Identity Center (SSO), which runpoolctl does not do: "
            "run `aws sso login --profile admin`, then `eval \"$(aws configure export-credentials --profile admin "
            "--format env)\"` and run runpoolctl in that shell (before it, environment: AWS_ACCESS_KEY_ID not set; "
            "web identity: AWS_WEB_IDENTITY_TOKEN_FILE not set)");
  EXPECT_EQ(http_.count(), 0u) << "neither the container endpoint nor IMDS is tried";
}

TEST_F(CredentialChain, RoleArnWithSourceProfileAssumesTheRoleSignedWithTheSource) {
  env_["AWS_CONFIG_FILE"] = write("conf",
                                  "[profile ops]\nrole_arn = arn:aws:iam::000000000000:role/runpoolctl\n"
                                  "source_profile = base\nrole_session_name = operator\nexternal_id = x-1\n"
                                  "duration_seconds = 1800\n"
                                  "[profile base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = base-secret\n"
                                  "role_arn = arn:aws:iam::000000000000:role/ignored\nsource_profile = ops\n");
  env_["AWS_PROFILE"] = "ops";
  http_.push(200, sts_answer("AssumeRole", "ASIAROLE", "2023-11-14T22:43:20Z"));
  auto p = chain();
  EXPECT_EQ(p->get().access_key_id, "ASIAROLE");
  HttpRequest r = http_.last();
  ASSERT_TRUE(r.sigv4);
  EXPECT_EQ(r.sigv4->access_key_id, "AKIDBASE") << "a source profile's own keys come before its role";
  EXPECT_EQ(r.sigv4->secret_access_key.reveal(), "base-secret");
  EXPECT_EQ(r.sigv4->region, "eu-west-1");
  EXPECT_EQ(form_field(r.body, "Action"), "AssumeRole");
  EXPECT_EQ(form_field(r.body, "RoleArn"), "arn:aws:iam::000000000000:role/runpoolctl");
  EXPECT_EQ(form_field(r.body, "RoleSessionName"), "operator");
  EXPECT_EQ(form_field(r.body, "ExternalId"), "x-1");
  EXPECT_EQ(form_field(r.body, "DurationSeconds"), "1800");
  // Refreshed before it expires.
  clock_.advance(std::chrono::minutes(26));
  http_.push(200, sts_answer("AssumeRole", "ASIAROLE2", "2023-11-14T23:43:20Z"));
  EXPECT_EQ(p->get().access_key_id, "ASIAROLE2");
}

TEST_F(CredentialChain, RoleChainsAreFollowedAndLoopsRefused) {
  env_["AWS_CONFIG_FILE"] = write("conf",
                                  "[profile outer]\nrole_arn = arn:aws:iam::000000000000:role/outer\nsource_profile = inner\n"
                                  "[profile inner]\nrole_arn = arn:aws:iam::000000000000:role/inner\nsource_profile = keys\n"
                                  "[profile keys]\naws_access_key_id = AKIDKEYS\naws_secret_access_key = k\n"
                                  "[profile a]\nrole_arn = arn:aws:iam::000000000000:role/a\nsource_profile = b\n"
                                  "[profile b]\nrole_arn = arn:aws:iam::000000000000:role/b\nsource_profile = a\n"
                                  "[profile self]\nrole_arn = arn:aws:iam::000000000000:role/s\nsource_profile = self\n"
                                  "aws_access_key_id = AKIDSELF\naws_secret_access_key = s\n"
                                  "[profile lost]\nrole_arn = arn:aws:iam::000000000000:role/l\nsource_profile = gone\n"
                                  "[profile both]\nrole_arn = r\nsource_profile = keys\ncredential_source = Environment\n"
                                  "[profile mfa]\nrole_arn = r\nsource_profile = keys\nmfa_serial = arn:mfa\n"
                                  "[profile alone]\nrole_arn = r\n"
                                  "[profile odd]\nrole_arn = r\ncredential_source = Somewhere\n"
                                  "[profile long]\nrole_arn = r\nsource_profile = keys\nduration_seconds = 99999\n");
  env_["AWS_PROFILE"] = "outer";
  http_.push(200, sts_answer("AssumeRole", "ASIAINNER", "2023-11-14T23:13:20Z"));
  http_.push(200, sts_answer("AssumeRole", "ASIAOUTER", "2023-11-14T23:13:20Z"));
  EXPECT_EQ(chain()->get().access_key_id, "ASIAOUTER");
  ASSERT_EQ(http_.count(), 2u);
  EXPECT_EQ(http_.request(0).sigv4->access_key_id, "AKIDKEYS");
  EXPECT_EQ(form_field(http_.request(0).body, "RoleArn"), "arn:aws:iam::000000000000:role/inner");
  EXPECT_EQ(http_.request(1).sigv4->access_key_id, "ASIAINNER");
  EXPECT_EQ(http_.request(1).sigv4->session_token.reveal(), "token-of-ASIAINNER");
  EXPECT_EQ(form_field(http_.request(1).body, "RoleArn"), "arn:aws:iam::000000000000:role/outer");

  auto fails_with = [&](const std::string& profile) {
    env_["AWS_PROFILE"] = profile;
    std::string why = failure(*chain());
    return why.substr(0, why.find(" (before it"));
  };
  EXPECT_EQ(fails_with("a"), "shared config: source_profile loop: a -> b -> a");
  EXPECT_EQ(fails_with("lost"), "shared config: profile gone (source_profile of lost) is not in " + dir_ + "/conf or " +
                                    dir_ + "/.aws/credentials");
  EXPECT_EQ(fails_with("both"), "shared config: profile both sets both source_profile and credential_source; keep one");
  EXPECT_NE(fails_with("mfa").find("mfa_serial needs an MFA code"), std::string::npos);
  EXPECT_EQ(fails_with("alone"),
            "shared config: profile alone: role_arn needs source_profile, credential_source or web_identity_token_file");
  EXPECT_EQ(fails_with("odd"),
            "shared config: profile odd: credential_source Somewhere is none of Environment, Ec2InstanceMetadata, "
            "EcsContainer");
  EXPECT_EQ(fails_with("long"),
            "shared config: profile long: duration_seconds must be a number of seconds from 900 to 43200");

  http_.clear();
  env_["AWS_PROFILE"] = "self";
  http_.push(200, sts_answer("AssumeRole", "ASIASELF", "2023-11-14T23:13:20Z"));
  EXPECT_EQ(chain()->get().access_key_id, "ASIASELF");
  EXPECT_EQ(http_.last().sigv4->access_key_id, "AKIDSELF");
}

TEST_F(CredentialChain, ProfileWebIdentityAndCredentialSources) {
  const std::string token_file = write("token", "profile-token");
  env_["AWS_CONFIG_FILE"] = write("conf",
                                  "[profile eks]\nrole_arn = arn:aws:iam::000000000000:role/pod\n"
                                  "web_identity_token_file = " + token_file + "\n"
                                  "[profile fromecs]\nrole_arn = arn:aws:iam::000000000000:role/r\n"
                                  "credential_source = EcsContainer\n"
                                  "[profile noid]\nweb_identity_token_file = " + token_file + "\n");
  env_["AWS_PROFILE"] = "eks";
  http_.push(200, sts_answer("AssumeRoleWithWebIdentity", "ASIAPOD", "2023-11-14T23:13:20Z"));
  EXPECT_EQ(chain()->get().access_key_id, "ASIAPOD");
  EXPECT_EQ(form_field(http_.last().body, "WebIdentityToken"), "profile-token");

  env_["AWS_PROFILE"] = "noid";
  EXPECT_EQ(failure(*chain()).rfind("shared config: profile noid: web_identity_token_file needs role_arn", 0), 0u);

  // The container's credentials as the role's source.
  env_["AWS_PROFILE"] = "fromecs";
  env_["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"] = "/v2/credentials/task-1";
  http_.push(200, container_answer("ASIATASK", "2023-11-14T23:13:20Z"));
  http_.push(200, sts_answer("AssumeRole", "ASIAFROMECS", "2023-11-14T23:13:20Z"));
  EXPECT_EQ(chain()->get().access_key_id, "ASIAFROMECS");
  EXPECT_EQ(http_.request(http_.count() - 2).url, "http://169.254.170.2/v2/credentials/task-1");
  EXPECT_EQ(http_.last().sigv4->access_key_id, "ASIATASK");
}

// --- credential_process ------------------------------------------------------------------------

TEST_F(CredentialChain, CredentialProcessRunsWithoutAShellAndIsRefreshed) {
  // A path with a space and a quoted argument, as the AWS CLI's documentation writes them.
  std::system(("mkdir -p '" + dir_ + "/my tools'").c_str());
  const std::string counter = dir_ + "/runs";
  write("my tools/creds",
        "#!/bin/sh\n"
        "[ \"$1\" = --user ] && [ \"$2\" = 'helen smith' ] && [ \"$3\" = '$HOME' ] || exit 3\n"
        "echo x >> '" + counter + "'\n"
        "n=$(wc -l < '" + counter + "' | tr -d ' ')\n"
        "echo 'a note on stderr' >&2\n"
        "printf '{\"Version\": 1, \"AccessKeyId\": \"ASIAPROC%s\", \"SecretAccessKey\": \"proc-secret\", "
        "\"SessionToken\": \"proc-token\", \"Expiration\": \"2023-11-14T23:13:20+00:00\"}' \"$n\"\n",
        0700);
  env_["AWS_CONFIG_FILE"] =
      write("conf", "[default]\ncredential_process = \"" + dir_ + "/my tools/creds\" --user \"helen smith\" $HOME\n");
  auto p = chain();
  AwsCredentials c = p->get();
  EXPECT_EQ(c.access_key_id, "ASIAPROC1");
  EXPECT_EQ(c.session_token.reveal(), "proc-token");
  ASSERT_TRUE(c.expiration);
  EXPECT_EQ(format_iso8601(*c.expiration), "2023-11-14T23:13:20Z");
  EXPECT_EQ(p->get().access_key_id, "ASIAPROC1");
  clock_.advance(std::chrono::minutes(56));
  EXPECT_EQ(p->get().access_key_id, "ASIAPROC2");
}

TEST_F(CredentialChain, CredentialProcessFailures) {
  auto run = [&](const std::string& script, Duration timeout = std::chrono::seconds(20)) {
    const std::string path = write("proc", "#!/bin/sh\n" + script, 0700);
    ProcessCredentialsProvider p(path, "profile p", clock_, std::chrono::minutes(5), timeout);
    return failure(p);
  };
  EXPECT_EQ(run("exit 7\n"), "profile p: credential_process exited with status 7 (what it wrote to stderr is above)");
  EXPECT_EQ(run("kill -9 $$\n"), "profile p: credential_process was killed by signal 9");
  EXPECT_EQ(run("echo '{\"Version\": 2, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"s3cr3t\"}'\n"),
            "profile p: credential_process output: Version must be 1");
  EXPECT_EQ(run("echo 'AccessKeyId=A SecretAccessKey=s3cr3t'\n"),
            "profile p: credential_process output is not a JSON object (37 bytes)");
  EXPECT_EQ(run("echo '{\"Version\": 1, \"SecretAccessKey\": \"s3cr3t\"}'\n"),
            "profile p: credential_process output: field 'AccessKeyId' missing");
  EXPECT_EQ(run("echo '{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"s3cr3t\", \"Expiration\": "
                "\"soon\"}'\n"),
            "profile p: credential_process output: Expiration is not an ISO 8601 time");
  EXPECT_EQ(run("sleep 5\n", Duration{300}), "profile p: credential_process ran longer than 300ms and was killed");
  ProcessCredentialsProvider missing(dir_ + "/absent --flag", "profile p", clock_);
  EXPECT_EQ(failure(missing), "profile p: credential_process: cannot run " + dir_ + "/absent: No such file or directory");
  ProcessCredentialsProvider unbalanced("\"/bin/true", "profile p", clock_);
  EXPECT_EQ(failure(unbalanced), "profile p: credential_process is not a command line (an unclosed quote?)");
  // Long-term keys: no Expiration, no refresh.
  const std::string path = write("proc", "#!/bin/sh\necho '{\"Version\":1,\"AccessKeyId\":\"AKIDLONG\",\"SecretAccessKey\":\"s\"}'\n", 0700);
  ProcessCredentialsProvider long_term(path, "profile p", clock_);
  AwsCredentials c = long_term.get();
  EXPECT_EQ(c.access_key_id, "AKIDLONG");
  EXPECT_FALSE(c.expiration);
  EXPECT_TRUE(c.session_token.empty());
}

TEST(CredentialProcessOutput, ParsesTheDocumentedShape) {
  auto c = parse_credential_process_output(
      R"({"Version":1,"AccessKeyId":"ASIA1","SecretAccessKey":"s","SessionToken":"t","Expiration":"2023-11-14T23:13:20.123Z"})");
  EXPECT_EQ(c.access_key_id, "ASIA1");
  ASSERT_TRUE(c.expiration);
  EXPECT_EQ(format_iso8601(*c.expiration), "2023-11-14T23:13:20Z");
  // Other offsets, as some tools print them.
  c = parse_credential_process_output(
      R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"s","Expiration":"2023-11-15T01:13:20+02:00"})");
  EXPECT_EQ(format_iso8601(*c.expiration), "2023-11-14T23:13:20Z");
  c = parse_credential_process_output(
      R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"s","Expiration":"2023-11-14T18:13:20-05:00"})");
  EXPECT_EQ(format_iso8601(*c.expiration), "2023-11-14T23:13:20Z");
  for (const char* bad : {R"({"AccessKeyId":"A","SecretAccessKey":"s"})", R"({"Version":"1","AccessKeyId":"A","SecretAccessKey":"s"})",
                          R"({"Version":1,"AccessKeyId":"","SecretAccessKey":"s"})", R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":7})",
                          R"([1])", ""}) {
    try {
      parse_credential_process_output(bad);
      ADD_FAILURE() << bad;
    } catch (const CredentialsError& e) {
      EXPECT_EQ(std::string(e.what()).find("\"s\""), std::string::npos);
    }
  }
}

// --- The container endpoint --------------------------------------------------------------------

TEST(ContainerEndpoint, HostsTheSdksAccept) {
  for (const char* ok : {"https://creds.example.com/x", "HTTPS://anything:8443", "http://127.0.0.1:9/creds",
                         "http://127.1.2.3/x", "http://localhost:80/x", "http://[::1]:8080/x",
                         "http://169.254.170.2/v2/credentials/1", "http://169.254.170.23/v1/credentials",
                         "http://[fd00:ec2::23]/v1/credentials", "http://user@127.0.0.1/x"}) {
    EXPECT_TRUE(container_url_allowed(ok)) << ok;
  }
  for (const char* bad : {"http://example.com/x", "http://10.0.0.1/x", "http://128.0.0.1/x", "http://127.0.0.256/x",
                          "http://127.0.0/x", "http://127.0.0.1.evil.com/x", "http://127.0.0.1@evil.com/x",
                          "http://169.254.169.254/latest", "ftp://127.0.0.1/x", "127.0.0.1/x", "http:///x",
                          "http://[fd00:ec2::254]/x", ""}) {
    EXPECT_FALSE(container_url_allowed(bad)) << bad;
  }
}

TEST(ContainerEndpoint, FromTheVariables) {
  EXPECT_FALSE(container_endpoint_from_env(env_of({})));
  auto e = container_endpoint_from_env(env_of({{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc"},
                                               {"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1/other"}}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->url, "http://169.254.170.2/v2/credentials/abc") << "the relative URI wins";
  e = container_endpoint_from_env(env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://169.254.170.23/v1/credentials"},
                                          {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "tok"},
                                          {"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "/var/run/token"}}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->url, "http://169.254.170.23/v1/credentials");
  EXPECT_EQ(e->token.reveal(), "tok");
  EXPECT_EQ(e->token_file, "/var/run/token");
  EXPECT_THROW(container_endpoint_from_env(env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://example.com/"}})),
               CredentialsError);
}

TEST_F(CredentialChain, ContainerCredentialsWithATokenFileThatWinsAndIsReRead) {
  env_["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = "http://127.0.0.1:9/v1/credentials";
  env_["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "from-variable";
  env_["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"] = write("pod-token", "from-file-1\n");
  http_.push(200, container_answer("ASIAPOD1", "2023-11-14T23:13:20Z"));
  auto p = chain();
  EXPECT_EQ(p->get().access_key_id, "ASIAPOD1");
  EXPECT_EQ(http_.last().url, "http://127.0.0.1:9/v1/credentials");
  EXPECT_EQ(http_.last().method, "GET");
  EXPECT_EQ(authorization_of(http_.last()), "from-file-1");
  write("pod-token", "from-file-2");
  clock_.advance(std::chrono::minutes(56));
  http_.push(503, "");
  http_.push(200, container_answer("ASIAPOD2", "2023-11-15T00:13:20Z"));
  EXPECT_EQ(p->get().access_key_id, "ASIAPOD2");
  EXPECT_EQ(authorization_of(http_.last()), "from-file-2");
  EXPECT_EQ(http_.count(), 3u);
}

TEST_F(CredentialChain, ContainerFailuresAreClear) {
  env_["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = "http://example.com/creds";
  EXPECT_EQ(failure(*chain()).rfind("container: AWS_CONTAINER_CREDENTIALS_FULL_URI must be https", 0), 0u);
  env_["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = "http://127.0.0.1:9/creds";
  env_["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "wrong";
  http_.push(401, R"({"Code":"AccessDenied","Message":"bad token"})");
  EXPECT_EQ(failure(*chain()).rfind(
                "container: the container credentials endpoint (127.0.0.1) answered HTTP 401: AccessDenied bad token", 0),
            0u);
  env_["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "line\r\nX-Injected: 1";
  EXPECT_EQ(failure(*chain()).rfind("container: the container authorization token holds a line break", 0), 0u);
  env_.erase("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  for (int i = 0; i < 3; ++i) http_.push_transport_error();
  EXPECT_EQ(failure(*chain()).rfind("container: the container credentials endpoint (127.0.0.1) did not answer", 0), 0u);
  http_.push(200, R"({"AccessKeyId":"ASIA","SecretAccessKey":"hidden-secret","Token":"t"})");
  std::string why = failure(*chain());
  EXPECT_NE(why.find("field 'Expiration' missing"), std::string::npos) << why;
  EXPECT_EQ(why.find("hidden-secret"), std::string::npos);
}

}  // namespace
}  // namespace runpool::aws
