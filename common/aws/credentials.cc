#include "common/aws/credentials.h"

#include <stdexcept>

namespace runpool::aws {

std::optional<AwsCredentials> credentials_from_env(const GetEnv& getenv) {
  const char* key = getenv("AWS_ACCESS_KEY_ID");
  const char* secret = getenv("AWS_SECRET_ACCESS_KEY");
  if (!key || !*key || !secret || !*secret) return std::nullopt;
  AwsCredentials c;
  c.access_key_id = key;
  c.secret_access_key = Secret(secret);
  if (const char* token = getenv("AWS_SESSION_TOKEN"); token && *token) c.session_token = Secret(token);
  return c;
}

ImdsCredentialsProvider::ImdsCredentialsProvider(ImdsClient& imds, Clock& clock, Duration refresh_before)
    : imds_(imds), clock_(clock), refresh_before_(refresh_before) {}

AwsCredentials ImdsCredentialsProvider::get() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cached_ && clock_.now() + refresh_before_ < *cached_->expiration) return *cached_;
  RoleCredentials role = imds_.role_credentials();
  ++fetches_;
  cached_ = AwsCredentials{role.access_key_id, role.secret_access_key, role.session_token, role.expiration};
  return *cached_;
}

namespace {

class ChainProvider final : public CredentialsProvider {
 public:
  ChainProvider(std::optional<AwsCredentials> env, std::unique_ptr<CredentialsProvider> role)
      : env_(std::move(env)), role_(std::move(role)) {}
  AwsCredentials get() override {
    if (env_) return *env_;
    if (role_) return role_->get();
    throw std::runtime_error(
        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run with an instance role");
  }

 private:
  std::optional<AwsCredentials> env_;
  std::unique_ptr<CredentialsProvider> role_;
};

}  // namespace

std::unique_ptr<CredentialsProvider> default_credentials(ImdsClient* imds, Clock& clock, const GetEnv& getenv) {
  std::unique_ptr<CredentialsProvider> role;
  if (imds) role = std::make_unique<ImdsCredentialsProvider>(*imds, clock);
  return std::make_unique<ChainProvider>(credentials_from_env(getenv), std::move(role));
}

}  // namespace runpool::aws
