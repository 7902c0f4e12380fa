#include "common/github/actions_caller.h"

#include <spdlog/spdlog.h>

#include "common/github/endpoint.h"
#include "common/json.h"
#include "common/text.h"

namespace runpool::github {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// "GitHub.Actions.Runtime.WebApi.RunnerScaleSetNotFoundException, GitHub.Actions.Runtime.WebApi"
// → "RunnerScaleSetNotFoundException".
std::string short_type_name(const std::string& type_name) {
  std::string full = type_name.substr(0, type_name.find(','));
  size_t dot = full.rfind('.');
  return std::string(text::trim(dot == std::string::npos ? full : full.substr(dot + 1)));
}

// The URL without its query, for logs and errors.
std::string url_path_only(const std::string& url) { return url.substr(0, url.find('?')); }

}  // namespace

std::string with_api_version(const std::string& url) {
  if (url.find("api-version=") != std::string::npos) return url;
  return url + (url.find('?') == std::string::npos ? "?" : "&") + "api-version=" + kActionsApiVersion;
}

RetryVerdict classify_actions_service(const HttpResponse& response) {
  long status = response.status;
  std::string reason = "HTTP " + std::to_string(status);
  if (status != 429 && (status < 500 || status == 501)) return {false, std::nullopt, reason};
  RetryVerdict v{true, std::nullopt, reason};
  if (status == 429 || status == 503) {
    if (auto seconds = text::parse_int(response.header("retry-after")); seconds && *seconds >= 0) {
      v.wait = std::chrono::seconds(*seconds);
      v.reason += " (retry-after)";
    }
  }
  return v;
}

ActionsCaller::ActionsCaller(HttpClient& http, Clock& clock, ActionsServiceSettings settings)
    : http_(http), clock_(clock), settings_(std::move(settings)) {
  if (settings_.user_agent.empty()) settings_.user_agent = "runpool";
  if (settings_.retry.max_attempts < 1) throw std::invalid_argument("Actions service retry.max_attempts must be >= 1");
}

GithubReply ActionsCaller::send(const std::string& operation, const ActionsRequest& request, bool retry_unauthorized) {
  if (url_origin(request.url).empty()) throw GithubError(operation, 0, "not an absolute http(s) URL");
  HttpRequest http;
  http.method = request.method;
  http.url = request.url;
  http.timeout = request.long_poll ? settings_.poll_timeout : settings_.timeout;
  http.headers = request.headers;
  http.headers.emplace_back("User-Agent", settings_.user_agent);
  if (!request.body.empty()) http.headers.emplace_back("Content-Type", "application/json");
  http.secret_headers.emplace_back("Authorization", request.authorization);
  http.body = request.body;

  GithubReply reply;
  with_retries(settings_.retry, clock_, [&](int attempt, bool last) -> std::optional<RetryVerdict> {
    reply.attempts = attempt + 1;
    ++requests_sent_;
    try {
      reply.http = http_.send(http);
    } catch (const HttpTransportError& e) {
      if (last) throw GithubError(operation, 0, e.what());
      return RetryVerdict{true, std::nullopt, e.timed_out() ? "timeout" : "connection error"};
    }
    if (reply.ok()) return std::nullopt;
    RetryVerdict verdict = classify_actions_service(reply.http);
    if (retry_unauthorized && (reply.status() == 401 || reply.status() == 403)) {
      verdict = {true, std::nullopt, "unauthorized"};
    }
    if (!verdict.retry || last) return std::nullopt;  // the answer stands
    spdlog::info("Actions service {}: {}; retrying", operation, verdict.reason);
    return verdict;
  });
  std::string& body = reply.http.body;
  if (body.compare(0, kByteOrderMark.size(), kByteOrderMark) == 0) body.erase(0, kByteOrderMark.size());
  if (!reply.ok()) {
    // Mask the token itself, not the scheme word before it.
    const std::string& auth = request.authorization.reveal();
    body = Secret(auth.substr(auth.find(' ') == std::string::npos ? 0 : auth.find(' ') + 1)).masked_in(std::move(body));
  }
  spdlog::debug("Actions service {} {} {}: HTTP {} ({} attempt{})", operation, request.method,
                url_path_only(request.url), reply.status(), reply.attempts, reply.attempts == 1 ? "" : "s");
  return reply;
}

ActionsServiceError actions_error_from(const std::string& operation, const HttpResponse& response) {
  std::string message, type_name;
  auto doc = response.header("content-type").find("text/plain") == std::string::npos ? try_parse_json(response.body)
                                                                                      : std::nullopt;
  if (doc && doc->isObject()) {
    if ((*doc)["typeName"].isString()) type_name = short_type_name((*doc)["typeName"].asString());
    if ((*doc)["message"].isString()) message = text::excerpt((*doc)["message"].asString(), 500);
  } else if (!response.body.empty()) {
    message = text::excerpt(response.body, 200);
  }
  if (message.empty()) message = "HTTP " + std::to_string(response.status);
  return ActionsServiceError(operation, response.status, message, text::excerpt(type_name, 100),
                             text::excerpt(response.header("activityid"), 100));
}

void throw_actions_error(const std::string& operation, const GithubReply& reply) {
  ActionsServiceError e = actions_error_from(operation, reply.http);
  if (e.is("RunnerScaleSetSessionConflictException")) throw SessionConflictError(e);
  if (e.is("RunnerScaleSetNotFoundException")) throw ScaleSetGoneError(e);
  if (e.is("RunnerScaleSetSessionNotFoundException") || e.is("RunnerScaleSetSessionExpiredException")) {
    throw SessionExpiredError(e);
  }
  if (e.is("RunnerScaleSetExistsException")) throw ScaleSetExistsError(e);
  if (e.is("AgentExistsException")) throw RunnerNameTakenError(e, reply.attempts > 1);
  throw e;
}

}  // namespace runpool::github
