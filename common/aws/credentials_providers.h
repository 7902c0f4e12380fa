// The sources of temporary credentials the chain (credentials.h) draws on besides the
// environment and IMDS: STS web identity and AssumeRole, a container's credentials endpoint, and
// a profile's credential_process. Each refreshes before expiry (RefreshingCredentialsProvider);
// the parsing is pure and tested on its own. No error message holds a token, key or secret.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/aws/credentials.h"
#include "common/aws/sts.h"

namespace runpool::aws {

// --- Web identity ------------------------------------------------------------------------------

struct WebIdentitySettings {
  std::string token_file;  // re-read before every AssumeRoleWithWebIdentity: its issuer rotates it
  std::string role_arn;
  std::string session_name;
  std::optional<int> duration_seconds;
};

class WebIdentityCredentialsProvider final : public RefreshingCredentialsProvider {
 public:
  WebIdentityCredentialsProvider(StsClient& sts, WebIdentitySettings settings, Clock& clock,
                                 Duration refresh_before = std::chrono::minutes(5));

 private:
  AwsCredentials fetch() override;
  StsClient& sts_;
  WebIdentitySettings settings_;
};

// The token in `path`, whitespace around it dropped. Throws CredentialsError naming the file
// (never its content) when it cannot be read or is empty.
Secret read_token_file(const std::string& path, const std::string& what);

// --- AssumeRole --------------------------------------------------------------------------------

class AssumeRoleCredentialsProvider final : public RefreshingCredentialsProvider {
 public:
  AssumeRoleCredentialsProvider(StsClient& sts, std::unique_ptr<CredentialsProvider> source,
                                AssumeRoleRequest request, Clock& clock,
                                Duration refresh_before = std::chrono::minutes(5));

 private:
  AwsCredentials fetch() override;
  StsClient& sts_;
  std::unique_ptr<CredentialsProvider> source_;
  AssumeRoleRequest request_;
};

// --- Container endpoint (ECS, EKS Pod Identity) ------------------------------------------------

inline constexpr const char* kEcsCredentialsHost = "http://169.254.170.2";

struct ContainerEndpoint {
  std::string url;
  std::string token_file;  // AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: read on every request
  Secret token;            // AWS_CONTAINER_AUTHORIZATION_TOKEN (the file wins when both are set)
};

// Whether the SDKs accept `url` as AWS_CONTAINER_CREDENTIALS_FULL_URI: any https URL; plain http
// only to a loopback host (127.0.0.0/8, [::1], localhost) or the ECS (169.254.170.2) and EKS
// (169.254.170.23, [fd00:ec2::23]) credential hosts.
bool container_url_allowed(const std::string& url);

// From the variables: RELATIVE_URI (on 169.254.170.2) first, else FULL_URI; nullopt when neither
// is set. Throws CredentialsError for a FULL_URI container_url_allowed refuses.
std::optional<ContainerEndpoint> container_endpoint_from_env(const GetEnv& getenv = real_getenv);

// The endpoint's JSON {AccessKeyId, SecretAccessKey, Token, Expiration}. Throws CredentialsError
// naming the missing or malformed field.
AwsCredentials parse_container_credentials(const std::string& body);

class ContainerCredentialsProvider final : public RefreshingCredentialsProvider {
 public:
  ContainerCredentialsProvider(HttpClient& http, ContainerEndpoint endpoint, Clock& clock,
                               Duration refresh_before = std::chrono::minutes(5));

 private:
  AwsCredentials fetch() override;
  HttpClient& http_;
  ContainerEndpoint endpoint_;
  Clock& clock_;
};

// --- credential_process ------------------------------------------------------------------------

// The command's output: {"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken"?,
// "Expiration"? (ISO 8601; absent: long-term keys)}. Throws CredentialsError naming the field.
AwsCredentials parse_credential_process_output(const std::string& stdout_text);

// Runs the command as the AWS CLI does: split into words like a POSIX shell would (quotes,
// backslashes) but run without one (no variables, no ~, no pipes), found on PATH. Its stdin and
// stderr are runpoolctl's; its stdout is read (at most 1 MiB) and parsed. A command that runs
// past `timeout` is killed.
class ProcessCredentialsProvider final : public RefreshingCredentialsProvider {
 public:
  ProcessCredentialsProvider(std::string command, std::string origin, Clock& clock,
                             Duration refresh_before = std::chrono::minutes(5),
                             Duration timeout = std::chrono::minutes(2));

 private:
  AwsCredentials fetch() override;
  std::string command_;
  std::string origin_;  // "profile dev": for messages
  Duration timeout_;
};

}  // namespace runpool::aws
