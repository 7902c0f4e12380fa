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

TEST(OwnerScope, RejectsAnythingThatCouldBendThePath) {
  for (const char* bad : {"", "/", "o/", "/r", "o/r/x", "o/..", "o/.", "../x", "o r", "o/r?x=1", "o/r#f", "-o",
                          "o-", "o/%2e%2e", "o\\r", "o/r\n"}) {
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

TEST(UrlOrigin, SchemeHostAndPortOnly) {
  EXPECT_EQ(url_origin("https://API.github.com/repos/x?page=2"), "https://api.github.com");
  EXPECT_EQ(url_origin("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
  EXPECT_EQ(url_origin("/relative"), "");
  EXPECT_EQ(url_origin("file:///etc/passwd"), "");
}

}  // namespace
}  // namespace runpool::github
