// Reuse and job privileges as one policy per resource class. A job that could become root on its
// instance (job_privileges = docker or sudo) may have changed anything the instance's cleanup
// relies on, so what happens to a drained instance is an explicit choice: back to the pool for any
// workflow (reuse = always), back to the pool for the same repository or owner only (same-scope,
// the record then carries that scope), or terminated (never). `reuse = always` with root-equivalent
// jobs is only allowed when the operator declares every workflow of the pool one trust domain.
// Pure functions: the settings validate with them, the drain and the claim judge decide with them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace runpool::pool {

enum class JobPrivileges { kUser, kDocker, kSudo };
enum class Reuse { kAlways, kSameScope, kNever };
enum class ReuseScope { kRepository, kOwner };
enum class TrustDomain { kNone, kPool };

std::string_view job_privileges_name(JobPrivileges p);
std::optional<JobPrivileges> parse_job_privileges(std::string_view name);
std::string_view reuse_name(Reuse r);
std::optional<Reuse> parse_reuse(std::string_view name);
std::string_view reuse_scope_name(ReuseScope s);
std::optional<ReuseScope> parse_reuse_scope(std::string_view name);
std::string_view trust_domain_name(TrustDomain t);
std::optional<TrustDomain> parse_trust_domain(std::string_view name);

struct ReusePolicy {
  JobPrivileges job_privileges = JobPrivileges::kUser;
  Reuse reuse = Reuse::kAlways;
  ReuseScope reuse_scope = ReuseScope::kRepository;
  TrustDomain trust_domain = TrustDomain::kNone;
  bool operator==(const ReusePolicy&) const = default;
};

// "" when the combination is allowed, else why not (for a ConfigError).
std::string reuse_policy_error(const ReusePolicy& policy);

// The scope key of an assignment registered at `reg_url` (https://HOST/owner[/repo]):
// "repository:owner/repo" or "owner:owner" for ReuseScope::kRepository, "owner:owner" for kOwner.
// A registration URL naming only an owner (an organization's runner) has an owner scope under
// either setting. "" when the URL names no owner (an enterprise's runner, or unparsable): such an
// assignment has no scope, and same-scope reuse then terminates instead (see drained_fate).
std::string scope_key_for(std::string_view reg_url, ReuseScope scope);

// What happens to an instance whose assignment has just drained cleanly.
enum class DrainedFate {
  kReturn,        // back to the pool, untagged: any scope may claim it
  kReturnTagged,  // back to the pool carrying `scope_key`: only that scope may claim it
  kTerminate,     // terminated
};
struct DrainedDecision {
  DrainedFate fate;
  std::string scope_key;  // kReturnTagged: the tag
  std::string reason;     // kTerminate: "reuse-never" or "reuse-no-scope"
};
// `scope_key`: the ended assignment's (scope_key_for of its registration URL).
DrainedDecision drained_fate(const ReusePolicy& policy, const std::string& scope_key);

// May a claim for scope `claim_scope` ("" when unknown) take an idle instance tagged `tag`?
// An untagged (fresh) instance: anyone. A tagged one: the same scope only.
bool scope_may_claim(const std::string& tag, const std::string& claim_scope);

// The order in which a claim for `claim_scope` tries the instances it may take, given each one's
// tag (`tags[i]`: the i-th candidate's reuse_scope_key), as indices into `tags`: its own scope's
// first, whose caches are warm for it, then untagged ones, then any others; each group keeps the
// given order. No claim scope (""): the given order. The claim applies it to one received batch:
// SQS offers no way to choose across the queue.
std::vector<size_t> claim_preference_order(const std::vector<std::string>& tags, const std::string& claim_scope);

}  // namespace runpool::pool
