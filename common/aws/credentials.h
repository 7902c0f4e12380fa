// AWS credentials: from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN), else the instance role through IMDSv2, refreshed before they expire.
#pragma once

#include <memory>
#include <mutex>
#include <optional>

#include "common/aws/endpoints.h"
#include "common/aws/imds.h"
#include "common/clock.h"
#include "common/secret.h"

namespace runpool::aws {

struct AwsCredentials {
  std::string access_key_id;
  Secret secret_access_key;
  Secret session_token;
  std::optional<WallTime> expiration;
};

class CredentialsProvider {
 public:
  virtual ~CredentialsProvider() = default;
  // Live credentials; throws when none can be had.
  virtual AwsCredentials get() = 0;
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

// The instance role's credentials, cached until `refresh_before` ahead of their expiration.
class ImdsCredentialsProvider final : public CredentialsProvider {
 public:
  ImdsCredentialsProvider(ImdsClient& imds, Clock& clock,
                          Duration refresh_before = std::chrono::minutes(5));
  AwsCredentials get() override;
  int fetches() const { return fetches_; }

 private:
  ImdsClient& imds_;
  Clock& clock_;
  Duration refresh_before_;
  std::mutex mu_;
  std::optional<AwsCredentials> cached_;
  int fetches_ = 0;
};

// Environment first, then the instance role (through `imds`, which may be null outside EC2).
std::unique_ptr<CredentialsProvider> default_credentials(ImdsClient* imds, Clock& clock,
                                                         const GetEnv& getenv = real_getenv);

}  // namespace runpool::aws
