// Test helpers for the scale-set client's unit tests (header only; not part of the library): a
// fixture wiring the clients over one scripted HttpClient and a fake clock, unsigned JWTs with a
// chosen expiry, and the canned answers of discovery and of a session.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/github/actions_service.h"
#include "common/github/github_client.h"
#include "common/github/jwt.h"
#include "common/github/message_session.h"
#include "common/github/scaleset_client.h"
#include "common/github/test_support.h"
#include "common/json.h"

namespace runpool::github::testing {

inline const std::string kScaleSetApi = "https://ghe.example.com/api/v3";
inline const std::string kScaleSetService = "https://pipelines.example.net/tenant";
inline const std::string kScaleSetQueue = "https://broker.example.net/scalesets/message";
inline const std::string kScaleSetPat = "ghp_scaleset_pat_0123456789";
inline const std::string kRegistrationToken = "AREGTOKEN0123456789";
inline const std::string kQueueToken = "queue-token-0001";

// An unsigned JWT whose claims are {"exp": <exp>} (the signature is never checked).
inline std::string jwt_expiring(WallTime exp, const std::string& salt = "a") {
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(exp.time_since_epoch()).count();
  return base64url_encode(R"({"alg":"RS256","typ":"JWT"})") + "." +
         base64url_encode(R"({"exp":)" + std::to_string(seconds) + R"(,"salt":")" + salt + R"("})") + ".c2ln";
}

inline std::string session_json(const std::string& queue_token, const std::string& session_id = "5f1f-session") {
  return R"({"sessionId":")" + session_id + R"(","ownerName":"host-1","messageQueueUrl":")" + kScaleSetQueue +
         R"(","messageQueueAccessToken":")" + queue_token +
         R"(","statistics":{"totalAvailableJobs":1,"totalAssignedJobs":2},"runnerScaleSet":{"id":7,"name":"rp"}})";
}

class ScaleSetFixture : public ::testing::Test {
 protected:
  ScaleSetFixture()
      : github_caller_(http_, clock_, github_settings()), pat_(Secret(kScaleSetPat)),
        github_(github_caller_, pat_, OwnerScope::parse("octo-org")), caller_(http_, clock_, actions_settings()),
        auth_(github_, kScaleSetApi, caller_), client_(caller_, auth_) {}

  static GithubSettings github_settings() {
    GithubSettings s;
    s.api_base = kScaleSetApi;
    return s;
  }
  static ActionsServiceSettings actions_settings() {
    ActionsServiceSettings s;
    s.user_agent = "runpool-test";
    return s;
  }

  // The admin token the next discovery hands out: valid for an hour from the fake clock's now.
  std::string admin_token(const std::string& salt = "a") { return jwt_expiring(clock_.now() + std::chrono::hours(1), salt); }

  // Queues one discovery's answers: the registration token, then runner-registration.
  void push_discovery(const std::string& token) {
    http_.push(reply(201, R"({"token":")" + kRegistrationToken + R"(","expires_at":"2030-01-01T00:00:00Z"})"));
    http_.push(reply(201, R"({"url":")" + kScaleSetService + R"(/","token":")" + token + R"("})"));
  }

  FakeHttp http_;
  FakeClock clock_;
  GithubCaller github_caller_;
  StaticTokenSource pat_;
  GithubClient github_;
  ActionsCaller caller_;
  ActionsServiceAuth auth_;
  ScaleSetClient client_;
};

}  // namespace runpool::github::testing
