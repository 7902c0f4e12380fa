#include "common/github/actions_service.h"

#include <cmath>

#include <spdlog/spdlog.h>

#include "common/github/endpoint.h"
#include "common/github/jwt.h"
#include "common/json.h"

namespace runpool::github {

std::string scope_config_url(const std::string& api_base, const OwnerScope& scope) {
  std::string server = server_for_api_base(normalize_api_base(api_base));
  while (!server.empty() && server.back() == '/') server.pop_back();
  return server + "/" + scope.web_path();
}

std::optional<WallTime> jwt_expiry_unverified(const Secret& token) {
  const std::string& t = token.reveal();
  size_t first = t.find('.');
  size_t second = first == std::string::npos ? first : t.find('.', first + 1);
  if (second == std::string::npos || t.find('.', second + 1) != std::string::npos) return std::nullopt;
  auto claims_text = base64url_decode(std::string_view(t).substr(first + 1, second - first - 1));
  if (!claims_text) return std::nullopt;
  auto claims = try_parse_json(*claims_text);
  if (!claims || !claims->isObject() || !(*claims)["exp"].isNumeric()) return std::nullopt;
  double exp = (*claims)["exp"].asDouble();
  // Past what WallTime holds (year 2262) is no expiry anyone issues.
  if (!std::isfinite(exp) || exp < 0 || exp > 9e9) return std::nullopt;
  return WallTime{std::chrono::seconds(static_cast<int64_t>(exp))};
}

ActionsServiceAuth::ActionsServiceAuth(GithubClient& github, std::string api_base, ActionsCaller& caller)
    : github_(github), api_base_(normalize_api_base(api_base)), caller_(caller) {}

ActionsServiceConnection ActionsServiceAuth::connection() {
  std::lock_guard<std::mutex> lock(mu_);
  Clock& clock = caller_.clock();
  if (!current_ || current_->expires_at - clock.now() <= caller_.settings().token_refresh_margin) {
    current_ = discover();
  }
  return *current_;
}

bool ActionsServiceAuth::invalidate(const Secret& rejected) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!current_ || !(current_->admin_token == rejected)) return false;
  current_.reset();
  return true;
}

int ActionsServiceAuth::discoveries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return discoveries_;
}

ActionsServiceConnection ActionsServiceAuth::discover() {
  const std::string op = "RunnerRegistration";
  RunnerToken registration = github_.create_registration_token();

  Json::Value body(Json::objectValue);
  body["url"] = scope_config_url(api_base_, github_.scope());
  body["runner_event"] = "register";
  ActionsRequest request;
  request.method = "POST";
  request.url = api_base_ + "/actions/runner-registration";
  request.authorization = Secret("RemoteAuth " + registration.token.reveal());
  request.body = write_json(body);
  GithubReply reply = caller_.send(op, request, /*retry_unauthorized=*/true);
  ++discoveries_;
  if (!reply.ok()) throw actions_error_from(op, reply.http);

  // The body holds the admin token: no excerpt of it in any error.
  auto doc = try_parse_json(reply.http.body);
  if (!doc || !doc->isObject()) throw GithubError(op, reply.status(), "the answer is not a JSON object");
  const Json::Value& url = (*doc)["url"];
  const Json::Value& token = (*doc)["token"];
  if (!url.isString() || url.asString().empty()) throw GithubError(op, reply.status(), "no Actions service url");
  if (!token.isString() || token.asString().empty()) throw GithubError(op, reply.status(), "no admin token");

  ActionsServiceConnection c;
  c.base_url = url.asString();
  while (!c.base_url.empty() && c.base_url.back() == '/') c.base_url.pop_back();
  if (url_origin(c.base_url).empty()) throw GithubError(op, reply.status(), "the Actions service url is not http(s)");
  c.admin_token = Secret(token.asString());
  auto expiry = jwt_expiry_unverified(c.admin_token);
  if (!expiry) throw GithubError(op, reply.status(), "the admin token is not a JWT with an exp claim");
  c.expires_at = *expiry;
  spdlog::debug("Actions service at {}, admin token for {} s", c.base_url,
                std::chrono::duration_cast<std::chrono::seconds>(c.expires_at - caller_.clock().now()).count());
  return c;
}

}  // namespace runpool::github
