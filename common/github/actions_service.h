// Where the Actions service is and the admin token for it. GitHub does not publish the service's
// URL: a client asks for a registration token (REST, PAT or App installation token), then posts
// it to <api>/actions/runner-registration as `RemoteAuth`, with the scope's config URL, and gets
// the service's base URL and an admin token (a JWT). The token's `exp` is read unverified, as
// GitHub's own clients do, and the whole chain is redone when it expires within the margin
// (60 s) or after the service rejected it (401). Thread-safe: concurrent callers share one
// discovery. Tokens are Secrets and appear in no log or error.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/github/actions_caller.h"
#include "common/github/github_client.h"
#include "common/secret.h"

namespace runpool::github {

struct ActionsServiceConnection {
  std::string base_url;  // without a trailing slash, e.g. https://broker.actions.githubusercontent.com/rest
  Secret admin_token;
  WallTime expires_at;
};

// The config URL runners register with for a scope under a REST API base:
// https://api.github.com + org "octo" → https://github.com/octo.
std::string scope_config_url(const std::string& api_base, const OwnerScope& scope);

// The `exp` claim of a JWT, read without verifying the signature; nullopt when `token` is not a
// JWT with a numeric exp.
std::optional<WallTime> jwt_expiry_unverified(const Secret& token);

class ActionsServiceAuth {
 public:
  // `github` makes registration tokens for its scope; `api_base` is the REST API base it uses
  // (runner-registration lives there). Both references must outlive this.
  ActionsServiceAuth(GithubClient& github, std::string api_base, ActionsCaller& caller);

  // The current connection, discovered first when there is none or its token expires within
  // settings().token_refresh_margin. Throws GithubError when discovery fails.
  ActionsServiceConnection connection();

  // The service answered 401 to `rejected`. Returns true when it was the current token, now
  // dropped: connection() will discover again and the caller may retry once.
  bool invalidate(const Secret& rejected);

  int discoveries() const;  // for tests and metrics

 private:
  ActionsServiceConnection discover();

  GithubClient& github_;
  std::string api_base_;
  ActionsCaller& caller_;
  mutable std::mutex mu_;
  std::optional<ActionsServiceConnection> current_;
  int discoveries_ = 0;
};

}  // namespace runpool::github
