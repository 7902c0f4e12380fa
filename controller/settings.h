// runpoolctl's configuration: one schema (settings_schema) read from a file, RUNPOOL_* variables
// and flags (common/config.h), then turned into typed Settings with every value checked up front.
// A bad value is a ConfigError naming the key, and runpoolctl exits 2 before touching anything.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "common/pool/instance_record.h"
#include "common/pool/reuse_policy.h"
#include "common/pool/scale_down_plan.h"
#include "common/pool/transitions.h"
#include "common/schedule/idle_schedule.h"
#include "common/secret.h"
#include "common/settings_table.h"

namespace runpool::controller {

// A resource class: a name jobs ask for, and the instance types (in order of preference) that
// serve it. Its pool queue is "<pool>-<name>".
struct ResourceClass {
  std::string name;
  std::vector<std::string> instance_types;
  bool operator==(const ResourceClass&) const = default;
};

// "small=c7i.large,m7i.large;large=m7i.2xlarge" → classes. Throws std::invalid_argument saying
// what is wrong (empty, duplicate class, bad class name or instance type).
std::vector<ResourceClass> parse_resource_classes(const std::string& text);
std::string format_resource_classes(const std::vector<ResourceClass>& classes);

struct Settings {
  // Where the pool lives.
  std::string table = "runpool";
  std::string pool = "default";
  std::string region;  // resolved: flag/file/env RUNPOOL_REGION, else AWS_REGION / AWS_DEFAULT_REGION
  std::string endpoint_dynamodb, endpoint_sqs, endpoint_ec2;  // "" = AWS_ENDPOINT_URL_* or public
  Duration aws_timeout{std::chrono::seconds(30)};
  int aws_max_attempts = 6;

  // GitHub: a PAT (github_token) or an App (github_app_id + key); whose runners (github_owner).
  std::string github_api_url;
  std::string github_server_url;  // web URL runners register with; derived from the API URL if unset
  std::string github_owner;       // "owner/repo", "org" or "enterprise:SLUG"
  std::string github_runner_group;  // config.sh --runnergroup (organization/enterprise); "": Default
  Secret github_token;
  std::string github_app_id;
  std::string github_app_private_key_file;
  Secret github_app_private_key;
  std::optional<int64_t> github_app_installation_id;
  Duration github_timeout{std::chrono::seconds(30)};
  int github_max_pages = 1000;  // a runner listing never stops short of the pool: 100 per page

  // The pool's instances.
  std::vector<ResourceClass> resource_classes;
  std::string default_resource_class;
  pool::UsageClass usage_class = pool::UsageClass::kSpot;
  bool on_demand_fallback = true;              // spot shortfall → on-demand
  std::vector<std::string> allowed_instance_types;  // globs; empty: any of the class's types
  std::vector<std::string> subnets;
  std::string image_id;
  std::map<std::string, std::string> resource_class_images;  // class → its own AMI (else image_id)
  std::string instance_profile;  // name, or an arn:… ARN
  std::string instance_role_id;  // AROA…: records are keyed "<role id>:<instance id>" (common/pool/record_key.h)
  std::vector<std::string> security_groups;
  std::string launch_template;   // default "runpool-<pool>"
  std::vector<std::pair<std::string, std::string>> instance_tags;  // the operator's, on instances and volumes
  int root_volume_size = 0;        // GiB; 0: the AMI's
  std::string root_volume_type;    // "": the AMI's
  std::string root_volume_device = "/dev/xvda";  // the AMI's root device name
  std::string spot_allocation_strategy = "price-capacity-optimized";
  std::string user_data_template;  // path of user-data.sh.in
  std::string agent_binary;        // the agent binary's path on the instance (@AGENT_BINARY@)
  // The agent's own config keys (agent/agent_settings.h) rendered into user-data, in order:
  // table, pool, region and endpoints from above, then every agent_* key that is set (without
  // the prefix), then agent_extra's key=value pairs.
  std::vector<std::pair<std::string, std::string>> agent_config;

  // Lifecycle deadlines written to the table.
  pool::Timeouts timeouts;

  // How the controller itself waits.
  Duration init_timeout{std::chrono::minutes(5)};  // init: the table (and index) becoming ACTIVE
  Duration provision_timeout{std::chrono::minutes(10)};
  Duration provision_straggler_wait{std::chrono::minutes(1)};  // provision --min-count: for the rest, once enough run
  Duration release_timeout{std::chrono::minutes(15)};
  Duration cancel_drain_wait{std::chrono::minutes(1)};
  Duration poll_interval{std::chrono::milliseconds(200)};
  Duration claim_wait{std::chrono::seconds(1)};        // long poll per receive (≤ 20 s)
  Duration claim_visibility{std::chrono::seconds(30)};  // a received message stays hidden this long
  Duration claim_min_remaining{std::chrono::minutes(1)};
  Duration max_heartbeat_age{std::chrono::minutes(2)};
  int fleet_rounds = 3;
  int max_count = 50;
  Duration orphan_grace{std::chrono::minutes(5)};     // refresh: tagged instance without a live record
  Duration advertise_grace{std::chrono::minutes(1)};  // refresh: idle, pool message maybe unsent → re-advertised
  // refresh: all of GitHub's runners listed at most this often (0: every pass; common/pool/runner_listing.h)
  Duration runner_listing_interval{0};
  Duration rerun_window{std::chrono::hours(72)};      // refresh: re-runs of released labels served this long
  // A failed instance is kept running, out of service, this long for inspection before it is
  // terminated (0: terminated at once; common/pool/keep_failed.h).
  Duration keep_failed{0};
  Duration agent_silence{std::chrono::minutes(10)};   // refresh: idle, agent silent this long → terminated
  // An idle instance older than this (from its launch) is never claimed; refresh retires it. 0: no limit.
  Duration max_instance_age{0};
  std::map<std::string, Duration> resource_class_max_instance_age;  // class → its own (else max_instance_age)
  int64_t max_instance_age_ms(const std::string& resource_class) const {
    auto it = resource_class_max_instance_age.find(resource_class);
    return (it == resource_class_max_instance_age.end() ? max_instance_age : it->second).count();
  }

  // What a job may do on its instance, and who may use the instance after it (common/pool/reuse_policy.h):
  // the pool's job_privileges, reuse, reuse_scope and trust_domain, and each class's own where set.
  pool::ReusePolicy reuse_policy;
  std::map<std::string, pool::ReusePolicy> resource_class_reuse_policy;  // class → its own (else reuse_policy)
  std::map<std::string, std::string> reuse_overridden_by;  // class → the first resource_class_* key that set it
  const pool::ReusePolicy& reuse_policy_for(const std::string& resource_class) const {
    auto it = resource_class_reuse_policy.find(resource_class);
    return it == resource_class_reuse_policy.end() ? reuse_policy : it->second;
  }

  // Shared pools and scale-down (docs/design.md, "Shared pools" and "Scale-down").
  bool shared = false;                     // pool_mode = shared
  std::vector<std::string> shared_labels{"self-hosted", "linux", "x64"};  // a shared runner's labels; its class is appended
  std::string os = "linux";                // the image's OS: picks the minimum running time
  std::vector<schedule::ScheduleEntry> scale_down_schedule;
  pool::ScaleDownPolicy scale_down;  // min running times, boot time, agent_silence
  Duration scale_down_drain_wait{std::chrono::minutes(2)};

  // Serving a runner scale set (runpoolctl serve; docs/design.md, "Demand-driven pools").
  std::string scale_set_name;            // "": the pool's name. Workflows ask for it as runs-on
  std::string scale_set_resource_class;  // "": default_resource_class
  int scale_set_min_armed = 0;           // runners kept listening with no job
  int scale_set_max_runners = 10;        // starting + armed + busy, at most
  Duration scale_set_arm_grace{std::chrono::seconds(30)};  // an armed runner younger than this is kept
  Duration scale_set_return_wait{std::chrono::minutes(2)};  // a cleaning this recent is waited for, not launched for
  Duration serve_reconcile_interval{std::chrono::seconds(2)};
  Duration serve_lease_ttl{std::chrono::seconds(30)};
  Duration serve_retry_wait{std::chrono::seconds(5)};
  // The scale set's name and its resource class, defaults applied.
  std::string scale_set() const { return scale_set_name.empty() ? pool : scale_set_name; }
  std::string scale_set_class() const {
    return scale_set_resource_class.empty() ? default_resource_class : scale_set_resource_class;
  }

  // Metrics as CloudWatch embedded-metric-format lines (docs/observability.md).
  std::string metrics_file;       // "": none; else EMF lines are appended to this file
  std::string metrics_log_group;  // "": none; else sent to this CloudWatch Logs group
  std::string metrics_namespace = "runpool";
  std::string endpoint_logs;      // "" = AWS_ENDPOINT_URL_LOGS or public

  // A shared runner's labels for `resource_class`: shared_labels then the class.
  std::string shared_label_list(const std::string& resource_class) const;

  const ResourceClass* find_class(const std::string& name) const;
  std::string queue_name(const std::string& resource_class) const;  // "<pool>-<class>"
};

// Every key bound to its Settings member (common/settings_table.h), in loading order.
const SettingsTable<Settings>& settings_table();
// The table's keys: type, default and help (also rendered into docs/runpoolctl.md).
std::vector<KeySpec> settings_schema();

// Typed, cross-checked settings. Throws ConfigError naming the key on anything invalid.
// `getenv` is consulted for the fallbacks only: the region (AWS_REGION, AWS_DEFAULT_REGION) and a
// GitHub Actions job's GITHUB_API_URL / GITHUB_SERVER_URL (when neither URL is configured).
Settings load_settings(const Config& config, const std::function<const char*(const char*)>& getenv);

// The web URL runners register with, for a REST API base: api.github.com → github.com,
// https://HOST/api/v3 → https://HOST, https://api.SUB.ghe.com → https://SUB.ghe.com.
std::string github_server_for_api(const std::string& api_base);

// What a command needs beyond the basics; each throws ConfigError naming the missing key.
void require_aws(const Settings& s);       // region, instance_role_id
void require_github(const Settings& s);    // github_owner and a PAT or an App
void require_launch(const Settings& s);    // resource_classes, image_id, user_data_template …

}  // namespace runpool::controller
