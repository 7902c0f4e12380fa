#include "common/github/endpoint.h"
#include "common/text.h"

#include <cctype>
#include <stdexcept>

namespace runpool::github {
namespace {

// GitHub logins (users and organizations): alphanumerics and single inner hyphens, ≤ 39.
bool valid_owner(std::string_view s) {
  if (s.empty() || s.size() > 39 || s.front() == '-' || s.back() == '-') return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return true;
}

// Repository names: alphanumerics, '-', '_', '.', ≤ 100, and not "." or "..".
bool valid_repo(std::string_view s) {
  if (s.empty() || s.size() > 100 || s == "." || s == "..") return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// Enterprise slugs: alphanumerics and inner hyphens (GitHub derives them from the name), ≤ 100.
bool valid_enterprise(std::string_view s) {
  if (s.empty() || s.size() > 100 || s.front() == '-' || s.back() == '-') return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return true;
}

// Splits "scheme://authority/rest"; false when it is not an http(s) URL with a host.
bool split_url(std::string_view url, std::string* scheme, std::string* authority, std::string_view* rest) {
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) return false;
  *scheme = text::lower(url.substr(0, sep));
  if (*scheme != "http" && *scheme != "https") return false;
  std::string_view after = url.substr(sep + 3);
  size_t slash = after.find_first_of("/?#");
  *authority = text::lower(after.substr(0, slash));
  *rest = slash == std::string_view::npos ? std::string_view{} : after.substr(slash);
  return !authority->empty();
}

}  // namespace

OwnerScope OwnerScope::parse(std::string_view text) {
  static constexpr std::string_view kEnterprisePrefix = "enterprise:";
  OwnerScope scope;
  bool ok;
  if (text.substr(0, kEnterprisePrefix.size()) == kEnterprisePrefix) {
    scope.kind = Kind::kEnterprise;
    scope.owner = std::string(text.substr(kEnterprisePrefix.size()));
    ok = valid_enterprise(scope.owner);
  } else {
    size_t slash = text.find('/');
    scope.kind = slash == std::string_view::npos ? Kind::kOrganization : Kind::kRepository;
    scope.owner = std::string(text.substr(0, slash));
    if (slash != std::string_view::npos) scope.repo = std::string(text.substr(slash + 1));
    ok = valid_owner(scope.owner) && (slash == std::string_view::npos || valid_repo(scope.repo));
  }
  if (!ok) {
    throw std::invalid_argument("GitHub owner scope '" + std::string(text) +
                                "': expected \"owner/repo\", \"organization\" or \"enterprise:SLUG\"");
  }
  return scope;
}

std::string OwnerScope::base_path() const {
  switch (kind) {
    case Kind::kRepository: return "/repos/" + owner + "/" + repo;
    case Kind::kOrganization: return "/orgs/" + owner;
    case Kind::kEnterprise: return "/enterprises/" + owner;
  }
  return "";
}
std::string OwnerScope::runners_path() const { return base_path() + "/actions/runners"; }
std::string OwnerScope::installation_path() const {
  if (is_enterprise()) throw std::logic_error("GitHub Apps cannot manage an enterprise's runners");
  return base_path() + "/installation";
}
std::string OwnerScope::web_path() const {
  switch (kind) {
    case Kind::kRepository: return owner + "/" + repo;
    case Kind::kOrganization: return owner;
    case Kind::kEnterprise: return "enterprises/" + owner;
  }
  return "";
}
std::string OwnerScope::to_string() const {
  switch (kind) {
    case Kind::kRepository: return owner + "/" + repo;
    case Kind::kOrganization: return owner;
    case Kind::kEnterprise: return "enterprise:" + owner;
  }
  return "";
}

bool valid_runner_group(std::string_view name) {
  if (name.empty() || name.size() > 100 || !std::isalnum(static_cast<unsigned char>(name.front())) ||
      name.back() == ' ') {
    return false;
  }
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != ' ' && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

std::string normalize_api_base(std::string_view url) {
  std::string scheme, authority;
  std::string_view rest;
  auto bad = [&](const char* why) {
    return std::invalid_argument("GitHub API base URL '" + std::string(url) + "': " + why);
  };
  if (!split_url(url, &scheme, &authority, &rest)) throw bad("expected http(s)://host[/path]");
  if (authority.find('@') != std::string::npos) throw bad("user info is not allowed");
  if (rest.find_first_of("?#") != std::string_view::npos) throw bad("no query or fragment allowed");
  std::string out(url.substr(0, url.size() - rest.size()));
  out.replace(0, scheme.size(), scheme);
  std::string path(rest);
  while (!path.empty() && path.back() == '/') path.pop_back();
  return out + path;
}

std::string api_base_for_server(std::string_view server_url) {
  std::string base = normalize_api_base(server_url);
  std::string scheme, authority;
  std::string_view rest;
  split_url(base, &scheme, &authority, &rest);
  if (rest.empty()) {
    if (authority == "github.com" || authority == "www.github.com") return scheme + "://api.github.com";
    const std::string ghe = ".ghe.com";
    if (authority.size() > ghe.size() && authority.compare(authority.size() - ghe.size(), ghe.size(), ghe) == 0 &&
        authority.rfind("api.", 0) != 0) {
      return scheme + "://api." + authority;
    }
  }
  return base + "/api/v3";
}

std::string url_origin(std::string_view url) {
  std::string scheme, authority;
  std::string_view rest;
  if (!split_url(url, &scheme, &authority, &rest)) return "";
  return scheme + "://" + authority;
}

std::string server_for_api_base(std::string_view api_base) {
  std::string base(api_base);
  if (base == "https://api.github.com") return "https://github.com";
  const std::string v3 = "/api/v3";
  if (base.size() > v3.size() && base.compare(base.size() - v3.size(), v3.size(), v3) == 0) {
    return base.substr(0, base.size() - v3.size());
  }
  // Data residency: https://api.SUB.ghe.com → https://SUB.ghe.com.
  const std::string prefix = "https://api.";
  if (base.rfind(prefix, 0) == 0) return "https://" + base.substr(prefix.size());
  return base;
}

GithubEndpoints resolve_endpoints(std::string_view configured_api, std::string_view configured_server,
                                  std::string_view env_api, std::string_view env_server) {
  auto normalized = [](std::string_view url, const char* where) {
    try {
      return normalize_api_base(url);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string(where) + ": " + e.what());
    }
  };
  // The job's URLs only when the configuration names neither: a configured GHES must not be paired
  // with the github.com server of the workflow that manages it.
  bool configured = !configured_api.empty() || !configured_server.empty();
  std::string_view api = configured ? configured_api : env_api;
  std::string_view server = configured ? configured_server : env_server;
  const char* api_from = configured ? "github_api_url" : "GITHUB_API_URL";
  const char* server_from = configured ? "github_server_url" : "GITHUB_SERVER_URL";
  GithubEndpoints out;
  if (!api.empty()) out.api_base = normalized(api, api_from);
  if (!server.empty()) out.server_url = normalized(server, server_from);
  if (out.api_base.empty() && !out.server_url.empty()) out.api_base = api_base_for_server(out.server_url);
  if (out.api_base.empty()) out.api_base = "https://api.github.com";
  if (out.server_url.empty()) out.server_url = server_for_api_base(out.api_base);
  return out;
}

}  // namespace runpool::github
