#include "common/aws/imds.h"

#include <cstdlib>
#include <stdexcept>

#include "common/json.h"

namespace runpool::aws {

ImdsClient::ImdsClient(HttpClient& http, Clock& clock, ImdsOptions options)
    : http_(http), clock_(clock), options_(std::move(options)) {
  endpoint_ = options_.endpoint;
  if (endpoint_.empty()) {
    const char* env = std::getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    endpoint_ = env && *env ? env : "http://169.254.169.254";
  }
  while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
}

Secret ImdsClient::token() {
  std::lock_guard<std::mutex> lock(mu_);
  // Refresh with a margin of a tenth of the TTL so a token never expires mid-request.
  if (!token_.empty() && clock_.steady_now() < token_expiry_) return token_;
  HttpRequest req;
  req.method = "PUT";
  req.url = endpoint_ + "/latest/api/token";
  req.headers.emplace_back("X-aws-ec2-metadata-token-ttl-seconds", std::to_string(options_.token_ttl.count()));
  req.timeout = options_.request_timeout;
  req.connect_timeout = options_.request_timeout;
  Secret result;
  Duration ttl = options_.token_ttl;
  with_retries(options_.retry, clock_, [&](int, bool last) -> std::optional<RetryVerdict> {
    HttpResponse resp;
    try {
      resp = http_.send(req);
    } catch (const HttpTransportError& e) {
      if (last) throw ImdsError(std::string("IMDS unreachable: ") + e.what());
      return RetryVerdict{true, std::nullopt, "connection error"};
    }
    if (resp.status == 200 && !resp.body.empty()) {
      result = Secret(resp.body);
      // IMDS echoes the TTL it granted; a shorter grant than asked for is the one that counts.
      std::string granted = resp.header("x-aws-ec2-metadata-token-ttl-seconds");
      char* end = nullptr;
      long long secs = granted.empty() ? 0 : std::strtoll(granted.c_str(), &end, 10);
      if (secs > 0 && end && *end == '\0' && std::chrono::seconds(secs) < ttl) ttl = std::chrono::seconds(secs);
      return std::nullopt;
    }
    bool retry = resp.status >= 500 || resp.status == 429;
    if (!retry || last) throw ImdsError("IMDS token request answered HTTP " + std::to_string(resp.status));
    return RetryVerdict{true, std::nullopt, "HTTP " + std::to_string(resp.status)};
  });
  ++token_fetches_;
  token_ = result;
  // In milliseconds: a tenth of a short TTL (say 5 s) is no margin at all in whole seconds.
  token_expiry_ = clock_.steady_now() + ttl - ttl / 10;
  return token_;
}

std::optional<std::string> ImdsClient::get(const std::string& path) {
  std::optional<std::string> result;
  bool refreshed_after_401 = false;
  with_retries(options_.retry, clock_, [&](int, bool last) -> std::optional<RetryVerdict> {
    HttpRequest req;
    req.url = endpoint_ + "/latest/" + path;
    req.secret_headers.emplace_back("X-aws-ec2-metadata-token", token());
    req.timeout = options_.request_timeout;
    req.connect_timeout = options_.request_timeout;
    HttpResponse resp;
    try {
      resp = http_.send(req);
    } catch (const HttpTransportError& e) {
      if (last) throw ImdsError("IMDS unreachable: " + std::string(e.what()));
      return RetryVerdict{true, std::nullopt, "connection error"};
    }
    if (resp.status == 200) {
      result = resp.body;
      return std::nullopt;
    }
    if (resp.status == 404) return std::nullopt;
    if (resp.status == 401 && !refreshed_after_401 && !last) {
      // The token expired or IMDS restarted: drop it and try once more with a new one.
      refreshed_after_401 = true;
      std::lock_guard<std::mutex> lock(mu_);
      token_ = Secret();
      return RetryVerdict{true, Duration{0}, "IMDS token rejected"};
    }
    bool retry = resp.status >= 500 || resp.status == 429;
    if (!retry || last) throw ImdsError("IMDS GET " + path + " answered HTTP " + std::to_string(resp.status));
    return RetryVerdict{true, std::nullopt, "HTTP " + std::to_string(resp.status)};
  });
  return result;
}

std::string ImdsClient::require(const std::string& path) {
  auto v = get(path);
  if (!v || v->empty()) throw ImdsError("IMDS has no " + path);
  return *v;
}

std::string ImdsClient::instance_id() { return require("meta-data/instance-id"); }
std::string ImdsClient::region() { return require("meta-data/placement/region"); }
std::string ImdsClient::instance_type() { return require("meta-data/instance-type"); }
std::optional<std::string> ImdsClient::user_data() { return get("user-data"); }
std::optional<std::string> ImdsClient::tag(const std::string& key) {
  if (!metadata_tag_key_valid(key)) {
    throw std::invalid_argument("tag key '" + key.substr(0, 128) +
                                "' cannot be read from instance metadata (letters, digits and + - = . , _ : @ only; "
                                "no spaces or '/')");
  }
  return get("meta-data/tags/instance/" + key);  // as is: see metadata_tag_key_valid
}

bool metadata_tag_key_valid(std::string_view key) {
  if (key.empty() || key.size() > 128 || key == "." || key == ".." || key == "_index") return false;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("+-=.,_:@").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// IMDS documents that are not the JSON expected are ImdsError too, so a caller handles one type.
// require_*/optional_* errors name fields, never values.
namespace {
template <typename F>
auto imds_json(F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const JsonError& e) {
    throw ImdsError(e.what());
  }
}
}  // namespace

std::optional<SpotInstanceAction> ImdsClient::spot_instance_action() {
  auto body = get("meta-data/spot/instance-action");
  if (!body) return std::nullopt;
  const std::string what = "IMDS spot/instance-action";
  return imds_json([&] {
    Json::Value doc = parse_json(*body, what);
    return SpotInstanceAction{require_string(doc, "action", what), optional_string(doc, "time", what).value_or("")};
  });
}

std::optional<std::string> ImdsClient::rebalance_notice_time() {
  auto body = get("meta-data/events/recommendations/rebalance");
  if (!body) return std::nullopt;
  const std::string what = "IMDS rebalance recommendation";
  return imds_json([&] {
    Json::Value doc = parse_json(*body, what);
    return optional_string(doc, "noticeTime", what).value_or("");
  });
}

RoleCredentials ImdsClient::role_credentials() {
  std::string roles = require("meta-data/iam/security-credentials/");
  std::string role = roles.substr(0, roles.find('\n'));
  const std::string what = "IMDS role credentials";
  std::string body = require("meta-data/iam/security-credentials/" + role);
  return imds_json([&] {
    // Not parse_json: its error quotes the text, and this text holds the secret key.
    std::optional<Json::Value> parsed = try_parse_json(body);
    if (!parsed) throw ImdsError(what + ": malformed JSON (" + std::to_string(body.size()) + " bytes)");
    const Json::Value& doc = *parsed;
    if (!doc.isObject()) throw ImdsError(what + ": expected a JSON object");
    if (auto code = optional_string(doc, "Code", what); code && *code != "Success") {
      throw ImdsError("IMDS role credentials not available: " + *code);
    }
    RoleCredentials c;
    c.access_key_id = require_string(doc, "AccessKeyId", what);
    c.secret_access_key = Secret(require_string(doc, "SecretAccessKey", what));
    c.session_token = Secret(require_string(doc, "Token", what));
    if (!parse_iso8601(require_string(doc, "Expiration", what), &c.expiration)) {
      throw ImdsError(what + ": bad Expiration");
    }
    return c;
  });
}

}  // namespace runpool::aws
