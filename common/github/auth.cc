#include "common/github/auth.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "common/github/json_fields.h"
#include "common/json.h"

namespace runpool::github {

StaticTokenSource::StaticTokenSource(Secret token) : token_(std::move(token)) {
  if (token_.empty()) throw std::invalid_argument("GitHub token is empty");
}

Secret load_private_key(const std::string& path_or_pem) {
  if (path_or_pem.find("-----BEGIN") != std::string::npos) return Secret(path_or_pem);
  std::ifstream in(path_or_pem, std::ios::binary);
  if (!in) {
    throw std::runtime_error("GitHub App private key file '" + path_or_pem + "': " + std::strerror(errno));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return Secret(ss.str());
}

AppInstallationTokenSource::AppInstallationTokenSource(GithubCaller& caller, OwnerScope scope,
                                                       GithubAppConfig config)
    : caller_(caller), scope_(std::move(scope)), config_(std::move(config)),
      key_(RsaPrivateKey::from_pem(config_.private_key_pem)), installation_id_(config_.installation_id) {
  if (config_.issuer.empty()) throw std::invalid_argument("GitHub App: the client ID or App ID is empty");
  if (scope_.is_enterprise()) {
    throw std::invalid_argument("GitHub Apps cannot manage an enterprise's runners: use a personal access token");
  }
  config_.private_key_pem = Secret();  // parsed; no need to keep the text around
}

Secret AppInstallationTokenSource::app_jwt() const {
  return make_app_jwt(key_, config_.issuer, caller_.clock().now(), config_.jwt_lifetime);
}

int64_t AppInstallationTokenSource::installation_id() {
  std::lock_guard<std::mutex> lock(mu_);
  return installation_id_locked();
}

int64_t AppInstallationTokenSource::installation_id_locked() {
  if (installation_id_) return *installation_id_;
  const std::string op = "GetInstallation";
  GithubReply reply = caller_.send(op, "GET", scope_.installation_path(), app_jwt());
  if (!reply.ok()) throw error_from(op, reply.http);
  try {
    installation_id_ = require_int(parse_body(op, reply.http), "id", "GitHub " + op + " response");
  } catch (const JsonError& e) {
    throw GithubError(op, reply.status(), e.what());
  }
  spdlog::info("GitHub App installation for {}: {}", scope_.to_string(), *installation_id_);
  return *installation_id_;
}

Secret AppInstallationTokenSource::token() {
  std::lock_guard<std::mutex> lock(mu_);
  WallTime now = caller_.clock().now();
  if (cached_ && now < refresh_at_) return *cached_;

  int64_t id = installation_id_locked();
  const std::string op = "CreateInstallationAccessToken";
  GithubReply reply =
      caller_.send(op, "POST", "/app/installations/" + std::to_string(id) + "/access_tokens", app_jwt());
  if (!reply.ok()) {
    // A looked-up installation may have been removed and the App reinstalled: look again next time.
    if (reply.status() == 404 && !config_.installation_id) installation_id_.reset();
    throw error_from(op, reply.http);
  }
  try {
    Json::Value doc = parse_body(op, reply.http);
    const std::string what = "GitHub " + op + " response";
    Secret fresh(require_string(doc, "token", what));
    if (fresh.empty()) throw JsonError(what + ": field 'token' is empty");
    cached_expiry_ = require_time(doc, "expires_at", what);
    cached_ = std::move(fresh);
    // Refresh `refresh_margin` ahead of expiry — or halfway, for a token shorter-lived than twice
    // the margin, so that a short TTL does not mean a fetch per call.
    Duration left = std::chrono::duration_cast<Duration>(cached_expiry_ - now);
    refresh_at_ = cached_expiry_ - std::min(config_.refresh_margin, std::max(left, Duration{0}) / 2);
  } catch (const JsonError& e) {
    throw GithubError(op, reply.status(), e.what());
  }
  ++fetches_;
  spdlog::debug("GitHub App installation token for {} fetched, expires {}", scope_.to_string(),
                format_iso8601(cached_expiry_));
  return *cached_;
}

bool AppInstallationTokenSource::invalidate(const Secret& rejected) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cached_ && *cached_ == rejected) {
    spdlog::info("GitHub rejected the cached installation token for {}: fetching a new one", scope_.to_string());
    cached_.reset();
  }
  return true;
}

int AppInstallationTokenSource::token_fetches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fetches_;
}

std::optional<WallTime> AppInstallationTokenSource::cached_expiry() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!cached_) return std::nullopt;
  return cached_expiry_;
}

}  // namespace runpool::github
