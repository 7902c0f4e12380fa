// Where the GitHub API is and whose runners we manage: the REST base URL (github.com, GHES
// https://HOST/api/v3, data residency https://api.SUBDOMAIN.ghe.com) and the owner scope — a
// repository ("owner/repo", /repos/{o}/{r}/…) or an organization ("org", /orgs/{org}/…).
#pragma once

#include <string>
#include <string_view>

namespace runpool::github {

struct OwnerScope {
  std::string owner;
  std::string repo;  // empty: the organization's runners

  // "owner/repo" or "org". Names are checked against GitHub's character rules (so nothing can
  // smuggle "/" or ".." into a path); throws std::invalid_argument otherwise.
  static OwnerScope parse(std::string_view text);

  bool is_organization() const { return repo.empty(); }
  std::string base_path() const;          // "/repos/o/r" or "/orgs/o"
  std::string runners_path() const;       // base_path() + "/actions/runners"
  std::string installation_path() const;  // base_path() + "/installation" (GitHub App lookup)
  std::string to_string() const;          // "o/r" or "o"
  bool operator==(const OwnerScope&) const = default;
};

// Checks and normalises a REST API base: http(s)://host[:port][/path] without query, fragment or
// user info; trailing slashes dropped. Throws std::invalid_argument.
std::string normalize_api_base(std::string_view url);

// The API base for a web server URL (as GITHUB_SERVER_URL gives it): https://github.com →
// https://api.github.com; https://SUB.ghe.com → https://api.SUB.ghe.com; any other host (GHES)
// → <url>/api/v3.
std::string api_base_for_server(std::string_view server_url);

// "scheme://host[:port]" of an absolute URL, lower-cased; "" when it has none.
std::string url_origin(std::string_view url);

}  // namespace runpool::github
