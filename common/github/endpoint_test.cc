#include "common/github/endpoint.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace runpool::github {
namespace {

TEST(OwnerScope, RepositoryAndOrganizationPaths) {
  auto repo = OwnerScope::parse("octo-org/my.repo_1");
  EXPECT_FALSE(repo.is_organization());
  EXPECT_EQ(repo.runners_path(), "/repos/octo-org/my.repo_1/actions/runners");
  EXPECT_EQ(repo.installation_path(), "/repos/octo-org/my.repo_1/installation");
  EXPECT_EQ(repo.to_string(), "octo-org/my.repo_1");

  auto org = OwnerScope::parse("octo-org");
  EXPECT_TRUE(org.is_organization());
  EXPECT_EQ(org.runners_path(), "/orgs/octo-org/actions/runners");
  EXPECT_EQ(org.installation_path(), "/orgs/octo-org/installation");
  EXPECT_EQ(org.to_string(), "octo-org");
}

TEST(OwnerScope, EnterprisePaths) {
  auto ent = OwnerScope::parse("enterprise:octo-corp");
  EXPECT_TRUE(ent.is_enterprise());
  EXPECT_FALSE(ent.is_organization());
  EXPECT_FALSE(ent.is_repository());
  EXPECT_EQ(ent.owner, "octo-corp");
  EXPECT_EQ(ent.runners_path(), "/enterprises/octo-corp/actions/runners");
  EXPECT_EQ(ent.web_path(), "enterprises/octo-corp");
  EXPECT_EQ(ent.to_string(), "enterprise:octo-corp");
  EXPECT_EQ(OwnerScope::parse(ent.to_string()), ent);
  // GitHub Apps cannot manage enterprise runners: there is no installation to look up.
  EXPECT_THROW(ent.installation_path(), std::logic_error);

  EXPECT_EQ(OwnerScope::parse("octo-org").web_path(), "octo-org");
  EXPECT_EQ(OwnerScope::parse("octo-org/r").web_path(), "octo-org/r");
  EXPECT_TRUE(OwnerScope::parse("octo-org/r").is_repository());
  // An organization and an enterprise of the same name are different scopes.
  EXPECT_NE(OwnerScope::parse("octo"), OwnerScope::parse("enterprise:octo"));
}

TEST(OwnerScope, RejectsAnythingThatCouldBendThePath) {
  for (const char* bad : {"", "/", "o/", "/r", "o/r/x", "o/..", "o/.", "../x", "o r", "o/r?x=1", "o/r#f", "-o",
                          "o-", "o/%2e%2e", "o\\r", "o/r\n", "enterprise:", "enterprise:a/b", "enterprise:..",
                          "enterprise:-x", "enterprise:x y", "enterprise:x?y", "Enterprise:x/", "enterprises/x/y"}) {
    EXPECT_THROW(OwnerScope::parse(bad), std::invalid_argument) << bad;
  }
}

TEST(ApiBase, NormalisesAndValidates) {
  EXPECT_EQ(normalize_api_base("https://api.github.com/"), "https://api.github.com");
  EXPECT_EQ(normalize_api_base("HTTPS://ghe.example.com/api/v3//"), "https://ghe.example.com/api/v3");
  EXPECT_EQ(normalize_api_base("http://127.0.0.1:8080/api/v3"), "http://127.0.0.1:8080/api/v3");
  for (const char* bad : {"", "api.github.com", "ftp://x", "https://", "https://u:p@x", "https://x/?a=1",
                          "https://x/#f"}) {
    EXPECT_THROW(normalize_api_base(bad), std::invalid_argument) << bad;
  }
}

TEST(ApiBase, FromServerUrl) {
  EXPECT_EQ(api_base_for_server("https://github.com"), "https://api.github.com");
  EXPECT_EQ(api_base_for_server("https://github.com/"), "https://api.github.com");
  EXPECT_EQ(api_base_for_server("https://octocorp.ghe.com"), "https://api.octocorp.ghe.com");
  EXPECT_EQ(api_base_for_server("https://ghe.example.com"), "https://ghe.example.com/api/v3");
  EXPECT_EQ(api_base_for_server("http://127.0.0.1:9000"), "http://127.0.0.1:9000/api/v3");
}

TEST(ApiBase, ServerForApiBase) {
  EXPECT_EQ(server_for_api_base("https://api.github.com"), "https://github.com");
  EXPECT_EQ(server_for_api_base("https://ghes.example.com/api/v3"), "https://ghes.example.com");
  EXPECT_EQ(server_for_api_base("https://api.acme.ghe.com"), "https://acme.ghe.com");
  EXPECT_EQ(server_for_api_base("http://127.0.0.1:9000/api/v3"), "http://127.0.0.1:9000");
}

TEST(ResolveEndpoints, ConfigurationBeatsTheWorkflowsEnvironment) {
  const std::string ghes_api = "https://ghes.example.com/api/v3", ghes = "https://ghes.example.com";
  // Nothing anywhere: github.com.
  auto e = resolve_endpoints("", "", "", "");
  EXPECT_EQ(e.api_base, "https://api.github.com");
  EXPECT_EQ(e.server_url, "https://github.com");
  // A job on GHES or GHE.com: its own URLs, with no setting.
  e = resolve_endpoints("", "", ghes_api, ghes);
  EXPECT_EQ(e.api_base, ghes_api);
  EXPECT_EQ(e.server_url, ghes);
  e = resolve_endpoints("", "", "https://api.octocorp.ghe.com", "https://octocorp.ghe.com");
  EXPECT_EQ(e.api_base, "https://api.octocorp.ghe.com");
  EXPECT_EQ(e.server_url, "https://octocorp.ghe.com");
  // Only one of the job's variables: the other derived from it.
  EXPECT_EQ(resolve_endpoints("", "", "", ghes).api_base, ghes_api);
  EXPECT_EQ(resolve_endpoints("", "", ghes_api, "").server_url, ghes);
  // A configured API URL wins, and the server comes from it, not from the job on github.com.
  e = resolve_endpoints(ghes_api, "", "https://api.github.com", "https://github.com");
  EXPECT_EQ(e.api_base, ghes_api);
  EXPECT_EQ(e.server_url, ghes);
  // A configured server URL alone: the API derived from it.
  e = resolve_endpoints("", "https://octocorp.ghe.com/", "https://api.github.com", "https://github.com");
  EXPECT_EQ(e.api_base, "https://api.octocorp.ghe.com");
  EXPECT_EQ(e.server_url, "https://octocorp.ghe.com");
  // Both configured: as given.
  e = resolve_endpoints("http://127.0.0.1:8080/api/v3", "http://127.0.0.1:8080", ghes_api, ghes);
  EXPECT_EQ(e.api_base, "http://127.0.0.1:8080/api/v3");
  EXPECT_EQ(e.server_url, "http://127.0.0.1:8080");
  // A malformed URL names where it came from.
  try {
    resolve_endpoints("", "", "not a url", "");
    FAIL();
  } catch (const std::invalid_argument& x) {
    EXPECT_EQ(std::string(x.what()).rfind("GITHUB_API_URL: ", 0), 0u) << x.what();
  }
  try {
    resolve_endpoints("", "ftp://x", "", "");
    FAIL();
  } catch (const std::invalid_argument& x) {
    EXPECT_EQ(std::string(x.what()).rfind("github_server_url: ", 0), 0u) << x.what();
  }
}

TEST(RunnerGroup, NamesThatCannotReadAsAnOption) {
  for (const char* good : {"Default", "linux-x64", "Team A runners", "g_1.2", "9"}) {
    EXPECT_TRUE(valid_runner_group(good)) << good;
  }
  for (const char* bad : {"", "-x", "--url", " lead", "trail ", "a\nb", "a=b", "a#b", "a;b", "a/b", "$(x)", "a\tb",
                          "\"q\""}) {
    EXPECT_FALSE(valid_runner_group(bad)) << bad;
  }
  EXPECT_TRUE(valid_runner_group(std::string(100, 'a')));
  EXPECT_FALSE(valid_runner_group(std::string(101, 'a')));
}

TEST(UrlOrigin, SchemeHostAndPortOnly) {
  EXPECT_EQ(url_origin("https://API.github.com/repos/x?page=2"), "https://api.github.com");
  EXPECT_EQ(url_origin("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
  EXPECT_EQ(url_origin("/relative"), "");
  EXPECT_EQ(url_origin("file:///etc/passwd"), "");
}

}  // namespace
}  // namespace runpool::github
