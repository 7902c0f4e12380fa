// Sends one GitHub REST call: base URL, GitHub's headers, a bearer token as a secret header, the
// shared retry policy (5xx, connection errors, primary and secondary rate limits), request
// counters. It follows GitHub's redirects on the API's own origin (a renamed or transferred
// repository answers 301, or 307 to a non-GET, with a Location there) and refuses any that would
// carry the token elsewhere. It returns the final answer whatever its status — a 404 or 422 is an
// answer the client may branch on — and throws only when no answer came at all.
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
inline constexpr int kMaxRedirects = 5;  // hops one call follows before it gives up

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
  //
  // Redirects (301, 302, 303, 307, 308 with a Location) are followed up to kMaxRedirects hops,
  // each one only to the API's own origin (scheme, host and port): one elsewhere throws
  // GithubError without sending anything there. 301, 302, 307 and 308 repeat the request as it was
  // (method and body: GitHub asks clients to repeat it verbatim); 303 is followed by a GET, and
  // only for a GET, since a POST or DELETE answered by another resource's GET would read as
  // done. The first redirect logs one warning per caller: the owner moved, github_owner is stale.
  GithubReply send(const std::string& operation, const std::string& method, const std::string& target,
                   const Secret& token, const std::string& body = "");

  const GithubSettings& settings() const { return settings_; }
  Clock& clock() { return clock_; }

  // Counters for tests and benchmarks: HTTP requests sent, retries included.
  long requests_sent() const { return requests_sent_.load(); }
  long requests_for(const std::string& operation) const;
  long redirects_followed() const { return redirects_.load(); }

 private:
  std::string url_for(const std::string& operation, const std::string& target) const;
  // One request with the retry policy (no redirect handling): the final answer.
  GithubReply send_once(const std::string& operation, const HttpRequest& request);
  // The absolute URL a Location names, on the API's origin; GithubError otherwise.
  std::string redirect_url(const std::string& operation, long status, const std::string& location) const;

  HttpClient& http_;
  Clock& clock_;
  GithubSettings settings_;
  std::string origin_;
  std::atomic<long> requests_sent_{0};
  std::atomic<long> redirects_{0};
  std::atomic<bool> warned_moved_{false};
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
