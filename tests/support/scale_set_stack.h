// The scale-set clients a test talks to the local cloud's stand-in of GitHub's Actions service
// with: a PAT for one owner (or owner/repo) scope, discovery, the scale-set client, and a second
// connection for the message long poll. Quick retries, so injected faults cost milliseconds.
#pragma once

#include <chrono>
#include <string>

#include "common/github/actions_service.h"
#include "common/github/github_client.h"
#include "common/github/scaleset_client.h"
#include "common/http.h"
#include "tests/support/local_cloud.h"

namespace runpool::testing {

struct ScaleSetStack {
  ScaleSetStack(LocalCloud& cloud, const Secret& token, const std::string& scope)
      : github_caller(http, system_clock(), github_settings(cloud)),
        pat(token),
        github(github_caller, pat, github::OwnerScope::parse(scope)),
        caller(http, system_clock(), actions_settings()),
        auth(github, cloud.github(), caller),
        client(caller, auth),
        queue_caller(queue_http, system_clock(), actions_settings()) {}

  static github::GithubSettings github_settings(LocalCloud& cloud) {
    github::GithubSettings s;
    s.api_base = cloud.github();
    s.retry = RetryPolicy{4, Duration{5}, Duration{50}, Duration{std::chrono::seconds(5)}};
    return s;
  }
  static github::ActionsServiceSettings actions_settings() {
    github::ActionsServiceSettings s;
    s.user_agent = "runpool-integration-test";
    s.retry = RetryPolicy{4, Duration{5}, Duration{50}, Duration{std::chrono::seconds(5)}};
    s.timeout = std::chrono::seconds(10);
    s.poll_timeout = std::chrono::seconds(10);
    return s;
  }

  CurlHttpClient http;
  github::GithubCaller github_caller;
  github::StaticTokenSource pat;
  github::GithubClient github;
  github::ActionsCaller caller;
  github::ActionsServiceAuth auth;
  github::ScaleSetClient client;
  CurlHttpClient queue_http;  // the long poll's own connection
  github::ActionsCaller queue_caller;
};

}  // namespace runpool::testing
