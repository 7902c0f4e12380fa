#include "common/pool/reuse_policy.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

TEST(ReusePolicy, NamesRoundTrip) {
  for (auto p : {JobPrivileges::kUser, JobPrivileges::kDocker, JobPrivileges::kSudo}) {
    EXPECT_EQ(parse_job_privileges(job_privileges_name(p)), p);
  }
  for (auto r : {Reuse::kAlways, Reuse::kSameScope, Reuse::kNever}) EXPECT_EQ(parse_reuse(reuse_name(r)), r);
  for (auto s : {ReuseScope::kRepository, ReuseScope::kOwner}) EXPECT_EQ(parse_reuse_scope(reuse_scope_name(s)), s);
  for (auto t : {TrustDomain::kNone, TrustDomain::kPool}) EXPECT_EQ(parse_trust_domain(trust_domain_name(t)), t);
  EXPECT_FALSE(parse_job_privileges("root"));
  EXPECT_FALSE(parse_reuse("same_scope"));
  EXPECT_FALSE(parse_reuse_scope("org"));
  EXPECT_FALSE(parse_trust_domain(""));
}

TEST(ReusePolicy, DefaultsAreUserAlwaysRepositoryNone) {
  ReusePolicy p;
  EXPECT_EQ(p.job_privileges, JobPrivileges::kUser);
  EXPECT_EQ(p.reuse, Reuse::kAlways);
  EXPECT_EQ(p.reuse_scope, ReuseScope::kRepository);
  EXPECT_EQ(p.trust_domain, TrustDomain::kNone);
  EXPECT_EQ(reuse_policy_error(p), "");
}

// Every combination: only always + docker/sudo without trust_domain = pool is refused.
TEST(ReusePolicy, ValidationOverEveryCombination) {
  for (auto priv : {JobPrivileges::kUser, JobPrivileges::kDocker, JobPrivileges::kSudo}) {
    for (auto reuse : {Reuse::kAlways, Reuse::kSameScope, Reuse::kNever}) {
      for (auto scope : {ReuseScope::kRepository, ReuseScope::kOwner}) {
        for (auto trust : {TrustDomain::kNone, TrustDomain::kPool}) {
          ReusePolicy p{priv, reuse, scope, trust};
          const bool refused =
              reuse == Reuse::kAlways && priv != JobPrivileges::kUser && trust == TrustDomain::kNone;
          std::string err = reuse_policy_error(p);
          EXPECT_EQ(!err.empty(), refused) << job_privileges_name(priv) << " " << reuse_name(reuse) << " "
                                           << trust_domain_name(trust);
          if (refused) {
            EXPECT_NE(err.find("root-equivalent"), std::string::npos);
            EXPECT_NE(err.find("same-scope or never"), std::string::npos);
            EXPECT_NE(err.find("trust_domain = pool"), std::string::npos);
            EXPECT_NE(err.find(job_privileges_name(priv)), std::string::npos);
          }
        }
      }
    }
  }
}

TEST(ReusePolicy, ScopeKeyFromRegistrationUrl) {
  const auto repo = ReuseScope::kRepository, owner = ReuseScope::kOwner;
  EXPECT_EQ(scope_key_for("https://github.com/octo/app", repo), "repository:octo/app");
  EXPECT_EQ(scope_key_for("https://github.com/octo/app/", repo), "repository:octo/app");
  EXPECT_EQ(scope_key_for("https://github.com/octo/app", owner), "owner:octo");
  EXPECT_EQ(scope_key_for("https://github.com/octo", repo), "owner:octo");
  EXPECT_EQ(scope_key_for("https://github.com/octo", owner), "owner:octo");
  EXPECT_EQ(scope_key_for("https://ghe.example.com/octo/app", repo), "repository:octo/app");
  EXPECT_EQ(scope_key_for("http://127.0.0.1:8080/octo/app", repo), "repository:octo/app");
  // No owner: an enterprise's runner, or nothing to parse.
  EXPECT_EQ(scope_key_for("https://github.com/enterprises/acme", repo), "");
  EXPECT_EQ(scope_key_for("https://github.com/enterprises/acme", owner), "");
  EXPECT_EQ(scope_key_for("https://github.com/", repo), "");
  EXPECT_EQ(scope_key_for("https://github.com", repo), "");
  EXPECT_EQ(scope_key_for("", repo), "");
  EXPECT_EQ(scope_key_for("github.com/octo/app", repo), "");
  EXPECT_EQ(scope_key_for("https://github.com/octo/app/extra", repo), "");
  EXPECT_EQ(scope_key_for("https://github.com/octo/app/extra", owner), "owner:octo");
}

TEST(ReusePolicy, DrainedFateOverEveryReuse) {
  for (auto priv : {JobPrivileges::kUser, JobPrivileges::kDocker, JobPrivileges::kSudo}) {
    ReusePolicy p;
    p.job_privileges = priv;  // the fate depends on reuse alone: privileges only constrain validation
    p.reuse = Reuse::kAlways;
    DrainedDecision d = drained_fate(p, "repository:octo/app");
    EXPECT_EQ(d.fate, DrainedFate::kReturn);
    EXPECT_EQ(d.scope_key, "");
    EXPECT_EQ(drained_fate(p, "").fate, DrainedFate::kReturn);

    p.reuse = Reuse::kNever;
    d = drained_fate(p, "repository:octo/app");
    EXPECT_EQ(d.fate, DrainedFate::kTerminate);
    EXPECT_EQ(d.reason, "reuse-never");
    EXPECT_EQ(drained_fate(p, "").reason, "reuse-never");

    p.reuse = Reuse::kSameScope;
    d = drained_fate(p, "repository:octo/app");
    EXPECT_EQ(d.fate, DrainedFate::kReturnTagged);
    EXPECT_EQ(d.scope_key, "repository:octo/app");
    d = drained_fate(p, "owner:octo");
    EXPECT_EQ(d.fate, DrainedFate::kReturnTagged);
    EXPECT_EQ(d.scope_key, "owner:octo");
    d = drained_fate(p, "");
    EXPECT_EQ(d.fate, DrainedFate::kTerminate);
    EXPECT_EQ(d.reason, "reuse-no-scope");
  }
}

TEST(ReusePolicy, ScopeMayClaim) {
  EXPECT_TRUE(scope_may_claim("", "repository:octo/app"));
  EXPECT_TRUE(scope_may_claim("", ""));
  EXPECT_TRUE(scope_may_claim("repository:octo/app", "repository:octo/app"));
  EXPECT_FALSE(scope_may_claim("repository:octo/app", "repository:octo/other"));
  EXPECT_FALSE(scope_may_claim("repository:octo/app", "owner:octo"));
  EXPECT_FALSE(scope_may_claim("owner:octo", "repository:octo/app"));
  EXPECT_FALSE(scope_may_claim("repository:octo/app", ""));
  EXPECT_TRUE(scope_may_claim("owner:octo", "owner:octo"));
  EXPECT_FALSE(scope_may_claim("owner:octo", "owner:other"));
}

TEST(ReusePolicy, ClaimPreferenceOrder) {
  const std::string own = "repository:octo/app";
  using Order = std::vector<size_t>;
  // Own scope first, untagged next; each group in the given order.
  EXPECT_EQ(claim_preference_order({"", own, "", own}, own), (Order{1, 3, 0, 2}));
  // Tagged with another scope (the judge leaves those; the order still puts them last, stably).
  EXPECT_EQ(claim_preference_order({"owner:octo", "", own, "repository:octo/other"}, own), (Order{2, 1, 0, 3}));
  // Nothing to prefer: the given order.
  EXPECT_EQ(claim_preference_order({"", "", ""}, own), (Order{0, 1, 2}));
  EXPECT_EQ(claim_preference_order({own, own}, own), (Order{0, 1}));
  // No claim scope (an enterprise's runner): the given order, whatever the tags.
  EXPECT_EQ(claim_preference_order({"", own, "owner:octo"}, ""), (Order{0, 1, 2}));
  EXPECT_EQ(claim_preference_order({}, own), Order{});
  // An owner scope is a scope of its own: a repository tag of that owner is not it.
  EXPECT_EQ(claim_preference_order({"repository:octo/app", "", "owner:octo"}, "owner:octo"), (Order{2, 1, 0}));
}

}  // namespace
}  // namespace runpool::pool
