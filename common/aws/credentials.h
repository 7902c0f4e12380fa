// AWS credentials, found the way the AWS SDKs' default chain finds them:
//
//   1. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
//   2. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (+ AWS_ROLE_SESSION_NAME), through
//      STS AssumeRoleWithWebIdentity (GitHub's OIDC tokens, EKS service accounts);
//   3. the shared config and credentials files: the profile AWS_PROFILE names (else "default"),
//      its static keys, role_arn (+ source_profile / credential_source, through STS AssumeRole),
//      web_identity_token_file or credential_process (credentials_profile.h);
//   4. a container's endpoint: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI (ECS, EKS Pod
//      Identity), with AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE);
//   5. the instance role, through IMDSv2.
//
// The first source that is configured is the one used: once a source's settings are present, its
// failure is the answer (a broken profile never falls through to the instance role), and the
// error names every source tried before it. Temporary credentials are refreshed a few minutes
// before they expire. runpool-agent uses only 1 and 5 (default_credentials): an instance has its
// role, and no profile of anyone's should speak for it.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "common/aws/endpoints.h"
#include "common/aws/imds.h"
#include "common/clock.h"
#include "common/http.h"
#include "common/secret.h"

namespace runpool::aws {

struct AwsCredentials {
  std::string access_key_id;
  Secret secret_access_key;
  Secret session_token;
  std::optional<WallTime> expiration;  // nullopt: long-term keys
};

class CredentialsProvider {
 public:
  virtual ~CredentialsProvider() = default;
  // Live credentials; throws when none can be had.
  virtual AwsCredentials get() = 0;
};

// No source of credentials could be used. The message says which were tried and why each gave
// none; it never holds a secret.
class CredentialsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StaticCredentialsProvider final : public CredentialsProvider {
 public:
  explicit StaticCredentialsProvider(AwsCredentials c) : c_(std::move(c)) {}
  AwsCredentials get() override { return c_; }

 private:
  AwsCredentials c_;
};

// Reads the three variables; nullopt when the key id or the secret is missing.
std::optional<AwsCredentials> credentials_from_env(const GetEnv& getenv = real_getenv);

// Credentials that expire: fetched, kept until `refresh_before` ahead of their expiration, then
// fetched again. When a refresh fails while the kept ones are still good for more than a minute,
// those are used (a warning logged) and the refresh is tried again 30 s later; past that, the
// failure is thrown. Credentials without an expiration are kept for good. Thread-safe.
class RefreshingCredentialsProvider : public CredentialsProvider {
 public:
  AwsCredentials get() override;
  int fetches() const;  // successful fetches, for tests

 protected:
  RefreshingCredentialsProvider(Clock& clock, Duration refresh_before);
  // Fetches new credentials; throws when it cannot.
  virtual AwsCredentials fetch() = 0;

 private:
  Clock& clock_;
  Duration refresh_before_;
  mutable std::mutex mu_;
  std::optional<AwsCredentials> cached_;
  WallTime next_try_{};  // after a failed refresh that kept the cached credentials
  int fetches_ = 0;
};

// The instance role's credentials, cached until `refresh_before` ahead of their expiration.
class ImdsCredentialsProvider final : public RefreshingCredentialsProvider {
 public:
  ImdsCredentialsProvider(ImdsClient& imds, Clock& clock, Duration refresh_before = std::chrono::minutes(5));

 private:
  AwsCredentials fetch() override;
  ImdsClient& imds_;
};

struct CredentialChainOptions {
  // STS's region (web identity, role_arn): its regional endpoint, unless AWS_ENDPOINT_URL_STS or
  // AWS_ENDPOINT_URL says otherwise. "" uses us-east-1.
  std::string region;
  ImdsClient* imds = nullptr;  // null: no instance role link
  HttpClient* http = nullptr;  // for STS and the container endpoint; null: a connection of the chain's own
  // false: the environment, then the instance role (runpool-agent). true: the whole chain.
  bool shared_config = true;
  Duration refresh_before{std::chrono::minutes(5)};
  // Who asks: the default role session name ("<client>-<epoch seconds>") and the name error
  // messages give the program.
  std::string client = "runpoolctl";
};

// The chain above. Sources are looked at on the first get(), not before; the source found is
// kept for the provider's life. get() throws CredentialsError (or the chosen source's own error,
// e.g. AwsError from STS, ImdsError) when no credentials can be had.
std::unique_ptr<CredentialsProvider> credential_chain(const CredentialChainOptions& options, Clock& clock,
                                                      const GetEnv& getenv = real_getenv);

// Environment first, then the instance role (through `imds`, which may be null outside EC2).
std::unique_ptr<CredentialsProvider> default_credentials(ImdsClient* imds, Clock& clock,
                                                         const GetEnv& getenv = real_getenv);

}  // namespace runpool::aws
