// runpoolctl finds its AWS credentials through the standard chain, against the local cloud's STS
// and container credentials endpoint: with only a web identity token file and a role, with only
// the container variables, with only a profile in its own config file. No AWS_ACCESS_KEY_ID in
// any of these environments; the proxies accept only credentials the local cloud issued.
#include <gtest/gtest.h>

#include <fstream>

#include "common/json.h"
#include "tests/support/runpoolctl_harness.h"

namespace runpool::controller {
namespace {

using testing::CtlPool;
using testing::CtlProcess;
using testing::CtlResult;
using testing::describe;

constexpr const char* kRole = "arn:aws:iam::000000000000:role/runpoolctl";

class ControllerCredentials : public ::testing::Test {
 protected:
  // POSTs to a stand-in's test route.
  Json::Value post(const std::string& url, const Json::Value& body = Json::Value(Json::objectValue)) {
    HttpRequest req;
    req.method = "POST";
    req.url = url;
    req.headers.emplace_back("Content-Type", "application/json");
    req.body = write_json(body);
    HttpResponse resp = http_.send(req);
    EXPECT_EQ(resp.status, 200) << url << ": " << resp.body;
    return parse_json(resp.body, url);
  }
  std::string token(const std::string& sub = "repo:acme/app:environment:runpool") {
    Json::Value opts(Json::objectValue);
    opts["sub"] = sub;
    return post(cloud_.sts() + "/_localcloud/web-identity-token", opts)["token"].asString();
  }
  std::string file(const CtlPool& p, const std::string& name, const std::string& text) {
    const std::string path = p.dir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // runpoolctl with exactly `env` (plus PATH, a HOME of its own and no IMDS): no other credentials.
  CtlResult run(const CtlPool& p, std::vector<std::string> args, std::map<std::string, std::string> env) {
    env["PATH"] = "/usr/bin:/bin";
    env["HOME"] = p.dir();
    env["AWS_EC2_METADATA_DISABLED"] = "true";
    args.insert(args.begin(), {"--config", p.config_path()});
    return CtlProcess(args, env, p.dir()).wait(std::chrono::seconds(60));
  }
  void expect_init_and_status(const CtlPool& p, const std::map<std::string, std::string>& env) {
    auto init = run(p, {"--json", "init"}, env);
    ASSERT_EQ(init.exit_code, 0) << describe(init);
    EXPECT_TRUE(parse_json(init.out, "init")["table_created"].asBool());
    auto status = run(p, {"status"}, env);
    EXPECT_EQ(status.exit_code, 0) << describe(status);
  }

  runpool::testing::LocalCloud& cloud_ = runpool::testing::LocalCloud::shared();
  CurlHttpClient http_;
};

TEST_F(ControllerCredentials, WebIdentityTokenFileAndRoleAlone) {
  CtlPool p(cloud_, "cred1", "ctl-cred-1");
  const std::string jwt = token();
  expect_init_and_status(p, {{"AWS_WEB_IDENTITY_TOKEN_FILE", file(p, "token", jwt)},
                             {"AWS_ROLE_ARN", kRole},
                             {"AWS_ENDPOINT_URL_STS", cloud_.sts()}});

  // A token of a subject the role does not trust: STS's refusal, said plainly, without the token.
  const std::string other = token("repo:other/app:ref:refs/heads/main");
  auto denied = run(p, {"status"}, {{"AWS_WEB_IDENTITY_TOKEN_FILE", file(p, "other", other)},
                                    {"AWS_ROLE_ARN", kRole},
                                    {"AWS_ENDPOINT_URL_STS", cloud_.sts()}});
  EXPECT_NE(denied.exit_code, 0);
  EXPECT_NE(denied.err.find("web identity (" + std::string(kRole) + "): sts AssumeRoleWithWebIdentity: AccessDenied"),
            std::string::npos)
      << describe(denied);
  EXPECT_EQ(denied.err.find(other.substr(other.rfind('.') + 1)), std::string::npos) << "no token in the message";
  EXPECT_EQ(denied.out.find(other.substr(other.rfind('.') + 1)), std::string::npos);
}

TEST_F(ControllerCredentials, ContainerVariablesAlone) {
  CtlPool p(cloud_, "cred2", "ctl-cred-2");
  Json::Value task = post(cloud_.container() + "/_localcloud/tasks");
  expect_init_and_status(p, {{"AWS_CONTAINER_CREDENTIALS_FULL_URI", cloud_.container() + task["path"].asString()},
                             {"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                              file(p, "pod-token", task["authorizationToken"].asString())}});

  auto refused = run(p, {"status"}, {{"AWS_CONTAINER_CREDENTIALS_FULL_URI", cloud_.container() + task["path"].asString()},
                                     {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "wrong"}});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("container: the container credentials endpoint (127.0.0.1) answered HTTP 401"),
            std::string::npos)
      << describe(refused);
}

TEST_F(ControllerCredentials, ProfileInItsOwnConfigFile) {
  CtlPool p(cloud_, "cred3", "ctl-cred-3");
  auto keys = cloud_.controller_credentials();
  const std::string config = file(p, "aws-config",
                                  "# an operator's profiles\n[profile ops]\nrole_arn = " + std::string(kRole) +
                                      "\nsource_profile = base\nrole_session_name = operator\n"
                                      "[profile base]\naws_access_key_id = " + keys.access_key_id +
                                      "\naws_secret_access_key = " + keys.secret_access_key.reveal() +
                                      "\n[profile admin]\nsso_session = corp\nsso_account_id = 000000000000\n"
                                      "sso_role_name = Admin\n");
  expect_init_and_status(p, {{"AWS_CONFIG_FILE", config}, {"AWS_PROFILE", "ops"}, {"AWS_ENDPOINT_URL_STS", cloud_.sts()}});

  auto sso = run(p, {"status"}, {{"AWS_CONFIG_FILE", config}, {"AWS_PROFILE", "admin"}});
  EXPECT_NE(sso.exit_code, 0);
  EXPECT_NE(sso.err.find("profile admin signs in through IAM Identity Center (SSO)"), std::string::npos)
      << describe(sso);
  EXPECT_NE(sso.err.find("aws sso login --profile admin"), std::string::npos) << describe(sso);
}

TEST_F(ControllerCredentials, WithoutAnySourceTheErrorNamesThemAll) {
  CtlPool p(cloud_, "cred4", "ctl-cred-4");
  auto none = run(p, {"status"}, {});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("no AWS credentials: environment: AWS_ACCESS_KEY_ID not set; web identity: "
                          "AWS_WEB_IDENTITY_TOKEN_FILE not set; shared config: no "),
            std::string::npos)
      << describe(none);
  EXPECT_NE(none.err.find("instance role (IMDS): AWS_EC2_METADATA_DISABLED is true"), std::string::npos)
      << describe(none);
}

}  // namespace
}  // namespace runpool::controller
