#include "common/github/endpoint.h"

#include <cctype>
#include <stdexcept>

namespace runpool::github {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

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

// Splits "scheme://authority/rest"; false when it is not an http(s) URL with a host.
bool split_url(std::string_view url, std::string* scheme, std::string* authority, std::string_view* rest) {
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) return false;
  *scheme = lower(url.substr(0, sep));
  if (*scheme != "http" && *scheme != "https") return false;
  std::string_view after = url.substr(sep + 3);
  size_t slash = after.find_first_of("/?#");
  *authority = lower(after.substr(0, slash));
  *rest = slash == std::string_view::npos ? std::string_view{} : after.substr(slash);
  return !authority->empty();
}

}  // namespace

OwnerScope OwnerScope::parse(std::string_view text) {
  size_t slash = text.find('/');
  OwnerScope scope;
  scope.owner = std::string(text.substr(0, slash));
  if (slash != std::string_view::npos) scope.repo = std::string(text.substr(slash + 1));
  bool ok = valid_owner(scope.owner) && (slash == std::string_view::npos || valid_repo(scope.repo));
  if (!ok) {
    throw std::invalid_argument("GitHub owner scope '" + std::string(text) +
                                "': expected \"owner/repo\" or \"organization\"");
  }
  return scope;
}

std::string OwnerScope::base_path() const {
  return is_organization() ? "/orgs/" + owner : "/repos/" + owner + "/" + repo;
}
std::string OwnerScope::runners_path() const { return base_path() + "/actions/runners"; }
std::string OwnerScope::installation_path() const { return base_path() + "/installation"; }
std::string OwnerScope::to_string() const { return is_organization() ? owner : owner + "/" + repo; }

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

}  // namespace runpool::github
