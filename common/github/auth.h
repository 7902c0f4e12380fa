// Where the bearer token comes from: a personal access token (static), or a GitHub App — an RS256
// JWT exchanged for an installation token, cached until `refresh_margin` before it expires.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/github/endpoint.h"
#include "common/github/github_caller.h"
#include "common/github/jwt.h"
#include "common/secret.h"

namespace runpool::github {

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // A token for Authorization: Bearer. Throws GithubError when none can be had.
  virtual Secret token() = 0;
  // GitHub answered 401 to `rejected`. Returns true when asking token() again may help (a cached
  // installation token, now dropped); the caller then retries once.
  virtual bool invalidate(const Secret& rejected) = 0;
};

// A personal access token (classic or fine-grained) or any other token given as is.
class StaticTokenSource final : public TokenSource {
 public:
  explicit StaticTokenSource(Secret token);  // std::invalid_argument when empty
  Secret token() override { return token_; }
  bool invalidate(const Secret&) override { return false; }

 private:
  Secret token_;
};

// The private key, given either as PEM text (starts with "-----BEGIN") or as a path to a PEM
// file. Throws std::runtime_error naming the path (never the contents) when it cannot be read.
Secret load_private_key(const std::string& path_or_pem);

struct GithubAppConfig {
  std::string issuer;      // the App's client ID ("Iv1.…"), or its App ID (older GHES: App ID only)
  Secret private_key_pem;  // see load_private_key
  std::optional<int64_t> installation_id;  // else found for the scope: GET …/installation
  // Refresh this long before expiry (at the latest halfway through a shorter-lived token).
  Duration refresh_margin{std::chrono::minutes(5)};
  Duration jwt_lifetime{std::chrono::minutes(9)};
};

// Thread-safe: concurrent token() calls share one fetch.
class AppInstallationTokenSource final : public TokenSource {
 public:
  // Parses the key at once (std::invalid_argument on a bad key or empty issuer). `caller` is used
  // for the App's own calls and must outlive this.
  AppInstallationTokenSource(GithubCaller& caller, OwnerScope scope, GithubAppConfig config);

  Secret token() override;
  bool invalidate(const Secret& rejected) override;

  // The installation id, configured or looked up (once, then remembered).
  int64_t installation_id();
  // For tests and metrics: installation tokens fetched so far, and the cached one's expiry.
  int token_fetches() const;
  std::optional<WallTime> cached_expiry() const;

 private:
  int64_t installation_id_locked();
  Secret app_jwt() const;

  GithubCaller& caller_;
  OwnerScope scope_;
  GithubAppConfig config_;
  RsaPrivateKey key_;
  mutable std::mutex mu_;
  std::optional<int64_t> installation_id_;
  std::optional<Secret> cached_;
  WallTime cached_expiry_{};
  WallTime refresh_at_{};
  int fetches_ = 0;
};

}  // namespace runpool::github
