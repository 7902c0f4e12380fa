// IMDSv2: a session token (PUT, with a TTL) sent on every GET, refreshed before it expires and
// again whenever IMDS answers 401. Endpoint: AWS_EC2_METADATA_SERVICE_ENDPOINT as the AWS SDKs
// read it, else 169.254.169.254.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/http.h"
#include "common/retry.h"
#include "common/secret.h"

namespace runpool::aws {

struct RoleCredentials {
  std::string access_key_id;
  Secret secret_access_key;
  Secret session_token;
  WallTime expiration;
};

struct SpotInstanceAction {
  std::string action;  // "terminate", "stop", "hibernate"
  std::string time;    // as IMDS gave it (ISO 8601)
};

class ImdsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Whether `key` is a tag key instance metadata can serve. AWS documents ("Work with instance tags
// in instance metadata", EC2 User Guide; also its tag restrictions) that with tags in metadata an
// instance tag key may use only letters, digits and + - = . , _ : @ — no spaces, no "/" — and
// cannot be "." or ".." or "_index", at most 128 characters; and that it is read at
// /latest/meta-data/tags/instance/<key>, the key as is. Every allowed character may stand in a
// URL path segment unencoded, so the key is never percent-encoded (IMDS matches it literally).
bool metadata_tag_key_valid(std::string_view key);

struct ImdsOptions {
  std::string endpoint;  // empty: from the environment, else http://169.254.169.254
  std::chrono::seconds token_ttl{21600};
  Duration request_timeout{std::chrono::seconds(2)};
  RetryPolicy retry{4, Duration{50}, Duration{1000}, Duration{std::chrono::seconds(5)}};
};

class ImdsClient {
 public:
  ImdsClient(HttpClient& http, Clock& clock, ImdsOptions options = {});

  // GET /latest/<path>; nullopt on 404. Throws ImdsError when IMDS cannot be reached or answers
  // anything else after retries.
  std::optional<std::string> get(const std::string& path);

  std::string instance_id();
  std::string region();
  std::string instance_type();
  std::optional<std::string> user_data();
  // The instance tag `key` (needs tags in metadata); nullopt when the instance has no such tag.
  // A key IMDS cannot serve (see metadata_tag_key_valid) throws std::invalid_argument before any
  // request: it could only have come out as another path.
  std::optional<std::string> tag(const std::string& key);
  std::optional<SpotInstanceAction> spot_instance_action();
  std::optional<std::string> rebalance_notice_time();
  RoleCredentials role_credentials();  // of the instance's (first) role

  const std::string& endpoint() const { return endpoint_; }
  int token_fetches() const { return token_fetches_; }  // for tests

 private:
  Secret token();  // a live token, fetched or reused
  std::string require(const std::string& path);

  HttpClient& http_;
  Clock& clock_;
  ImdsOptions options_;
  std::string endpoint_;
  std::mutex mu_;
  Secret token_;
  std::chrono::steady_clock::time_point token_expiry_{};
  int token_fetches_ = 0;
};

}  // namespace runpool::aws
