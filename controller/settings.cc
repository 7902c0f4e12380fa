#include "controller/settings.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "common/github/endpoint.h"
#include "common/pool/record_key.h"
#include "controller/user_data.h"
#include "common/text.h"

#ifndef RUNPOOL_USER_DATA_TEMPLATE
#define RUNPOOL_USER_DATA_TEMPLATE "/usr/local/share/runpool/user-data.sh.in"
#endif

namespace runpool::controller {
namespace {

constexpr int64_t kMs = 1;
constexpr int64_t kSec = 1000;
constexpr int64_t kMin = 60 * kSec;
constexpr int64_t kHour = 60 * kMin;
constexpr int64_t kDay = 24 * kHour;

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

// Resource class names end up in queue names (≤ 80: alphanumerics, '-', '_') and in labels.
bool valid_class_name(const std::string& s) {
  return !s.empty() && s.size() <= 32 && std::all_of(s.begin(), s.end(), is_name_char);
}

// EC2 instance type names: "c7i.large", "m7i-flex.xlarge", "u-6tb1.metal".
bool valid_instance_type(const std::string& s) {
  if (s.size() < 3 || s.size() > 40) return false;
  auto dot = s.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == s.size() || s.find('.', dot + 1) != std::string::npos) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
           c == '-';
  });
}

std::string trim(std::string_view s) { return std::string(text::trim(s, " \t")); }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + sep) {
    if (c == sep) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

bool valid_aws_id(const std::string& s, const std::string& prefix) {
  if (s.rfind(prefix, 0) != 0 || s.size() == prefix.size() || s.size() > prefix.size() + 17) return false;
  return std::all_of(s.begin() + static_cast<long>(prefix.size()), s.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::vector<ResourceClass> parse_resource_classes(const std::string& text) {
  std::vector<ResourceClass> out;
  std::set<std::string> names;
  if (trim(text).empty()) throw std::invalid_argument("no resource class given");
  for (const std::string& part : split(text, ';')) {
    if (part.empty()) continue;  // a trailing ';'
    auto eq = part.find('=');
    if (eq == std::string::npos) {
      throw std::invalid_argument("'" + part + "': expected name=type[,type…]");
    }
    ResourceClass rc;
    rc.name = trim(part.substr(0, eq));
    if (!valid_class_name(rc.name)) {
      throw std::invalid_argument("class name '" + rc.name + "': 1–32 letters, digits, '-' or '_'");
    }
    if (!names.insert(rc.name).second) throw std::invalid_argument("class '" + rc.name + "' is given twice");
    for (std::string t : split(part.substr(eq + 1), ',')) {
      if (t.empty()) continue;
      if (!valid_instance_type(t)) throw std::invalid_argument("class '" + rc.name + "': bad instance type '" + t + "'");
      if (std::find(rc.instance_types.begin(), rc.instance_types.end(), t) == rc.instance_types.end()) {
        rc.instance_types.push_back(t);
      }
    }
    if (rc.instance_types.empty()) throw std::invalid_argument("class '" + rc.name + "' has no instance type");
    if (rc.instance_types.size() > 20) throw std::invalid_argument("class '" + rc.name + "' has more than 20 types");
    out.push_back(std::move(rc));
  }
  if (out.empty()) throw std::invalid_argument("no resource class given");
  return out;
}

std::string format_resource_classes(const std::vector<ResourceClass>& classes) {
  std::string out;
  for (const auto& rc : classes) {
    if (!out.empty()) out += ';';
    out += rc.name + '=';
    for (size_t i = 0; i < rc.instance_types.size(); ++i) out += (i ? "," : "") + rc.instance_types[i];
  }
  return out;
}

const ResourceClass* Settings::find_class(const std::string& name) const {
  for (const auto& rc : resource_classes) {
    if (rc.name == name) return &rc;
  }
  return nullptr;
}

std::string Settings::shared_label_list(const std::string& resource_class) const {
  std::string out;
  for (const auto& l : shared_labels) out += l + ",";
  return out + resource_class;
}

std::string Settings::queue_name(const std::string& resource_class) const { return pool + "-" + resource_class; }

std::vector<KeySpec> settings_schema() {
  using K = KeyType;
  return {
      // Where the pool lives.
      {"table", K::kString, "runpool", "the DynamoDB state table (several pools may share one)"},
      {"pool", K::kString, "default", "the pool's name: tags, queue names and runner names carry it"},
      {"region", K::kString, "", "AWS region (else AWS_REGION / AWS_DEFAULT_REGION)"},
      {"endpoint_dynamodb", K::kString, "", "DynamoDB endpoint URL (else AWS_ENDPOINT_URL_DYNAMODB, else AWS's)"},
      {"endpoint_sqs", K::kString, "", "SQS endpoint URL (else AWS_ENDPOINT_URL_SQS, else AWS's)"},
      {"endpoint_ec2", K::kString, "", "EC2 endpoint URL (else AWS_ENDPOINT_URL_EC2, else AWS's)"},
      {"aws_timeout", K::kDuration, "30s", "timeout of one AWS request", 100 * kMs, 10 * kMin},
      {"aws_max_attempts", K::kInt, "6", "attempts per AWS call, the first included", 1, 20},
      // GitHub.
      {"github_api_url", K::kString, "https://api.github.com",
       "GitHub REST API base (GHES: https://HOST/api/v3); when neither it nor github_server_url is set, a "
       "workflow's GITHUB_API_URL"},
      {"github_server_url", K::kString, "",
       "GitHub web URL runners register with (default: derived from github_api_url; when neither is set, a "
       "workflow's GITHUB_SERVER_URL)"},
      {"github_owner", K::kString, "",
       "whose runners: \"owner/repo\", an organization, or \"enterprise:SLUG\" (an enterprise's runners: a "
       "classic PAT with manage_runners:enterprise; GitHub Apps cannot manage them)"},
      {"github_runner_group", K::kString, "",
       "the runner group organization or enterprise runners join (config.sh --runnergroup; default: the "
       "Default group); not for a repository's runners"},
      {"github_token", K::kSecret, "",
       "a personal access token: classic with repo (repository runners), admin:org (organization) or "
       "manage_runners:enterprise (enterprise), or fine-grained with Administration: read and write (repository) "
       "or Self-hosted runners: read and write (organization); set it through RUNPOOL_GITHUB_TOKEN or the config "
       "file, never on the command line"},
      {"github_app_id", K::kString, "", "GitHub App: its client ID or App ID (instead of a PAT)"},
      {"github_app_private_key_file", K::kString, "", "GitHub App: path of its PEM private key"},
      {"github_app_private_key", K::kSecret, "", "GitHub App: the PEM private key itself (e.g. from the environment)"},
      {"github_app_installation_id", K::kInt, "", "GitHub App: installation id (default: looked up)", 1},
      {"github_timeout", K::kDuration, "30s", "timeout of one GitHub request", 100 * kMs, 10 * kMin},
      {"github_max_pages", K::kInt, "1000",
       "the most pages (100 runners each) one runner listing may read; a longer list fails rather than "
       "act on a part of it",
       1, 100000},
      // The pool's instances.
      {"resource_classes", K::kString, "",
       "resource classes and their instance types in order of preference: name=type[,type…][;name=…]"},
      {"default_resource_class", K::kString, "", "provision's class when none is given (default: the first)"},
      {"usage_class", K::kString, "spot", "spot or on-demand, when provision is not told"},
      {"on_demand_fallback", K::kBool, "true", "launch on-demand when spot capacity is short (and claim either)"},
      {"allowed_instance_types", K::kList, "", "globs limiting the types provision claims and launches ('c* m7i.*')"},
      {"subnets", K::kList, "", "subnet ids to launch into (CreateFleet tries them all)"},
      {"image_id", K::kString, "", "AMI of the runner instances"},
      {"resource_class_images", K::kString, "",
       "AMIs of particular resource classes (an arm64 or GPU image), class=ami-…[;class=ami-…]; others run image_id"},
      {"instance_profile", K::kString, "", "instance profile (name or ARN) giving the agent its narrow role"},
      {"instance_role_id", K::kString, "",
       "the unique id (AROA…) of the instance profile's role (required): each record is stored under "
       "\"<role id>:<instance id>\", the caller id AWS gives the instance's requests, so the instance policy lets an "
       "instance reach its own record only; the stack's InstanceRoleId output, or `aws iam get-role --role-name NAME "
       "--query Role.RoleId`"},
      {"security_groups", K::kList, "", "security group ids"},
      {"launch_template", K::kString, "", "launch template name (default: runpool-<pool>)"},
      {"instance_tags", K::kList, "",
       "extra tags on the instances and their volumes, Key=Value each ('Name=ci-runner CostCenter=42'); keys "
       "starting runpool: are runpool's own"},
      {"root_volume_size", K::kInt, "0", "the root volume's size in GiB; 0: the AMI's", 0, 65536},
      {"root_volume_type", K::kString, "", "the root volume's type (gp3, gp2, io2, …); empty: the AMI's"},
      {"root_volume_device", K::kString, "/dev/xvda",
       "the AMI's root device name that root_volume_size and root_volume_type apply to (Amazon Linux and Debian: "
       "/dev/xvda; Ubuntu: /dev/sda1)"},
      {"spot_allocation_strategy", K::kString, "price-capacity-optimized", "CreateFleet's spot allocation strategy"},
      {"user_data_template", K::kString, RUNPOOL_USER_DATA_TEMPLATE,
       "the user-data template (@AGENT_CONFIG@ and @AGENT_BINARY@ are filled in)"},
      {"agent_binary", K::kString, "",
       "the agent binary's absolute path on the instance; empty: the packaged runpool-agent.service runs it"},
      {"agent_runner_root", K::kString, "", "agent: runner_root (may hold {instance_id}); unset: the agent's default"},
      {"agent_runner_template", K::kString, "", "agent: runner_template, the unpacked runner copied into the root"},
      {"agent_runner_user", K::kString, "", "agent: runner_user, the unprivileged user running the runner"},
      {"agent_drain_capable", K::kBool, "",
       "agent: drain_capable — ignored (kept so older configuration parses): the agent detects how the runner drains"},
      {"agent_heartbeat_interval", K::kDuration, "", "agent: heartbeat_interval", 50 * kMs, kHour},
      {"agent_assignment_poll_interval", K::kDuration, "", "agent: assignment_poll_interval", 20 * kMs, 5 * kMin},
      {"agent_imds_endpoint", K::kString, "", "agent: imds_endpoint (tests only; else the instance's own)"},
      {"agent_extra", K::kString, "", "agent: further config lines, key=value;key=value"},
      // Lifecycle deadlines (pool::Timeouts).
      {"boot_timeout", K::kDuration, "10m", "created: launch → registered, else terminated", kSec, kDay},
      {"registration_timeout", K::kDuration, "5m", "claimed: claim → registered, else terminated", kSec, kDay},
      {"max_runtime", K::kDuration, "6h", "running: then a drain starts", kSec, 30 * kDay},
      {"drain_timeout", K::kDuration, "15m", "draining: drain → drained, else terminated", kSec, kDay},
      {"hard_grace", K::kDuration, "30m", "running: terminated regardless this long after max_runtime", kSec, kDay},
      {"idle_ttl", K::kDuration, "1h", "idle: an unclaimed instance retires after this", kSec, 30 * kDay},
      {"terminate_timeout", K::kDuration, "10m", "terminating: retry termination until then", kSec, kDay},
      {"retention", K::kDuration, "1d", "terminated records are deleted after this", kSec, 365 * kDay},
      // How runpoolctl waits.
      {"init_timeout", K::kDuration, "5m", "init: how long to wait for the table and its index to become active", kSec,
       kDay},
      {"provision_timeout", K::kDuration, "10m", "provision: claim + launch + registration must finish in this",
       kSec, kDay},
      {"release_timeout", K::kDuration, "15m", "release: how long to wait for the agents' drained", kSec, kDay},
      {"cancel_drain_wait", K::kDuration, "1m",
       "a failed provision: how long to wait for claimed instances to drain back to the pool", 0, kHour},
      {"poll_interval", K::kDuration, "200ms", "how often waits re-read the table", 10 * kMs, kMin},
      {"claim_wait", K::kDuration, "1s", "long poll of one pool receive (0–20s)", 0, 20 * kSec},
      {"claim_visibility", K::kDuration, "30s", "a received pool message stays hidden this long", kSec, 12 * kHour},
      {"claim_min_remaining", K::kDuration, "1m", "an idle instance must have this much idle life left to be claimed",
       0, kDay},
      {"max_heartbeat_age", K::kDuration, "2m", "an idle instance's agent must have beaten this recently", kSec,
       kDay},
      {"fleet_rounds", K::kInt, "3", "CreateFleet calls per usage class to top up a partial launch", 1, 10},
      {"max_count", K::kInt, "50", "the most instances one provision may ask for", 1, 1000},
      {"orphan_grace", K::kDuration, "5m", "refresh: a tagged instance without a live record is terminated after this",
       kSec, kDay},
      {"advertise_grace", K::kDuration, "1m",
       "refresh: an idle record whose pool message may be missing (advertise_pending still set) is re-advertised "
       "after this; a release's SendMessage must fit in it",
       kSec, kHour},
      {"agent_silence", K::kDuration, "10m",
       "refresh: an idle instance whose agent has not beaten for this long is terminated (longer than "
       "max_heartbeat_age)",
       kSec, kDay},
      {"max_instance_age", K::kDuration, "0",
       "an idle instance older than this (since its launch) is never claimed and refresh retires it, so a warm pool "
       "keeps rolling onto the current image and runner (0: no limit)",
       0, 365 * kDay},
      {"resource_class_max_instance_age", K::kString, "",
       "max_instance_age of particular resource classes, class=duration[;class=duration] (small=3d;large=7d); "
       "others use max_instance_age"},
      // Reuse and job privileges (docs/configuration.md, "Reuse and job privileges").
      {"job_privileges", K::kString, "user",
       "what a job may do on its instance, recorded at launch and granted by its agent: user (nothing beyond its own "
       "user), docker (the job user is in the docker group: root-equivalent) or sudo (the job user may become "
       "root through a sudoers drop-in of its own; with a fixed runner user, root is the image's to give)"},
      {"reuse", K::kString, "always",
       "what a drained instance serves next: always (any workflow), same-scope (the same repository or owner only, "
       "see reuse_scope) or never (terminated after one assignment)"},
      {"reuse_scope", K::kString, "repository", "for reuse set to same-scope: whose instance it stays, the repository or the owner of its last run"},
      {"trust_domain", K::kString, "none",
       "pool: the operator declares every workflow that can use this pool one trust domain, which allows reuse = "
       "always with job_privileges = docker or sudo; none: no such declaration"},
      {"resource_class_job_privileges", K::kString, "",
       "job_privileges of particular resource classes, class=value[;class=value]; others use job_privileges"},
      {"resource_class_reuse", K::kString, "",
       "reuse of particular resource classes, class=value[;class=value]; others use reuse"},
      {"resource_class_reuse_scope", K::kString, "",
       "reuse_scope of particular resource classes, class=value[;class=value]; others use reuse_scope"},
      {"resource_class_trust_domain", K::kString, "",
       "trust_domain of particular resource classes, class=value[;class=value]; others use trust_domain"},
      // Shared pools and scale-down.
      {"pool_mode", K::kString, "run-scoped",
       "run-scoped (provision registers runners per workflow run under a unique label) or shared (scale-up "
       "keeps runners registered with shared_labels, serving any workflow)"},
      {"shared_labels", K::kList, "self-hosted,linux,x64",
       "shared pools: the labels a runner registers with; its resource class is appended"},
      {"os", K::kString, "linux", "the image's operating system, linux or windows (scale-down's minimum running time)"},
      {"scale_down_schedule", K::kString, "[]",
       "the idle quota as JSON: [{\"cron\": \"* 8-18 * * mon-fri\", \"time_zone\": \"Europe/Berlin\", \"idle\": 3, "
       "\"eviction\": \"oldest_first\", \"resource_class\": \"small\"}, …]; the first entry whose cron matches the "
       "current minute decides, none matching means 0; an empty schedule keeps every idle instance (docs/configuration.md)"},
      {"min_running_time_linux", K::kDuration, "5m", "scale-down: a Linux instance younger than this is kept", 0,
       kDay},
      {"min_running_time_windows", K::kDuration, "15m", "scale-down: a Windows instance younger than this is kept",
       0, kDay},
      {"runner_boot_time", K::kDuration, "5m",
       "scale-down: an instance whose runner GitHub does not list this long into created, claimed or running is marked orphan", kSec,
       kDay},
      {"scale_down_drain_wait", K::kDuration, "2m",
       "scale-down: how long a pass waits for the drains it started (the rest finish on the next pass)", 0, kHour},
      // Metrics.
      {"metrics_file", K::kString, "", "append CloudWatch embedded-metric-format lines to this file"},
      {"metrics_log_group", K::kString, "", "send embedded-metric-format events to this CloudWatch Logs group"},
      {"metrics_namespace", K::kString, "runpool", "the CloudWatch namespace of the metrics"},
      {"endpoint_logs", K::kString, "", "CloudWatch Logs endpoint URL (else AWS_ENDPOINT_URL_CLOUDWATCH_LOGS, else AWS's)"},
      // Logging.
      {"log_format", K::kString, "text", "text or json (on stderr)"},
      {"log_level", K::kString, "info", "trace, debug, info, warn, error"},
  };
}

Settings load_settings(const Config& c, const std::function<const char*(const char*)>& getenv) {
  Settings s;
  auto name_check = [&](const std::string& key, size_t max_len) {
    std::string v = c.get_string(key);
    if (v.empty() || v.size() > max_len || !std::all_of(v.begin(), v.end(), is_name_char)) {
      c.reject(key, "'" + v + "' must be 1–" + std::to_string(max_len) + " letters, digits, '-' or '_'");
    }
    return v;
  };
  s.table = c.get_string("table");
  if (s.table.size() < 3 || s.table.size() > 255 ||
      !std::all_of(s.table.begin(), s.table.end(), [](char ch) { return is_name_char(ch) || ch == '.'; })) {
    c.reject("table", "'" + s.table + "' must be 3–255 letters, digits, '-', '_' or '.'");
  }
  s.pool = name_check("pool", 40);
  s.region = c.get_string("region");
  if (s.region.empty()) {
    for (const char* var : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
      if (const char* v = getenv(var); v && *v) {
        s.region = v;
        break;
      }
    }
  }
  for (const char* key : {"endpoint_dynamodb", "endpoint_sqs", "endpoint_ec2", "endpoint_logs"}) {
    std::string v = c.get_string(key);
    if (!v.empty() && v.rfind("http://", 0) != 0 && v.rfind("https://", 0) != 0) {
      c.reject(key, "'" + v + "' is not an http(s) URL");
    }
  }
  s.endpoint_dynamodb = c.get_string("endpoint_dynamodb");
  s.endpoint_sqs = c.get_string("endpoint_sqs");
  s.endpoint_ec2 = c.get_string("endpoint_ec2");
  s.aws_timeout = c.get_duration("aws_timeout");
  s.aws_max_attempts = static_cast<int>(c.get_int("aws_max_attempts"));

  {
    // Configured URLs win; a GitHub Actions job's own (GITHUB_API_URL, GITHUB_SERVER_URL) come next.
    auto env_of = [&](const char* var) -> std::string {
      const char* v = getenv(var);
      return v ? v : "";
    };
    std::string api = c.origin("github_api_url") == "default" ? "" : c.get_string("github_api_url");
    try {
      github::GithubEndpoints e = github::resolve_endpoints(api, c.get_string("github_server_url"),
                                                            env_of("GITHUB_API_URL"), env_of("GITHUB_SERVER_URL"));
      s.github_api_url = e.api_base;
      s.github_server_url = e.server_url;
    } catch (const std::invalid_argument& e) {
      c.reject(std::string(e.what()).rfind("github_server_url", 0) == 0 ? "github_server_url" : "github_api_url",
               e.what());
    }
  }
  s.github_owner = c.get_string("github_owner");
  std::optional<github::OwnerScope> scope;
  if (!s.github_owner.empty()) {
    try {
      scope = github::OwnerScope::parse(s.github_owner);
    } catch (const std::invalid_argument& e) {
      c.reject("github_owner", e.what());
    }
  }
  s.github_runner_group = c.get_string("github_runner_group");
  if (!s.github_runner_group.empty()) {
    if (!github::valid_runner_group(s.github_runner_group)) {
      c.reject("github_runner_group", "'" + s.github_runner_group + "': letters, digits, spaces and - _ . only, "
               "starting with a letter or digit, at most 100");
    }
    if (scope && scope->is_repository()) {
      c.reject("github_runner_group", "runner groups are for organization and enterprise runners; github_owner '" +
               s.github_owner + "' is a repository");
    }
  }
  s.github_token = c.get_secret("github_token");
  s.github_app_id = c.get_string("github_app_id");
  s.github_app_private_key_file = c.get_string("github_app_private_key_file");
  s.github_app_private_key = c.get_secret("github_app_private_key");
  if (c.has("github_app_installation_id")) s.github_app_installation_id = c.get_int("github_app_installation_id");
  s.github_timeout = c.get_duration("github_timeout");
  s.github_max_pages = static_cast<int>(c.get_int("github_max_pages"));
  if (!s.github_token.empty() && !s.github_app_id.empty()) {
    c.reject("github_app_id", "give either github_token or a GitHub App, not both");
  }
  if (scope && scope->is_enterprise() && !s.github_app_id.empty()) {
    c.reject("github_app_id", "GitHub Apps cannot manage an enterprise's runners; give github_token, a classic "
             "personal access token with the manage_runners:enterprise scope");
  }
  if (!s.github_app_private_key_file.empty() && !s.github_app_private_key.empty()) {
    c.reject("github_app_private_key_file", "give either github_app_private_key_file or github_app_private_key");
  }

  if (c.has("resource_classes")) {
    try {
      s.resource_classes = parse_resource_classes(c.get_string("resource_classes"));
    } catch (const std::invalid_argument& e) {
      c.reject("resource_classes", e.what());
    }
  }
  s.default_resource_class = c.get_string("default_resource_class");
  if (!s.default_resource_class.empty()) {
    if (!s.find_class(s.default_resource_class)) {
      c.reject("default_resource_class", "'" + s.default_resource_class + "' is not one of resource_classes");
    }
  } else if (!s.resource_classes.empty()) {
    s.default_resource_class = s.resource_classes.front().name;
  }
  for (const auto& rc : s.resource_classes) {
    if (s.queue_name(rc.name).size() > 80) {
      c.reject("resource_classes", "queue name " + s.queue_name(rc.name) + " is longer than 80");
    }
    // The agents' wake-up queues are named "<pool>-wake-<instance id>" (common/pool/wake_queue.h).
    if (rc.name.rfind("wake-", 0) == 0) {
      c.reject("resource_classes", "'" + rc.name + "': names starting with wake- are kept for the agents' wake-up queues");
    }
  }
  auto usage = pool::parse_usage_class(c.get_string("usage_class"));
  if (!usage) c.reject("usage_class", "'" + c.get_string("usage_class") + "' must be spot or on-demand");
  s.usage_class = *usage;
  s.on_demand_fallback = c.get_bool("on_demand_fallback");
  s.allowed_instance_types = c.get_list("allowed_instance_types");
  s.subnets = c.get_list("subnets");
  for (const auto& sn : s.subnets) {
    if (!valid_aws_id(sn, "subnet-")) c.reject("subnets", "'" + sn + "' is not a subnet id");
  }
  s.image_id = c.get_string("image_id");
  if (!s.image_id.empty() && !valid_aws_id(s.image_id, "ami-")) {
    c.reject("image_id", "'" + s.image_id + "' is not an AMI id");
  }
  for (const std::string& entry : split(c.get_string("resource_class_images"), ';')) {
    if (trim(entry).empty()) continue;
    auto eq = entry.find('=');
    std::string cls = eq == std::string::npos ? "" : trim(entry.substr(0, eq));
    std::string ami = eq == std::string::npos ? "" : trim(entry.substr(eq + 1));
    const bool known = std::any_of(s.resource_classes.begin(), s.resource_classes.end(),
                                   [&](const ResourceClass& rc) { return rc.name == cls; });
    if (!known || !valid_aws_id(ami, "ami-") || s.resource_class_images.count(cls)) {
      c.reject("resource_class_images", "'" + trim(entry) + "' is not class=ami-… for a class of resource_classes, "
               "once per class");
    }
    s.resource_class_images[cls] = ami;
  }
  s.instance_profile = c.get_string("instance_profile");
  s.instance_role_id = c.get_string("instance_role_id");
  if (!s.instance_role_id.empty() && !pool::is_role_unique_id(s.instance_role_id)) {
    c.reject("instance_role_id", "'" + s.instance_role_id + "' is not a role's unique id (AROA followed by capital "
             "letters and digits; not the role's name or ARN)");
  }
  s.security_groups = c.get_list("security_groups");
  for (const auto& sg : s.security_groups) {
    if (!valid_aws_id(sg, "sg-")) c.reject("security_groups", "'" + sg + "' is not a security group id");
  }
  s.launch_template = c.get_string("launch_template");
  if (s.launch_template.empty()) s.launch_template = "runpool-" + s.pool;
  if (s.launch_template.size() < 3 || s.launch_template.size() > 128 ||
      !std::all_of(s.launch_template.begin(), s.launch_template.end(),
                   [](char ch) { return is_name_char(ch) || ch == '.' || ch == '/' || ch == '(' || ch == ')'; })) {
    c.reject("launch_template", "'" + s.launch_template + "' is not a launch template name");
  }
  s.spot_allocation_strategy = c.get_string("spot_allocation_strategy");
  for (const auto& kv : c.get_list("instance_tags")) {
    auto eq = kv.find('=');
    std::string key = eq == std::string::npos ? "" : kv.substr(0, eq);
    if (key.empty() || key.size() > 128 || kv.size() - eq - 1 > 256) {
      c.reject("instance_tags", "'" + kv + "' is not Key=Value (a key of 1 to 128 characters, a value of at most 256)");
    }
    if (key.rfind("runpool:", 0) == 0 || key.rfind("aws:", 0) == 0) {
      c.reject("instance_tags", "'" + key + "': keys starting runpool: or aws: are not the operator's to set");
    }
    s.instance_tags.emplace_back(key, kv.substr(eq + 1));
  }
  s.root_volume_size = static_cast<int>(c.get_int("root_volume_size"));
  s.root_volume_type = c.get_string("root_volume_type");
  static const std::set<std::string> kVolumeTypes = {"gp3", "gp2", "io1", "io2", "st1", "sc1", "standard"};
  if (!s.root_volume_type.empty() && !kVolumeTypes.count(s.root_volume_type)) {
    c.reject("root_volume_type", "'" + s.root_volume_type + "' is not an EBS volume type (gp3 gp2 io1 io2 st1 sc1 standard)");
  }
  s.root_volume_device = c.get_string("root_volume_device");
  if (s.root_volume_device.rfind("/dev/", 0) != 0 || s.root_volume_device.size() > 32 ||
      !std::all_of(s.root_volume_device.begin(), s.root_volume_device.end(),
                   [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '/'; })) {
    c.reject("root_volume_device", "'" + s.root_volume_device + "' is not a device name like /dev/xvda");
  }
  {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    s.user_data_template =
        locate_template(c.get_string("user_data_template"), RUNPOOL_USER_DATA_TEMPLATE, ec ? "" : self.string());
  }
  s.agent_binary = c.get_string("agent_binary");
  if (!s.agent_binary.empty() &&
      (s.agent_binary[0] != '/' || !std::all_of(s.agent_binary.begin(), s.agent_binary.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '/' || ch == '.' || ch == '_' || ch == '-' ||
               ch == '+';
      }))) {
    c.reject("agent_binary", "'" + s.agent_binary + "' must be an absolute path of letters, digits and / . _ - +");
  }
  s.agent_config = {{"table", s.table}, {"pool", s.pool}};
  if (!s.instance_role_id.empty()) s.agent_config.emplace_back("instance_role_id", s.instance_role_id);
  if (!s.region.empty()) s.agent_config.emplace_back("region", s.region);
  if (!s.endpoint_dynamodb.empty()) s.agent_config.emplace_back("endpoint_dynamodb", s.endpoint_dynamodb);
  if (!s.endpoint_ec2.empty()) s.agent_config.emplace_back("endpoint_ec2", s.endpoint_ec2);
  if (!s.endpoint_sqs.empty()) s.agent_config.emplace_back("endpoint_sqs", s.endpoint_sqs);
  if (!s.github_runner_group.empty()) s.agent_config.emplace_back("runner_group", s.github_runner_group);
  for (const char* key : {"agent_runner_root", "agent_runner_template", "agent_runner_user", "agent_drain_capable",
                          "agent_heartbeat_interval", "agent_assignment_poll_interval", "agent_imds_endpoint"}) {
    if (c.has(key)) s.agent_config.emplace_back(std::string(key).substr(6), c.get_string(key));
  }
  for (const std::string& line : split(c.get_string("agent_extra"), ';')) {
    if (line.empty()) continue;
    auto eq = line.find('=');
    std::string key = eq == std::string::npos ? "" : trim(line.substr(0, eq));
    if (key.empty() || !std::all_of(key.begin(), key.end(), [](char ch) { return std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)) || ch == '_'; })) {
      c.reject("agent_extra", "'" + line + "' is not key=value");
    }
    s.agent_config.emplace_back(key, trim(line.substr(eq + 1)));
  }
  if (c.has("agent_heartbeat_interval") && c.get_duration("agent_heartbeat_interval") >= c.get_duration("max_heartbeat_age")) {
    c.reject("max_heartbeat_age", "must be longer than agent_heartbeat_interval");
  }

  auto ms = [&](const char* key) { return c.get_duration(key).count(); };
  s.timeouts.boot_ms = ms("boot_timeout");
  s.timeouts.registration_ms = ms("registration_timeout");
  s.timeouts.max_runtime_ms = ms("max_runtime");
  s.timeouts.drain_ms = ms("drain_timeout");
  s.timeouts.hard_grace_ms = ms("hard_grace");
  s.timeouts.idle_ttl_ms = ms("idle_ttl");
  s.timeouts.terminate_ms = ms("terminate_timeout");
  s.timeouts.retention_ms = ms("retention");

  s.init_timeout = c.get_duration("init_timeout");
  s.provision_timeout = c.get_duration("provision_timeout");
  s.release_timeout = c.get_duration("release_timeout");
  s.cancel_drain_wait = c.get_duration("cancel_drain_wait");
  s.poll_interval = c.get_duration("poll_interval");
  s.claim_wait = c.get_duration("claim_wait");
  s.claim_visibility = c.get_duration("claim_visibility");
  s.claim_min_remaining = c.get_duration("claim_min_remaining");
  s.max_heartbeat_age = c.get_duration("max_heartbeat_age");
  s.fleet_rounds = static_cast<int>(c.get_int("fleet_rounds"));
  s.max_count = static_cast<int>(c.get_int("max_count"));
  s.orphan_grace = c.get_duration("orphan_grace");
  s.advertise_grace = c.get_duration("advertise_grace");
  s.agent_silence = c.get_duration("agent_silence");
  s.max_instance_age = c.get_duration("max_instance_age");
  for (const std::string& entry : split(c.get_string("resource_class_max_instance_age"), ';')) {
    if (trim(entry).empty()) continue;
    auto eq = entry.find('=');
    std::string cls = eq == std::string::npos ? "" : trim(entry.substr(0, eq));
    auto age = eq == std::string::npos ? std::nullopt : parse_duration(trim(entry.substr(eq + 1)));
    const bool known = std::any_of(s.resource_classes.begin(), s.resource_classes.end(),
                                   [&](const ResourceClass& rc) { return rc.name == cls; });
    if (!known || !age || age->count() < 0 || s.resource_class_max_instance_age.count(cls)) {
      c.reject("resource_class_max_instance_age",
               "'" + trim(entry) + "' is not class=duration for a class of resource_classes, once per class");
      continue;
    }
    s.resource_class_max_instance_age[cls] = *age;
  }
  s.scale_down.agent_silence_ms = s.agent_silence.count();
  {
    // The pool's policy, then each class's overrides field by field; every class's result is checked.
    auto values_of = [](std::string_view key) -> std::string {
      if (key.find("job_privileges") != std::string_view::npos) return "user, docker or sudo";
      if (key.find("reuse_scope") != std::string_view::npos) return "repository or owner";
      if (key.find("reuse") != std::string_view::npos) return "always, same-scope or never";
      return "pool or none";
    };
    auto field = [&](const char* key, auto parse, auto set) {
      std::string v = c.get_string(key);
      auto parsed = parse(v);
      if (!parsed) c.reject(key, "'" + v + "' must be " + values_of(key));
      else set(s.reuse_policy, *parsed);
    };
    field("job_privileges", pool::parse_job_privileges, [](pool::ReusePolicy& p, auto v) { p.job_privileges = v; });
    field("reuse", pool::parse_reuse, [](pool::ReusePolicy& p, auto v) { p.reuse = v; });
    field("reuse_scope", pool::parse_reuse_scope, [](pool::ReusePolicy& p, auto v) { p.reuse_scope = v; });
    field("trust_domain", pool::parse_trust_domain, [](pool::ReusePolicy& p, auto v) { p.trust_domain = v; });
    std::map<std::string, std::string> overridden;  // class → the first per-class key that set something
    auto per_class = [&](const char* key, auto parse, auto set) {
      std::set<std::string> seen;
      for (const std::string& entry : split(c.get_string(key), ';')) {
        if (trim(entry).empty()) continue;
        auto eq = entry.find('=');
        std::string cls = eq == std::string::npos ? "" : trim(entry.substr(0, eq));
        auto parsed = eq == std::string::npos ? decltype(parse(""))() : parse(trim(entry.substr(eq + 1)));
        const bool known = s.find_class(cls) != nullptr;
        if (!known || !parsed || !seen.insert(cls).second) {
          c.reject(key, "'" + trim(entry) + "' is not class=value (" + values_of(key) +
                            ") for a class of resource_classes, once per class");
          continue;
        }
        auto [it, fresh] = s.resource_class_reuse_policy.try_emplace(cls, s.reuse_policy);
        set(it->second, *parsed);
        overridden.try_emplace(cls, key);
      }
    };
    per_class("resource_class_job_privileges", pool::parse_job_privileges,
              [](pool::ReusePolicy& p, auto v) { p.job_privileges = v; });
    per_class("resource_class_reuse", pool::parse_reuse, [](pool::ReusePolicy& p, auto v) { p.reuse = v; });
    per_class("resource_class_reuse_scope", pool::parse_reuse_scope,
              [](pool::ReusePolicy& p, auto v) { p.reuse_scope = v; });
    per_class("resource_class_trust_domain", pool::parse_trust_domain,
              [](pool::ReusePolicy& p, auto v) { p.trust_domain = v; });
    // What each class ends up with is checked (the pool's values alone when there is no class yet).
    if (s.resource_classes.empty()) {
      if (std::string why = pool::reuse_policy_error(s.reuse_policy); !why.empty()) c.reject("reuse", why);
    }
    for (const auto& rc : s.resource_classes) {
      if (std::string why = pool::reuse_policy_error(s.reuse_policy_for(rc.name)); !why.empty()) {
        auto it = overridden.find(rc.name);
        c.reject(it == overridden.end() ? "reuse" : it->second, "class '" + rc.name + "': " + why);
      }
    }
  }
  const std::string mode = c.get_string("pool_mode");
  if (mode != "run-scoped" && mode != "shared") c.reject("pool_mode", "'" + mode + "' must be run-scoped or shared");
  s.shared = mode == "shared";
  // Shared runners get no wake-up queue (launch makes none: they are never claimed); their agents
  // read their records every assignment_poll_interval.
  if (s.shared) s.agent_config.emplace_back("wake_queue", "false");
  s.shared_labels = c.get_list("shared_labels");
  if (s.shared_labels.empty() || s.shared_labels.size() > 50) c.reject("shared_labels", "must hold 1 to 50 labels");
  for (const auto& l : s.shared_labels) {
    if (l.size() > 100 || l[0] == '-' || l[0] == '.' ||
        !std::all_of(l.begin(), l.end(), [](char ch) { return is_name_char(ch) || ch == '.'; })) {
      c.reject("shared_labels", "'" + l + "' is not a label (1–100 of A-Z a-z 0-9 . _ -, not starting with - or .)");
    }
  }
  s.os = c.get_string("os");
  if (s.os != "linux" && s.os != "windows") c.reject("os", "'" + s.os + "' must be linux or windows");
  try {
    s.scale_down_schedule = schedule::parse_idle_schedule(c.get_string("scale_down_schedule"));
  } catch (const std::invalid_argument& e) {
    c.reject("scale_down_schedule", e.what());
  }
  s.scale_down.min_running_linux_ms = ms("min_running_time_linux");
  s.scale_down.min_running_windows_ms = ms("min_running_time_windows");
  s.scale_down.boot_time_ms = ms("runner_boot_time");
  s.scale_down_drain_wait = c.get_duration("scale_down_drain_wait");
  s.metrics_file = c.get_string("metrics_file");
  s.metrics_log_group = c.get_string("metrics_log_group");
  s.metrics_namespace = c.get_string("metrics_namespace");
  if (s.metrics_namespace.empty() || s.metrics_namespace.size() > 255) {
    c.reject("metrics_namespace", "must be 1–255 characters");
  }
  s.endpoint_logs = c.get_string("endpoint_logs");

  // An instance provision would still claim (beaten within max_heartbeat_age) must not be retired
  // as silent.
  if (s.agent_silence <= s.max_heartbeat_age) {
    c.reject("agent_silence", "must be longer than max_heartbeat_age (" + format_duration(s.max_heartbeat_age) + ")");
  }
  return s;
}

std::string github_server_for_api(const std::string& api_base) { return github::server_for_api_base(api_base); }

void require_aws(const Settings& s) {
  if (s.region.empty()) throw ConfigError("region is not set (set region, RUNPOOL_REGION or AWS_REGION)");
  if (s.instance_role_id.empty()) {
    throw ConfigError(
        "instance_role_id is not set: the unique id (AROA…) of the instance role, which names each instance's "
        "record so that its credentials reach that record only (the stack's InstanceRoleId output, or `aws iam "
        "get-role --role-name NAME --query Role.RoleId`)");
  }
}

void require_github(const Settings& s) {
  if (s.github_owner.empty()) throw ConfigError("github_owner is not set (\"owner/repo\" or an organization)");
  if (s.github_token.empty() && s.github_app_id.empty()) {
    throw ConfigError("github_token is not set (or configure a GitHub App: github_app_id and its private key)");
  }
  if (!s.github_app_id.empty() && s.github_app_private_key_file.empty() && s.github_app_private_key.empty()) {
    throw ConfigError("github_app_private_key_file is not set (needed with github_app_id)");
  }
}

void require_launch(const Settings& s) {
  if (s.resource_classes.empty()) throw ConfigError("resource_classes is not set (name=type[,type…][;…])");
  if (s.image_id.empty()) throw ConfigError("image_id is not set");
  if (s.user_data_template.empty()) throw ConfigError("user_data_template is not set");
}

}  // namespace runpool::controller
