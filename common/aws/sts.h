// AWS STS, the two calls a credential chain makes: AssumeRoleWithWebIdentity (unsigned: the
// token is the proof) and AssumeRole (signed with the source's credentials). The query protocol:
// a form POST of `Action=…&Version=2011-06-15&…` to the regional endpoint, XML answers, errors as
// <ErrorResponse><Error><Code>…. Neither the web identity token nor any credential is ever put in
// an error message.
#pragma once

#include <optional>
#include <string>

#include "common/aws/aws_caller.h"
#include "common/aws/credentials.h"
#include "common/aws/endpoints.h"

namespace runpool::aws {

inline constexpr const char* kStsApiVersion = "2011-06-15";

struct StsSettings {
  std::string endpoint;  // "https://sts.<region>.<partition's domain>" or an override
  std::string region;    // the signing region
};

// AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else the regional endpoint of `region`'s partition;
// without a region, the global endpoint (sts.amazonaws.com, signed for us-east-1).
StsSettings sts_settings(const std::string& region, const GetEnv& getenv = real_getenv);

struct AssumeRoleRequest {
  std::string role_arn;
  std::string session_name;
  std::string external_id;                  // AssumeRole only; "" = none
  std::optional<int> duration_seconds;      // nullopt: STS's default (1 hour)
};

class StsClient {
 public:
  StsClient(HttpClient& http, Clock& clock, StsSettings settings, RetryPolicy retry = {});

  AwsCredentials assume_role_with_web_identity(const AssumeRoleRequest& request, const Secret& token);
  AwsCredentials assume_role(const AssumeRoleRequest& request, CredentialsProvider& source);

  const StsSettings& settings() const { return settings_; }

 private:
  AwsCredentials call(const std::string& action, const std::string& form, CredentialsProvider* source,
                      const std::string& secret_in_form);

  HttpClient& http_;
  Clock& clock_;
  StsSettings settings_;
  RetryPolicy retry_;
};

// The <Credentials> of an AssumeRole* answer (`action` names the wrapper elements). Throws
// AwsError "MalformedResponse" naming what is missing, never a value.
AwsCredentials parse_sts_credentials(const std::string& action, const std::string& xml);

}  // namespace runpool::aws
