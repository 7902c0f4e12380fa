#include "common/github/github_caller.h"

#include <spdlog/spdlog.h>

#include "common/github/endpoint.h"
#include "common/json.h"
#include "common/text.h"

namespace runpool::github {
GithubCaller::GithubCaller(HttpClient& http, Clock& clock, GithubSettings settings)
    : http_(http), clock_(clock), settings_(std::move(settings)) {
  settings_.api_base = normalize_api_base(settings_.api_base);
  origin_ = url_origin(settings_.api_base);
  if (settings_.per_page < 1 || settings_.per_page > 100) throw std::invalid_argument("GitHub per_page must be 1..100");
  if (settings_.max_pages < 1) throw std::invalid_argument("GitHub max_pages must be >= 1");
  if (settings_.user_agent.empty()) settings_.user_agent = "runpool";
}

std::string GithubCaller::url_for(const std::string& operation, const std::string& target) const {
  if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0) {
    if (url_origin(target) != origin_) {
      throw GithubError(operation, 0, "refusing to follow a link off the API host (" + url_origin(target) + ")");
    }
    return target;
  }
  if (target.empty() || target[0] != '/') throw GithubError(operation, 0, "bad request path");
  return settings_.api_base + target;
}

long GithubCaller::requests_for(const std::string& operation) const {
  std::lock_guard<std::mutex> lock(counts_mu_);
  auto it = counts_.find(operation);
  return it == counts_.end() ? 0 : it->second;
}

namespace {

bool is_redirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// The path and query of a URL on the API, for the log: "/repos/o/r/actions/runners".
std::string path_of(const std::string& url, const std::string& api_base) {
  return url.rfind(api_base, 0) == 0 ? url.substr(api_base.size()) : url;
}

}  // namespace

std::string GithubCaller::redirect_url(const std::string& operation, long status, const std::string& location) const {
  std::string url = location;
  if (url.rfind("//", 0) == 0) {
    url = origin_.substr(0, origin_.find("://") + 1) + url;  // scheme-relative
  } else if (!url.empty() && url[0] == '/') {
    url = origin_ + url;
  }
  std::string where = url_origin(url);
  if (where.empty()) {
    throw GithubError(operation, status, "redirected to '" + text::excerpt(location, 200) + "', not a URL");
  }
  if (where != origin_) {
    // The bearer token is for the API host only: never follow with it anywhere else.
    throw GithubError(operation, status,
                      "refusing to follow a redirect off the API host (to " + where + ", API at " + origin_ + ")");
  }
  return url;
}

GithubReply GithubCaller::send_once(const std::string& operation, const HttpRequest& request) {
  GithubReply reply;
  with_retries(settings_.retry, clock_, [&](int attempt, bool last) -> std::optional<RetryVerdict> {
    reply.attempts = attempt + 1;
    ++requests_sent_;
    {
      std::lock_guard<std::mutex> lock(counts_mu_);
      ++counts_[operation];
    }
    try {
      reply.http = http_.send(request);
    } catch (const HttpTransportError& e) {
      if (last) throw GithubError(operation, 0, e.what());
      return RetryVerdict{true, std::nullopt, e.timed_out() ? "timeout" : "connection error"};
    }
    if (reply.ok()) return std::nullopt;
    RetryVerdict verdict = classify_github(reply.http, clock_.now(), attempt);
    if (!verdict.retry || last) return std::nullopt;  // the answer stands
    if (verdict.wait && *verdict.wait > settings_.retry.max_server_wait) {
      spdlog::warn("GitHub {}: {} for {} s, longer than the {} s we wait: giving up", operation, verdict.reason,
                   std::chrono::duration_cast<std::chrono::seconds>(*verdict.wait).count(),
                   std::chrono::duration_cast<std::chrono::seconds>(settings_.retry.max_server_wait).count());
      return std::nullopt;
    }
    if (verdict.wait) {
      spdlog::info("GitHub {}: {}; waiting {} ms", operation, verdict.reason, verdict.wait->count());
    }
    return verdict;
  });
  return reply;
}

GithubReply GithubCaller::send(const std::string& operation, const std::string& method, const std::string& target,
                               const Secret& token, const std::string& body) {
  HttpRequest request;
  request.method = method;
  request.url = url_for(operation, target);
  request.timeout = settings_.timeout;
  request.headers = {{"Accept", "application/vnd.github+json"},
                     {"X-GitHub-Api-Version", kApiVersion},
                     {"User-Agent", settings_.user_agent}};
  if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
  request.secret_headers.emplace_back("Authorization", Secret("Bearer " + token.reveal()));
  request.body = body;

  GithubReply reply;
  int attempts = 0;
  for (int hops = 0;; ++hops) {
    reply = send_once(operation, request);
    attempts += reply.attempts;
    std::string location = reply.http.header("location");
    if (!is_redirect(reply.status()) || location.empty()) break;  // without a Location it is the answer
    if (hops == kMaxRedirects) {
      throw GithubError(operation, reply.status(),
                        "more than " + std::to_string(kMaxRedirects) + " redirects, last to " +
                            text::excerpt(path_of(location, settings_.api_base), 200));
    }
    std::string next = redirect_url(operation, reply.status(), location);
    if (reply.status() == 303) {
      if (request.method != "GET") {
        throw GithubError(operation, 303, "the server answered " + request.method + " with 303 See Other");
      }
    }
    std::string from = path_of(request.url, settings_.api_base);
    std::string to = path_of(next, settings_.api_base);
    ++redirects_;
    if (!warned_moved_.exchange(true)) {
      spdlog::warn("GitHub {}: {} {} was redirected (HTTP {}) to {}: the repository was renamed or transferred (or its "
                   "owner renamed); following the redirect, but set github_owner to the new name",
                   operation, request.method, from, reply.status(), to);
    } else {
      spdlog::debug("GitHub {}: {} {} redirected (HTTP {}) to {}", operation, request.method, from, reply.status(), to);
    }
    request.url = next;
  }
  reply.attempts = attempts;
  if (!reply.ok()) reply.http.body = token.masked_in(std::move(reply.http.body));
  spdlog::debug("GitHub {} {} {}: HTTP {} ({} attempt{})", operation, method, target, reply.status(), reply.attempts,
                reply.attempts == 1 ? "" : "s");
  return reply;
}

GithubError error_from(const std::string& operation, const HttpResponse& response) {
  std::string message, doc_url;
  auto doc = try_parse_json(response.body);
  if (doc && doc->isObject()) {
    if ((*doc)["message"].isString()) message = (*doc)["message"].asString();
    if ((*doc)["documentation_url"].isString()) doc_url = (*doc)["documentation_url"].asString();
    // Validation failures list what was wrong: [{resource, field, code, message?}].
    const Json::Value& errors = (*doc)["errors"];
    if (errors.isArray()) {
      for (const Json::Value& e : errors) {
        std::string part;
        if (e.isString()) part = e.asString();
        else if (e.isObject() && e["message"].isString()) part = e["message"].asString();
        else if (e.isObject() && e["code"].isString()) {
          part = (e["field"].isString() ? e["field"].asString() + " " : "") + e["code"].asString();
        }
        if (!part.empty()) message += (message.empty() ? "" : "; ") + part;
      }
    }
    message = text::excerpt(message, 500);
  } else if (!response.body.empty()) {
    message = text::excerpt(response.body, 200);
  }
  if (message.empty()) message = "HTTP " + std::to_string(response.status);
  return GithubError(operation, response.status, message, doc_url);
}

Json::Value parse_body(const std::string& operation, const HttpResponse& response) {
  auto doc = try_parse_json(response.body);
  if (!doc) {
    throw GithubError(operation, response.status,
                      "malformed JSON in the response (" + std::to_string(response.body.size()) + " bytes)");
  }
  return *doc;
}

}  // namespace runpool::github
