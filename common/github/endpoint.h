// Where the GitHub API is and whose runners we manage: the REST base URL (github.com, GHES
// https://HOST/api/v3, data residency https://api.SUBDOMAIN.ghe.com) and the owner scope — a
// repository ("owner/repo", /repos/{o}/{r}/…), an organization ("org", /orgs/{org}/…) or an
// enterprise ("enterprise:SLUG", /enterprises/{slug}/…).
#pragma once

#include <string>
#include <string_view>

namespace runpool::github {

struct OwnerScope {
  enum class Kind { kRepository, kOrganization, kEnterprise };

  Kind kind = Kind::kRepository;
  std::string owner;  // the repository's owner, the organization, or the enterprise's slug
  std::string repo;   // the repository's name; empty for the other kinds

  // "owner/repo", "org" or "enterprise:SLUG". Names are checked against GitHub's character rules
  // (so nothing can smuggle "/" or ".." into a path); throws std::invalid_argument otherwise.
  static OwnerScope parse(std::string_view text);

  bool is_repository() const { return kind == Kind::kRepository; }
  bool is_organization() const { return kind == Kind::kOrganization; }
  bool is_enterprise() const { return kind == Kind::kEnterprise; }
  std::string base_path() const;     // "/repos/o/r", "/orgs/o" or "/enterprises/slug"
  std::string runners_path() const;  // base_path() + "/actions/runners"
  // base_path() + "/installation" (GitHub App lookup). GitHub Apps cannot manage an enterprise's
  // runners: std::logic_error for that kind.
  std::string installation_path() const;
  // The path of the runner registration URL under the web server: "o/r", "o" or
  // "enterprises/slug" (config.sh --url https://github.com/<this>).
  std::string web_path() const;
  std::string to_string() const;  // as parse() takes it: "o/r", "o" or "enterprise:slug"
  bool operator==(const OwnerScope&) const = default;
};

// A runner group's name as `config.sh --runnergroup NAME` takes it: 1..100 of letters, digits,
// spaces and "-_.", starting with a letter or digit and not ending with a space. Narrower than
// what GitHub's settings page accepts, so that a name can never read as another of config.sh's
// options ("--url …") nor change meaning in a configuration file.
bool valid_runner_group(std::string_view name);

// Checks and normalises a REST API base: http(s)://host[:port][/path] without query, fragment or
// user info; trailing slashes dropped. Throws std::invalid_argument.
std::string normalize_api_base(std::string_view url);

// The API base for a web server URL (as GITHUB_SERVER_URL gives it): https://github.com →
// https://api.github.com; https://SUB.ghe.com → https://api.SUB.ghe.com; any other host (GHES)
// → <url>/api/v3.
std::string api_base_for_server(std::string_view server_url);

// "scheme://host[:port]" of an absolute URL, lower-cased; "" when it has none.
std::string url_origin(std::string_view url);

// The web URL runners register with, for a REST API base: https://api.github.com →
// https://github.com, https://HOST/api/v3 → https://HOST, https://api.SUB.ghe.com →
// https://SUB.ghe.com; any other base is returned as is.
std::string server_for_api_base(std::string_view api_base);

// The API base and web URL a command uses, from what the configuration gives explicitly (empty:
// not given) and from the environment of a GitHub Actions job (GITHUB_API_URL and
// GITHUB_SERVER_URL, empty when unset). Explicit configuration wins: with either URL configured,
// the other is derived from it and the job's environment is not read; with neither, the job's
// URLs (so a workflow on GHES or GHE.com needs no setting); with none at all, github.com. Throws
// std::invalid_argument on a malformed URL, naming where it came from.
struct GithubEndpoints {
  std::string api_base;
  std::string server_url;
};
GithubEndpoints resolve_endpoints(std::string_view configured_api, std::string_view configured_server,
                                  std::string_view env_api, std::string_view env_server);

}  // namespace runpool::github
