// Settings: reuse and job privileges, the pool's policy and each class's overrides.
#include "controller/settings_rows.h"

#include <filesystem>
#include <stdexcept>

#include "common/cloud_init/agent_key_bounds.h"
#include "common/github/endpoint.h"
#include "common/pool/record_key.h"
#include "controller/user_data.h"

namespace runpool::controller::settings_rows {

std::vector<Row> reuse_rows() {
  // Reuse and job privileges (docs/configuration.md, "Reuse and job privileges"): the pool's
  // policy, then each class's overrides field by field; every class's result is checked after the table.
  auto policy_row = [](const char* key, const char* def, std::string help, auto parse, auto set) -> Row {
    return {{key, KeyType::kString, def, std::move(help)}, [key, parse, set](const Config& c, Settings& s) {
              std::string v = c.get_string(key);
              auto parsed = parse(v);
              if (!parsed) c.reject(key, "'" + v + "' must be " + reuse_values_of(key));
              set(s.reuse_policy, *parsed);
            }};
  };
  auto class_policy_row = [](const char* key, std::string help, auto parse, auto set) -> Row {
    return {{key, KeyType::kString, "", std::move(help)}, [key, parse, set](const Config& c, Settings& s) {
              per_class_entries(c, s, key, "class=value (" + reuse_values_of(key) + ")", parse,
                                [&](const std::string& cls, auto value) {
                                  auto [it, fresh] = s.resource_class_reuse_policy.try_emplace(cls, s.reuse_policy);
                                  set(it->second, value);
                                  s.reuse_overridden_by.try_emplace(cls, key);
                                });
            }};
  };
  auto set_privileges = [](pool::ReusePolicy& p, pool::JobPrivileges v) { p.job_privileges = v; };
  auto set_reuse = [](pool::ReusePolicy& p, pool::Reuse v) { p.reuse = v; };
  auto set_scope = [](pool::ReusePolicy& p, pool::ReuseScope v) { p.reuse_scope = v; };
  auto set_trust = [](pool::ReusePolicy& p, pool::TrustDomain v) { p.trust_domain = v; };
  return {
      policy_row("job_privileges", "user",
                 "what a job may do on its instance, recorded at launch and granted by its agent: user (nothing beyond "
                 "its own user), docker (the job user is in the docker group: root-equivalent) or sudo (the job user "
                 "may become root through a sudoers drop-in of its own; with a fixed runner user, root is the image's "
                 "to give)",
                 pool::parse_job_privileges, set_privileges),
      policy_row("reuse", "always",
                 "what a drained instance serves next: always (any workflow), same-scope (the same repository or owner "
                 "only, see reuse_scope) or never (terminated after one assignment)",
                 pool::parse_reuse, set_reuse),
      policy_row("reuse_scope", "repository",
                 "for reuse set to same-scope: whose instance it stays, the repository or the owner of its last run",
                 pool::parse_reuse_scope, set_scope),
      policy_row("trust_domain", "none",
                 "pool: the operator declares every workflow that can use this pool one trust domain, which allows "
                 "reuse = always with job_privileges = docker or sudo; none: no such declaration",
                 pool::parse_trust_domain, set_trust),
      class_policy_row("resource_class_job_privileges",
                       "job_privileges of particular resource classes, class=value[;class=value]; others use "
                       "job_privileges",
                       pool::parse_job_privileges, set_privileges),
      class_policy_row("resource_class_reuse",
                       "reuse of particular resource classes, class=value[;class=value]; others use reuse",
                       pool::parse_reuse, set_reuse),
      class_policy_row("resource_class_reuse_scope",
                       "reuse_scope of particular resource classes, class=value[;class=value]; others use reuse_scope",
                       pool::parse_reuse_scope, set_scope),
      class_policy_row("resource_class_trust_domain",
                       "trust_domain of particular resource classes, class=value[;class=value]; others use trust_domain",
                       pool::parse_trust_domain, set_trust),
  };
}

}  // namespace runpool::controller::settings_rows
