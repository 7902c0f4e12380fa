// Sends one call to the Actions service (the scale-set API and its message queue) or to GitHub's
// runner-registration endpoint: absolute URL, the Authorization header as a secret, the retry
// policy (connection errors, 429 and 503 honouring Retry-After, other 5xx but 501), a UTF-8 BOM
// stripped from the body. Unlike GithubCaller it knows no GitHub REST rate limits and follows no
// redirects: the service's hosts differ from the API's. It returns the final answer whatever its
// status and throws only when no answer came at all.
#pragma once

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/github/github_caller.h"
#include "common/github/scaleset_errors.h"
#include "common/http.h"
#include "common/json.h"
#include "common/retry.h"
#include "common/secret.h"

namespace runpool::github {

inline constexpr const char* kActionsApiVersion = "6.0-preview";

struct ActionsServiceSettings {
  std::string user_agent = "runpool";
  // Five attempts, backoff from 1 s doubling to 30 s: what GitHub's clients do.
  RetryPolicy retry{5, std::chrono::seconds(1), std::chrono::seconds(30), std::chrono::seconds(120)};
  Duration timeout{std::chrono::seconds(30)};
  // A message poll is held by the service for about 50 s when there is nothing to say.
  Duration poll_timeout{std::chrono::seconds(90)};
  // Discovery is redone when the admin token expires within this.
  Duration token_refresh_margin{std::chrono::seconds(60)};
};

struct ActionsRequest {
  std::string method = "GET";
  std::string url;       // absolute
  Secret authorization;  // the whole header value: "Bearer …" or "RemoteAuth …"
  std::vector<std::pair<std::string, std::string>> headers;  // besides User-Agent and Content-Type
  std::string body;      // sent as JSON when not empty
  bool long_poll = false;  // poll_timeout instead of timeout
};

class ActionsCaller {
 public:
  ActionsCaller(HttpClient& http, Clock& clock, ActionsServiceSettings settings);

  // `retry_unauthorized` also retries 401 and 403 (runner-registration: a fresh registration
  // token can take a moment to be accepted). In a non-2xx answer's body the secret in
  // `authorization` is masked. No answer after the retries throws GithubError (status 0).
  GithubReply send(const std::string& operation, const ActionsRequest& request, bool retry_unauthorized = false);

  const ActionsServiceSettings& settings() const { return settings_; }
  Clock& clock() { return clock_; }
  long requests_sent() const { return requests_sent_.load(); }

 private:
  HttpClient& http_;
  Clock& clock_;
  ActionsServiceSettings settings_;
  std::atomic<long> requests_sent_{0};
};

// Whether an answer is worth another attempt: 429 and 5xx but 501; a Retry-After in seconds on
// a 429 or 503 is how long to wait.
RetryVerdict classify_actions_service(const HttpResponse& response);

// The error for a non-2xx answer: the service's {typeName, message} (short type name kept), or an
// excerpt of a text/plain body. Never typed: see throw_actions_error.
ActionsServiceError actions_error_from(const std::string& operation, const HttpResponse& response);

// Throws the typed error for the answer's exception (SessionConflictError, ScaleSetGoneError,
// SessionExpiredError for a refresh's 404, ScaleSetExistsError, RunnerNameTakenError), else
// actions_error_from's. `reply.attempts > 1` marks a taken runner name as possibly our own.
[[noreturn]] void throw_actions_error(const std::string& operation, const GithubReply& reply);

// Appends `api-version=6.0-preview` unless the URL has one.
std::string with_api_version(const std::string& url);

// Reads a 2xx answer's JSON with `parse(doc, what)`. An empty or malformed body, or one that is
// not what the service promises, throws GithubError (jsoncpp's own exceptions included) without an
// excerpt: the service's answers carry tokens.
template <typename Parse>
auto parse_actions_reply(const std::string& operation, const GithubReply& reply, Parse parse) {
  if (reply.http.body.empty()) throw GithubError(operation, reply.status(), "empty response body");
  auto doc = try_parse_json(reply.http.body);
  if (!doc) {
    throw GithubError(operation, reply.status(),
                      "malformed JSON in the response (" + std::to_string(reply.http.body.size()) + " bytes)");
  }
  try {
    return parse(*doc, "Actions service " + operation + " response");
  } catch (const JsonError& e) {
    throw GithubError(operation, reply.status(), e.what());
  } catch (const Json::Exception& e) {
    throw GithubError(operation, reply.status(), std::string("unreadable response: ") + e.what());
  }
}

}  // namespace runpool::github
