#include "common/pool/reuse_policy.h"

#include <algorithm>
#include <numeric>

namespace runpool::pool {

std::string_view job_privileges_name(JobPrivileges p) {
  switch (p) {
    case JobPrivileges::kUser: return "user";
    case JobPrivileges::kDocker: return "docker";
    case JobPrivileges::kSudo: return "sudo";
  }
  return "";
}
std::optional<JobPrivileges> parse_job_privileges(std::string_view name) {
  for (JobPrivileges p : {JobPrivileges::kUser, JobPrivileges::kDocker, JobPrivileges::kSudo}) {
    if (name == job_privileges_name(p)) return p;
  }
  return std::nullopt;
}
std::string_view reuse_name(Reuse r) {
  switch (r) {
    case Reuse::kAlways: return "always";
    case Reuse::kSameScope: return "same-scope";
    case Reuse::kNever: return "never";
  }
  return "";
}
std::optional<Reuse> parse_reuse(std::string_view name) {
  for (Reuse r : {Reuse::kAlways, Reuse::kSameScope, Reuse::kNever}) {
    if (name == reuse_name(r)) return r;
  }
  return std::nullopt;
}
std::string_view reuse_scope_name(ReuseScope s) {
  switch (s) {
    case ReuseScope::kRepository: return "repository";
    case ReuseScope::kOwner: return "owner";
  }
  return "";
}
std::optional<ReuseScope> parse_reuse_scope(std::string_view name) {
  for (ReuseScope s : {ReuseScope::kRepository, ReuseScope::kOwner}) {
    if (name == reuse_scope_name(s)) return s;
  }
  return std::nullopt;
}
std::string_view trust_domain_name(TrustDomain t) {
  switch (t) {
    case TrustDomain::kNone: return "none";
    case TrustDomain::kPool: return "pool";
  }
  return "";
}
std::optional<TrustDomain> parse_trust_domain(std::string_view name) {
  for (TrustDomain t : {TrustDomain::kNone, TrustDomain::kPool}) {
    if (name == trust_domain_name(t)) return t;
  }
  return std::nullopt;
}

std::string reuse_policy_error(const ReusePolicy& p) {
  if (p.reuse != Reuse::kAlways || p.job_privileges == JobPrivileges::kUser) return "";
  if (p.trust_domain == TrustDomain::kPool) return "";
  return "reuse = always with job_privileges = " + std::string(job_privileges_name(p.job_privileges)) +
         ": a root-equivalent job can change anything the cleanup after it relies on, so the next workflow "
         "could inherit what it left; use reuse = same-scope or never, or declare trust_domain = pool";
}

std::string scope_key_for(std::string_view reg_url, ReuseScope scope) {
  // https://HOST/owner[/repo], perhaps with a trailing slash.
  auto scheme = reg_url.find("://");
  if (scheme == std::string_view::npos) return "";
  std::string_view rest = reg_url.substr(scheme + 3);
  auto slash = rest.find('/');
  if (slash == std::string_view::npos) return "";
  std::string_view path = rest.substr(slash + 1);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) return "";
  auto sep = path.find('/');
  std::string_view owner = path.substr(0, sep);
  if (owner.empty() || owner == "enterprises") return "";
  if (sep == std::string_view::npos || scope == ReuseScope::kOwner) return "owner:" + std::string(owner);
  std::string_view repo = path.substr(sep + 1);
  if (repo.empty() || repo.find('/') != std::string_view::npos) return "";
  return "repository:" + std::string(owner) + "/" + std::string(repo);
}

DrainedDecision drained_fate(const ReusePolicy& p, const std::string& scope_key) {
  switch (p.reuse) {
    case Reuse::kAlways: return {DrainedFate::kReturn, "", ""};
    case Reuse::kNever: return {DrainedFate::kTerminate, "", "reuse-never"};
    case Reuse::kSameScope:
      // Without a scope nobody could be told apart from the last tenant: nothing may reuse it.
      if (scope_key.empty()) return {DrainedFate::kTerminate, "", "reuse-no-scope"};
      return {DrainedFate::kReturnTagged, scope_key, ""};
  }
  return {DrainedFate::kTerminate, "", "reuse-never"};
}

bool scope_may_claim(const std::string& tag, const std::string& claim_scope) {
  return tag.empty() || tag == claim_scope;
}

std::vector<size_t> claim_preference_order(const std::vector<std::string>& tags, const std::string& claim_scope) {
  auto rank = [&](const std::string& tag) {
    if (claim_scope.empty() || tag == claim_scope) return 0;
    return tag.empty() ? 1 : 2;
  };
  std::vector<size_t> order(tags.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rank(tags[a]) < rank(tags[b]); });
  return order;
}

}  // namespace runpool::pool
