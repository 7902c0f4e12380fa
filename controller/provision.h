// runpoolctl provision: N runners for one assignment label — claimed warm from the pool first,
// the rest launched — each handed the provision's registration token through its own record,
// waited for until its agent reports `registered` for this generation, then marked running. An
// instance that cannot get there is let go and replaced (up to N times); with a minimum count, the
// provision succeeds once that many run and the rest had a bounded extra wait. On failure or
// cancellation nothing stays assigned to the dead run: claimed instances drain back to the pool,
// launched ones are terminated.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <json/json.h>

#include "controller/context.h"
#include "controller/github_actions.h"

namespace runpool::controller {

struct ProvisionOptions {
  int count = 1;
  int min_count = 0;                          // succeed with at least this many running; 0: count
  std::optional<Duration> straggler_wait;     // once min_count run; nullopt: settings.provision_straggler_wait
  bool claim_warm = true;                     // false: launch every runner (scale-up's warm-up)
  std::string resource_class;  // "": settings.default_resource_class
  std::optional<pool::UsageClass> usage;
  std::optional<std::vector<std::string>> allowed_types;  // globs; nullopt: settings.allowed_instance_types
  std::string label;                                        // "": derive_label()
  std::string check_run_id;                                 // the job's, for derive_label(); "": none
  // Keep the workflow run it serves (GITHUB_REPOSITORY, GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT), so that
  // refresh serves the label again for a re-run of its failed jobs (controller/rerun.h).
  bool keep_run = false;
  // What its CreateFleet ClientTokens derive from ("": the label). A provision for a label that was
  // provisioned before (a re-run served again) needs its own, or EC2 would answer the earlier
  // fleet's result.
  std::string fleet_seed;
  std::optional<Duration> timeout;                          // nullopt: settings.provision_timeout
  bool json = false;
  ActionsFiles actions;
  std::function<const char*(const char*)> getenv;  // GITHUB_RUN_ID … for the label
  std::function<std::string()> random;             // 16 hex digits (labels, output delimiters)
};

struct ProvisionedInstance {
  std::string instance_id;
  std::string instance_type;
  pool::UsageClass usage = pool::UsageClass::kOnDemand;
  bool warm = false;  // claimed from the pool (else launched)
  int64_t generation = 0;
  int64_t running_after_ms = 0;
};

// An instance the provision let go: it could not get to running (replaced), or not in time.
struct DroppedInstance {
  std::string instance_id;
  bool warm = false;
  std::string why;
  bool kept = false;  // failed, and kept for inspection instead of terminated (keep_failed)
};

struct ProvisionReport {
  bool ok = false;
  std::string error;
  std::string label;
  std::string resource_class;
  int requested = 0;
  int min_count = 0;
  std::vector<ProvisionedInstance> instances;  // on success: those running
  std::vector<DroppedInstance> dropped;
  int64_t elapsed_ms = 0;
  int warm() const;
  int launched() const;
};

// Runs the whole provision. Returns the exit code; throws UsageError for bad options (exit 2).
int run_provision(Context& ctx, const ProvisionOptions& options);
// The work of a provision, without its report, metrics or step outputs (scale-up's warm-up).
ProvisionReport provision(Context& ctx, const ProvisionOptions& options);

// The report as readable text, JSON, step outputs and a step-summary section.
std::string provision_text(const ProvisionReport& r);
Json::Value provision_json(const ProvisionReport& r);
Outputs provision_outputs(const ProvisionReport& r);
std::string provision_summary(const ProvisionReport& r);

}  // namespace runpool::controller
