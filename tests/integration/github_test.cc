// The GitHub client against the local cloud's GitHub stand-in (tests/localcloud/github): PAT and
// App authentication end to end, registration credentials, JIT configs, paginated listing,
// get/delete, labels, downloads, rate limits and injected faults, bad credentials.
#include "common/github/github_client.h"

#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/local_cloud.h"

namespace runpool::github {
namespace {

using runpool::testing::LocalCloud;
using namespace std::chrono_literals;
using std::chrono::steady_clock;

// A caller with its own connection and a quick retry policy.
struct Connection {
  explicit Connection(LocalCloud& cloud, Clock& clock = system_clock(), int per_page = 100)
      : caller(http, clock, settings(cloud, per_page)) {}
  static GithubSettings settings(LocalCloud& cloud, int per_page) {
    GithubSettings s;
    s.api_base = cloud.github();
    s.user_agent = "runpool-integration-test";
    s.retry = RetryPolicy{8, Duration{5}, Duration{50}, Duration{5s}};
    s.timeout = 10s;
    s.per_page = per_page;
    return s;
  }
  CurlHttpClient http;
  GithubCaller caller;
};

class GithubIntegration : public ::testing::Test {
 protected:
  GithubIntegration() : cloud_(LocalCloud::shared()) {}
  void TearDown() override {
    cloud_.clear_faults();
    Json::Value defaults;
    defaults["installationTokenTtlMs"] = 3600000;
    defaults["primaryLimit"] = 5000;
    cloud_.control("POST", "/_control/github/settings", defaults);
    cloud_.control("DELETE", "/_control/github/ratelimits");
  }

  // Registers a PAT for `owner` and returns it.
  std::string add_pat(const std::string& token, const std::string& owner) {
    Json::Value body;
    body["token"] = token;
    body["owners"].append(owner);
    cloud_.control("POST", "/_control/github/pats", body);
    return token;
  }

  struct App {
    int64_t app_id;
    std::string client_id;
    std::string private_key_pem;
    int64_t installation_id;
  };
  App add_app(const std::string& owner) {
    Json::Value app = cloud_.control("POST", "/_control/github/apps", Json::Value(Json::objectValue));
    Json::Value body;
    body["owner"] = owner;
    Json::Value inst =
        cloud_.control("POST", "/_control/github/apps/" + std::to_string(app["appId"].asInt64()) + "/installations", body);
    return {app["appId"].asInt64(), app["clientId"].asString(), app["privateKeyPem"].asString(),
            inst["id"].asInt64()};
  }

  Json::Value calls() { return cloud_.control("GET", "/_control/github/calls"); }
  void reset_calls() { cloud_.control("DELETE", "/_control/github/calls"); }

  LocalCloud& cloud_;
};

JitConfigRequest jit(const std::string& name, std::vector<std::string> labels = {"rp-label"}) {
  return JitConfigRequest{name, 1, std::move(labels), ""};
}

bool has_label(const std::vector<RunnerLabel>& labels, const std::string& name) {
  for (const auto& l : labels) {
    if (l.name == name) return true;
  }
  return false;
}

TEST_F(GithubIntegration, PatRunnerLifecycle) {
  Connection conn(cloud_);
  StaticTokenSource pat(Secret(add_pat("pat-lifecycle-0123456789", "pat-owner")));
  GithubClient gh(conn.caller, pat, OwnerScope::parse("pat-owner/repo-a"));

  RunnerToken reg = gh.create_registration_token();
  EXPECT_FALSE(reg.token.empty());
  EXPECT_GT(reg.expires_at, system_clock().now() + 50min);
  EXPECT_LE(reg.expires_at, system_clock().now() + 61min);
  RunnerToken rm = gh.create_remove_token();
  EXPECT_FALSE(rm.token.empty());
  EXPECT_NE(rm.token, reg.token);

  JitConfig c = gh.generate_jit_config({"rp-i-0001", 1, {"rp-run-42", "gpu"}, "_work"});
  EXPECT_GT(c.runner.id, 0);
  EXPECT_EQ(c.runner.name, "rp-i-0001");
  EXPECT_TRUE(c.runner.ephemeral);
  EXPECT_FALSE(c.encoded_jit_config.empty());
  EXPECT_TRUE(has_label(c.runner.labels, "rp-run-42"));
  EXPECT_TRUE(has_label(c.runner.labels, "self-hosted"));

  try {
    gh.generate_jit_config(jit("rp-i-0001"));
    FAIL() << "a taken name was accepted";
  } catch (const RunnerNameTakenError& e) {
    EXPECT_EQ(e.status(), 409);
    EXPECT_FALSE(e.after_retry());
  }

  auto got = gh.get_runner(c.runner.id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->name, "rp-i-0001");
  EXPECT_EQ(got->status, "offline");  // no Listener holds a session
  EXPECT_FALSE(got->busy);
  EXPECT_EQ(got->runner_group_id, 1);
  auto named = gh.list_runners("RP-I-0001");
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].id, c.runner.id);

  // Labels.
  EXPECT_TRUE(has_label(gh.list_labels(c.runner.id), "gpu"));
  EXPECT_TRUE(has_label(gh.add_labels(c.runner.id, {"extra"}), "extra"));
  auto set = gh.set_labels(c.runner.id, {"x", "y"});
  EXPECT_TRUE(has_label(set, "x"));
  EXPECT_FALSE(has_label(set, "gpu"));
  EXPECT_TRUE(has_label(set, "self-hosted"));  // read-only labels stay
  auto removed = gh.remove_label(c.runner.id, "x");
  EXPECT_FALSE(has_label(removed, "x"));
  EXPECT_TRUE(has_label(removed, "y"));
  try {
    gh.remove_label(c.runner.id, "not-there");
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 404);
  }
  auto rest = gh.remove_all_labels(c.runner.id);
  for (const auto& l : rest) EXPECT_EQ(l.type, "read-only") << l.name;

  // Busy (GitHub's flag, set through control) → kBusy; then deleted; then gone.
  Json::Value busy;
  busy["busy"] = true;
  cloud_.control("POST", "/_control/github/runners/" + std::to_string(c.runner.id) + "/busy", busy);
  EXPECT_TRUE(gh.get_runner(c.runner.id)->busy);
  EXPECT_EQ(gh.delete_runner(c.runner.id), DeleteOutcome::kBusy);
  busy["busy"] = false;
  cloud_.control("POST", "/_control/github/runners/" + std::to_string(c.runner.id) + "/busy", busy);
  EXPECT_EQ(gh.delete_runner(c.runner.id), DeleteOutcome::kDeleted);
  EXPECT_EQ(gh.get_runner(c.runner.id), std::nullopt);
  EXPECT_EQ(gh.delete_runner(c.runner.id), DeleteOutcome::kAlreadyGone);
  EXPECT_TRUE(gh.list_runners("rp-i-0001").empty());

  auto downloads = gh.list_downloads();
  ASSERT_FALSE(downloads.empty());
  EXPECT_EQ(downloads[0].os, "linux");
  EXPECT_FALSE(downloads[0].download_url.empty());
  EXPECT_EQ(downloads[0].sha256_checksum.size(), 64u);
}

TEST_F(GithubIntegration, OrganizationScope) {
  Connection conn(cloud_);
  StaticTokenSource pat(Secret(add_pat("pat-org-0123456789", "octo-org")));
  GithubClient org(conn.caller, pat, OwnerScope::parse("octo-org"));
  EXPECT_FALSE(org.create_registration_token().token.empty());
  JitConfig c = org.generate_jit_config(jit("org-runner-1"));
  auto all = org.list_runners();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].id, c.runner.id);
  // The organization's runner is not a repository's.
  GithubClient repo(conn.caller, pat, OwnerScope::parse("octo-org/some-repo"));
  EXPECT_EQ(repo.get_runner(c.runner.id), std::nullopt);
  EXPECT_EQ(org.delete_runner(c.runner.id), DeleteOutcome::kDeleted);
}

TEST_F(GithubIntegration, ListsAcrossPagesByLink) {
  Connection conn(cloud_, system_clock(), 3);
  StaticTokenSource pat(Secret(add_pat("pat-pages-0123456789", "paging-owner")));
  GithubClient gh(conn.caller, pat, OwnerScope::parse("paging-owner/repo"));
  std::set<int64_t> made;
  for (int i = 0; i < 7; ++i) made.insert(gh.generate_jit_config(jit("page-runner-" + std::to_string(i))).runner.id);
  reset_calls();
  long before = conn.caller.requests_for("ListRunners");
  auto runners = gh.list_runners();
  std::set<int64_t> listed;
  for (const auto& r : runners) listed.insert(r.id);
  EXPECT_EQ(listed, made);
  EXPECT_EQ(runners.size(), 7u);
  EXPECT_EQ(conn.caller.requests_for("ListRunners") - before, 3);  // 3 + 3 + 1
  EXPECT_EQ(calls()["byRoute"]["GET /repos/{owner}/{repo}/actions/runners"].asInt64(), 3);
}

TEST_F(GithubIntegration, AppInstallationTokenIsReusedThenRefreshedAfterAShortTtl) {
  App app = add_app("app-owner");
  Connection conn(cloud_);
  OwnerScope scope = OwnerScope::parse("app-owner/repo");
  GithubAppConfig config;
  config.issuer = app.client_id;
  config.private_key_pem = load_private_key(app.private_key_pem);
  config.refresh_margin = 500ms;
  AppInstallationTokenSource auth(conn.caller, scope, config);
  GithubClient gh(conn.caller, auth, scope);

  reset_calls();
  EXPECT_FALSE(gh.create_registration_token().token.empty());
  EXPECT_TRUE(gh.list_runners().empty());
  EXPECT_FALSE(gh.create_remove_token().token.empty());
  EXPECT_EQ(auth.token_fetches(), 1);
  EXPECT_EQ(auth.installation_id(), app.installation_id);
  Json::Value c = calls();
  EXPECT_EQ(c["byRoute"]["GET /repos/{owner}/{repo}/installation"].asInt64(), 1);
  EXPECT_EQ(c["byRoute"]["POST /app/installations/{installation_id}/access_tokens"].asInt64(), 1);
  EXPECT_EQ(c["byPrincipal"]["installation:" + std::to_string(app.installation_id)].asInt64(), 3);
  EXPECT_EQ(c["byPrincipal"]["app:" + std::to_string(app.app_id)].asInt64(), 2);

  // A 2 s TTL: refreshed 500 ms before expiry, not on every call.
  Json::Value ttl;
  ttl["installationTokenTtlMs"] = 2000;
  cloud_.control("POST", "/_control/github/settings", ttl);
  AppInstallationTokenSource short_auth(conn.caller, scope, config);
  GithubClient short_gh(conn.caller, short_auth, scope);
  short_gh.list_runners();
  short_gh.list_runners();
  EXPECT_EQ(short_auth.token_fetches(), 1);
  std::this_thread::sleep_for(1600ms);
  short_gh.list_runners();
  EXPECT_EQ(short_auth.token_fetches(), 2);

  // The App ID works as the issuer too, and a configured installation skips the lookup.
  config.issuer = std::to_string(app.app_id);
  config.installation_id = app.installation_id;
  AppInstallationTokenSource by_id(conn.caller, scope, config);
  long lookups = conn.caller.requests_for("GetInstallation");
  EXPECT_FALSE(by_id.token().empty());
  EXPECT_EQ(conn.caller.requests_for("GetInstallation"), lookups);
}

TEST_F(GithubIntegration, AnInstallationTokenRejectedAsExpiredIsRefetchedOnce) {
  App app = add_app("expiry-owner");
  Json::Value ttl;
  ttl["installationTokenTtlMs"] = 1000;
  cloud_.control("POST", "/_control/github/settings", ttl);
  // A clock that stands still: the client believes its token fresh; only GitHub's 401 says not.
  FakeClock frozen(system_clock().now());
  Connection conn(cloud_, frozen);
  OwnerScope scope = OwnerScope::parse("expiry-owner/repo");
  GithubAppConfig config;
  config.issuer = app.client_id;
  config.private_key_pem = Secret(app.private_key_pem);
  config.installation_id = app.installation_id;
  AppInstallationTokenSource auth(conn.caller, scope, config);
  GithubClient gh(conn.caller, auth, scope);

  gh.list_runners();
  std::this_thread::sleep_for(1200ms);
  reset_calls();
  gh.list_runners();  // 401 Bad credentials → new token → 200
  EXPECT_EQ(auth.token_fetches(), 2);
  EXPECT_EQ(gh.requests_sent(), 3);
  Json::Value c = calls();
  EXPECT_EQ(c["byStatus"]["401"].asInt64(), 1);
  EXPECT_EQ(c["byStatus"]["200"].asInt64(), 1);
}

TEST_F(GithubIntegration, RetryAfterIsHonoured) {
  Connection conn(cloud_);
  StaticTokenSource pat(Secret(add_pat("pat-retry-0123456789", "retry-owner")));
  GithubClient gh(conn.caller, pat, OwnerScope::parse("retry-owner/repo"));
  gh.list_runners();  // warm the connection

  // 429 (retryAfterRate) and 403 (throttleRate), each with retry-after: 1. Every request is
  // refused until the stand-in has refused one; then the faults are lifted and the retry, made
  // no earlier than a second later, succeeds.
  for (const char* knob : {"retryAfterRate", "throttleRate"}) {
    SCOPED_TRACE(knob);
    cloud_.control("POST", "/_control/stats/reset");
    Json::Value faults;
    faults["service"] = "github";
    faults[knob] = 1.0;
    faults["retryAfterSeconds"] = 1;
    cloud_.control("POST", "/_control/faults", faults);

    long before = conn.caller.requests_for("CreateRegistrationToken");
    auto started = steady_clock::now();
    auto call = std::async(std::launch::async, [&] {
      RunnerToken t = gh.create_registration_token();
      return std::make_pair(t, steady_clock::now() - started);
    });
    long refused = 0;
    for (int i = 0; i < 100 && refused == 0; ++i) {
      Json::Value s = cloud_.control("GET", "/_control/stats")["github"]
                                    ["POST /repos/{owner}/{repo}/actions/runners/registration-token"];
      refused = s["retryAfters"].asInt64() + s["throttles"].asInt64();
      if (refused == 0) std::this_thread::sleep_for(10ms);
    }
    cloud_.clear_faults();
    ASSERT_EQ(refused, 1);
    auto [token, elapsed] = call.get();
    EXPECT_FALSE(token.token.empty());
    EXPECT_GE(elapsed, 1s);
    EXPECT_LT(elapsed, 5s);
    EXPECT_EQ(conn.caller.requests_for("CreateRegistrationToken") - before, 2);
  }
}

TEST_F(GithubIntegration, ServerErrorsAreRetriedToSuccess) {
  // Enough attempts that no call can plausibly exhaust them (0.3^30 per call), and enough calls
  // that some error is all but certain (0.7^40 < 1e-6); the accounting below is exact either way.
  CurlHttpClient http;
  GithubSettings settings = Connection::settings(cloud_, 100);
  settings.retry = RetryPolicy{30, Duration{1}, Duration{10}, Duration{5s}};
  GithubCaller caller(http, system_clock(), settings);
  StaticTokenSource pat(Secret(add_pat("pat-errors-0123456789", "error-owner")));
  GithubClient gh(caller, pat, OwnerScope::parse("error-owner/repo"));
  auto injected = [&] {
    Json::Value s = cloud_.control("GET", "/_control/stats")["github"]["GET /repos/{owner}/{repo}/actions/runners"];
    return s["errors"].asInt64();
  };
  const int64_t before = injected();
  Json::Value faults;
  faults["service"] = "github";
  faults["errorRate"] = 0.3;
  cloud_.control("POST", "/_control/faults", faults);
  for (int i = 0; i < 40; ++i) EXPECT_TRUE(gh.list_runners().empty());
  cloud_.clear_faults();
  const int64_t errors = injected() - before;
  EXPECT_GT(errors, 0);
  EXPECT_EQ(gh.requests_sent(), 40 + errors) << "every injected 5xx was retried once, nothing else was";
}

TEST_F(GithubIntegration, PrimaryLimitFarAwayIsSurfacedAtOnce) {
  Connection conn(cloud_);
  Json::Value limit;
  limit["primaryLimit"] = 2;
  cloud_.control("POST", "/_control/github/settings", limit);
  StaticTokenSource pat(Secret(add_pat("pat-limit-0123456789", "limit-owner")));
  GithubClient gh(conn.caller, pat, OwnerScope::parse("limit-owner/repo"));
  gh.list_runners();
  gh.list_runners();
  auto started = steady_clock::now();
  try {
    gh.list_runners();
    FAIL() << "the spent budget went unnoticed";
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 403);
    EXPECT_NE(e.message().find("API rate limit exceeded"), std::string::npos);
  }
  EXPECT_LT(steady_clock::now() - started, 2s);  // an hour-long reset is not waited for
  EXPECT_EQ(gh.requests_sent(), 3);
}

TEST_F(GithubIntegration, BadCredentialsAre401) {
  Connection conn(cloud_);
  add_pat("pat-known-0123456789", "cred-owner");
  StaticTokenSource wrong(Secret("pat-unknown-0123456789"));
  GithubClient gh(conn.caller, wrong, OwnerScope::parse("cred-owner/repo"));
  try {
    gh.create_registration_token();
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 401);
    EXPECT_EQ(e.message(), "Bad credentials");
    EXPECT_EQ(std::string(e.what()).find("pat-unknown-0123456789"), std::string::npos);
  }
  EXPECT_EQ(gh.requests_sent(), 1);

  // An App JWT signed with another App's key.
  App a = add_app("cred-owner");
  App b = add_app("cred-owner");
  GithubAppConfig config;
  config.issuer = a.client_id;
  config.private_key_pem = Secret(b.private_key_pem);
  OwnerScope scope = OwnerScope::parse("cred-owner/repo");
  AppInstallationTokenSource forged(conn.caller, scope, config);
  GithubClient app_gh(conn.caller, forged, scope);
  try {
    app_gh.list_runners();
    FAIL();
  } catch (const GithubError& e) {
    EXPECT_EQ(e.status(), 401);
    EXPECT_EQ(e.operation(), "GetInstallation");
  }
}

}  // namespace
}  // namespace runpool::github
