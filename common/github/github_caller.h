// Sends one GitHub REST call: base URL, GitHub's headers, a bearer token as a secret header, the
// shared retry policy (5xx, connection errors, primary and secondary rate limits), request
// counters. It returns the final answer whatever its status — a 404 or 422 is an answer the
// client may branch on — and throws only when no answer came at all.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include <json/json.h>

#include "common/clock.h"
#include "common/github/github_error.h"
#include "common/http.h"
#include "common/retry.h"
#include "common/secret.h"

namespace runpool::github {

inline constexpr const char* kApiVersion = "2022-11-28";

struct GithubSettings {
  std::string api_base = "https://api.github.com";  // or https://HOST/api/v3, https://api.SUB.ghe.com
  std::string user_agent = "runpool";                // GitHub rejects requests without one
  // A server-given wait (retry-after, rate-limit reset) longer than retry.max_server_wait is not
  // sat through: the 403/429 is surfaced at once, since retrying early only burns quota.
  RetryPolicy retry;
  Duration timeout{std::chrono::seconds(30)};
  int per_page = 100;  // 1..100
  int max_pages = 50;  // bound on every paginated listing
};

struct GithubReply {
  HttpResponse http;
  int attempts = 1;  // HTTP requests this call took, retries included
  long status() const { return http.status; }
  bool ok() const { return http.status >= 200 && http.status < 300; }
};

class GithubCaller {
 public:
  // Throws std::invalid_argument on a bad api_base, per_page or max_pages.
  GithubCaller(HttpClient& http, Clock& clock, GithubSettings settings);

  // `target` is a path under the API base ("/repos/o/r/actions/runners?per_page=100") or an
  // absolute URL on the API's own origin (a pagination link); a URL elsewhere throws GithubError
  // (the token must not travel to another host). A non-empty `body` is sent as JSON. In a non-2xx
  // answer's body, the token's clear text (should a server echo it) is masked.
  GithubReply send(const std::string& operation, const std::string& method, const std::string& target,
                   const Secret& token, const std::string& body = "");

  const GithubSettings& settings() const { return settings_; }
  Clock& clock() { return clock_; }

  // Counters for tests and benchmarks: HTTP requests sent, retries included.
  long requests_sent() const { return requests_sent_.load(); }
  long requests_for(const std::string& operation) const;

 private:
  std::string url_for(const std::string& operation, const std::string& target) const;

  HttpClient& http_;
  Clock& clock_;
  GithubSettings settings_;
  std::string origin_;
  std::atomic<long> requests_sent_{0};
  mutable std::mutex counts_mu_;
  std::map<std::string, long> counts_;
};

// The GithubError for a non-2xx answer: GitHub's message (plus its validation `errors`, if any)
// and documentation_url; a short excerpt of a body that is not GitHub's JSON.
GithubError error_from(const std::string& operation, const HttpResponse& response);

// A 2xx answer's JSON document. Malformed JSON throws GithubError naming the operation — with
// no excerpt, since successful bodies carry tokens.
Json::Value parse_body(const std::string& operation, const HttpResponse& response);

}  // namespace runpool::github
