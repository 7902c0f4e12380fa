#include "common/aws/credentials.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "common/aws/credentials_profile.h"
#include "common/aws/credentials_providers.h"
#include "common/aws/shared_config.h"
#include "common/aws/sts.h"
#include "common/text.h"

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

// --- RefreshingCredentialsProvider -------------------------------------------------------------

namespace {
constexpr Duration kStillGoodFor = std::chrono::minutes(1);      // below this, a failed refresh is thrown
constexpr Duration kRetryFailedRefresh = std::chrono::seconds(30);
}  // namespace

RefreshingCredentialsProvider::RefreshingCredentialsProvider(Clock& clock, Duration refresh_before)
    : clock_(clock), refresh_before_(refresh_before) {}

int RefreshingCredentialsProvider::fetches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fetches_;
}

AwsCredentials RefreshingCredentialsProvider::get() {
  std::lock_guard<std::mutex> lock(mu_);
  const WallTime now = clock_.now();
  if (cached_ && (!cached_->expiration || now + refresh_before_ < *cached_->expiration)) return *cached_;
  const bool still_good = cached_ && now + kStillGoodFor < *cached_->expiration;
  if (still_good && now < next_try_) return *cached_;
  try {
    AwsCredentials fresh = fetch();
    ++fetches_;
    cached_ = std::move(fresh);
    return *cached_;
  } catch (const std::exception& e) {
    if (!still_good) throw;
    next_try_ = now + kRetryFailedRefresh;
    spdlog::warn("AWS credentials: refresh failed, the current ones are used until nearer their expiry: {}", e.what());
    return *cached_;
  }
}

// --- IMDS --------------------------------------------------------------------------------------

ImdsCredentialsProvider::ImdsCredentialsProvider(ImdsClient& imds, Clock& clock, Duration refresh_before)
    : RefreshingCredentialsProvider(clock, refresh_before), imds_(imds) {}

AwsCredentials ImdsCredentialsProvider::fetch() {
  RoleCredentials role = imds_.role_credentials();
  return AwsCredentials{role.access_key_id, role.secret_access_key, role.session_token, role.expiration};
}

// --- The chain ---------------------------------------------------------------------------------

namespace {

bool is_set(const char* v) { return v != nullptr && *v != '\0'; }

bool is_true(const char* v) {
  if (!is_set(v)) return false;
  return text::lower(v) == "true";
}

class ChainProvider final : public CredentialsProvider {
 public:
  ChainProvider(const CredentialChainOptions& options, Clock& clock, GetEnv getenv)
      : options_(options), clock_(clock), getenv_(std::move(getenv)) {
    if (options_.shared_config) {
      if (!options_.http) {
        own_http_ = std::make_unique<CurlHttpClient>();
        options_.http = own_http_.get();
      }
      sts_ = std::make_unique<StsClient>(*options_.http, clock_, sts_settings(options_.region, getenv_));
    }
  }

  AwsCredentials get() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (chosen_) {
      try {
        return chosen_->get();
      } catch (const CredentialsError&) {
        throw;
      } catch (const std::exception& e) {
        throw CredentialsError(chosen_name_ + ": " + e.what());
      }
    }
    using Source = std::unique_ptr<CredentialsProvider> (ChainProvider::*)(std::string*, std::string*);
    std::vector<Source> sources = {&ChainProvider::environment};
    if (options_.shared_config) {
      sources.push_back(&ChainProvider::web_identity);
      sources.push_back(&ChainProvider::profile);
      sources.push_back(&ChainProvider::container);
    }
    sources.push_back(&ChainProvider::instance_role);
    std::vector<std::string> tried;
    for (Source source : sources) {
      std::string name, why_not;
      try {
        std::unique_ptr<CredentialsProvider> p = (this->*source)(&name, &why_not);
        if (!p) {
          tried.push_back(name + ": " + why_not);
          continue;
        }
        AwsCredentials c = p->get();
        chosen_ = std::move(p);
        chosen_name_ = name;
        spdlog::debug("AWS credentials from {}", name);
        return c;
      } catch (const std::exception& e) {
        // A source whose settings are there is the one meant: its failure ends the search.
        std::string message = name + ": " + e.what();
        if (!tried.empty()) message += " (before it, " + join(tried) + ")";
        throw CredentialsError(message);
      }
    }
    throw CredentialsError("no AWS credentials: " + join(tried));
  }

 private:
  static std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
    return out;
  }

  std::string session_name() const {
    return options_.client + "-" + std::to_string(to_epoch_ms(clock_.now()) / 1000);
  }

  std::unique_ptr<CredentialsProvider> environment(std::string* name, std::string* why_not) {
    *name = "environment";
    const bool key = is_set(getenv_("AWS_ACCESS_KEY_ID")), secret = is_set(getenv_("AWS_SECRET_ACCESS_KEY"));
    if (key != secret) {
      throw CredentialsError(std::string(key ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY") + " is set but " +
                             (key ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID") + " is not");
    }
    auto c = credentials_from_env(getenv_);
    if (!c) {
      *why_not = "AWS_ACCESS_KEY_ID not set";
      return nullptr;
    }
    return std::make_unique<StaticCredentialsProvider>(std::move(*c));
  }

  std::unique_ptr<CredentialsProvider> web_identity(std::string* name, std::string* why_not) {
    *name = "web identity";
    const char* file = getenv_("AWS_WEB_IDENTITY_TOKEN_FILE");
    const char* role = getenv_("AWS_ROLE_ARN");
    if (!is_set(file)) {
      *why_not = "AWS_WEB_IDENTITY_TOKEN_FILE not set";
      return nullptr;
    }
    if (!is_set(role)) throw CredentialsError("AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not");
    *name += " (" + std::string(role) + ")";
    const char* session = getenv_("AWS_ROLE_SESSION_NAME");
    WebIdentitySettings w{file, role, is_set(session) ? session : session_name(), std::nullopt};
    return std::make_unique<WebIdentityCredentialsProvider>(*sts_, std::move(w), clock_, options_.refresh_before);
  }

  std::unique_ptr<CredentialsProvider> profile(std::string* name, std::string* why_not) {
    bool explicit_choice = false;
    const std::string profile_name = selected_profile(getenv_, &explicit_choice);
    *name = "shared config";
    config_ = load_shared_config(shared_config_paths(getenv_));
    ProfileSources s{config_, *sts_, *options_.http, options_.imds, clock_, getenv_, options_.refresh_before,
                     options_.client, session_name()};
    return profile_credentials(s, profile_name, explicit_choice, why_not);
  }

  std::unique_ptr<CredentialsProvider> container(std::string* name, std::string* why_not) {
    *name = "container";
    auto endpoint = container_endpoint_from_env(getenv_);
    if (!endpoint) {
      *why_not = "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI not set";
      return nullptr;
    }
    return std::make_unique<ContainerCredentialsProvider>(*options_.http, std::move(*endpoint), clock_,
                                                          options_.refresh_before);
  }

  std::unique_ptr<CredentialsProvider> instance_role(std::string* name, std::string* why_not) {
    *name = "instance role (IMDS)";
    if (is_true(getenv_("AWS_EC2_METADATA_DISABLED"))) {
      *why_not = "AWS_EC2_METADATA_DISABLED is true";
      return nullptr;
    }
    if (!options_.imds) {
      *why_not = "not on EC2";
      return nullptr;
    }
    return std::make_unique<ImdsCredentialsProvider>(*options_.imds, clock_, options_.refresh_before);
  }

  CredentialChainOptions options_;
  Clock& clock_;
  GetEnv getenv_;
  std::unique_ptr<CurlHttpClient> own_http_;
  std::unique_ptr<StsClient> sts_;
  SharedConfig config_;
  std::mutex mu_;
  std::unique_ptr<CredentialsProvider> chosen_;
  std::string chosen_name_;
};

}  // namespace

std::unique_ptr<CredentialsProvider> credential_chain(const CredentialChainOptions& options, Clock& clock,
                                                      const GetEnv& getenv) {
  return std::make_unique<ChainProvider>(options, clock, getenv);
}

std::unique_ptr<CredentialsProvider> default_credentials(ImdsClient* imds, Clock& clock, const GetEnv& getenv) {
  CredentialChainOptions options;
  options.imds = imds;
  options.shared_config = false;
  options.client = "runpool-agent";
  return credential_chain(options, clock, getenv);
}

}  // namespace runpool::aws
