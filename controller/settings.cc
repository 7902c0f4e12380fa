#include "controller/settings.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "common/cloud_init/agent_key_bounds.h"
#include "common/github/endpoint.h"
#include "common/pool/record_key.h"
#include "controller/user_data.h"
#include "common/settings_table.h"
#include "common/text.h"

#ifndef RUNPOOL_USER_DATA_TEMPLATE
#define RUNPOOL_USER_DATA_TEMPLATE "/usr/local/share/runpool/user-data.sh.in"
#endif

namespace runpool::controller {
namespace {

constexpr Duration kMs{1};
constexpr Duration kSec{1000};
constexpr Duration kMin = 60 * kSec;
constexpr Duration kHour = 60 * kMin;
constexpr Duration kDay = 24 * kHour;

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

namespace {

using Row = SettingsRow<Settings>;

// Checks of a value's form, shared by several rows.
void check_endpoint(const Config& c, const std::string& key) {
  std::string v = c.get_string(key);
  if (!v.empty() && v.rfind("http://", 0) != 0 && v.rfind("https://", 0) != 0) {
    c.reject(key, "'" + v + "' is not an http(s) URL");
  }
}

Row endpoint_row(const char* key, std::string Settings::*member, std::string help) {
  return checked<Settings>(string_row(key, member, std::move(help)),
                           [key](const Config& c, Settings&) { check_endpoint(c, key); });
}

// "class=value[;class=value]" for classes of resource_classes, once per class: each value parsed.
template <class Parse, class Apply>
void per_class_entries(const Config& c, const Settings& s, const char* key, const std::string& what, Parse parse,
                       Apply apply) {
  std::set<std::string> seen;
  for (const std::string& entry : split(c.get_string(key), ';')) {
    if (trim(entry).empty()) continue;
    auto eq = entry.find('=');
    std::string cls = eq == std::string::npos ? "" : trim(entry.substr(0, eq));
    auto parsed = eq == std::string::npos ? decltype(parse(""))() : parse(trim(entry.substr(eq + 1)));
    if (!s.find_class(cls) || !parsed || !seen.insert(cls).second) {
      c.reject(key, "'" + trim(entry) + "' is not " + what + " for a class of resource_classes, once per class");
    }
    apply(cls, *parsed);
  }
}

// The reuse keys' values, for their messages.
std::string reuse_values_of(std::string_view key) {
  if (key.find("job_privileges") != std::string_view::npos) return "user, docker or sudo";
  if (key.find("reuse_scope") != std::string_view::npos) return "repository or owner";
  if (key.find("reuse") != std::string_view::npos) return "always, same-scope or never";
  return "pool or none";
}

std::vector<Row> make_settings_table() {
  using K = KeyType;
  std::vector<Row> t = {
      // Where the pool lives.
      checked<Settings>(string_row("table", &Settings::table, "the DynamoDB state table (several pools may share one)"),
                        [](const Config& c, Settings& s) {
                          if (s.table.size() < 3 || s.table.size() > 255 ||
                              !std::all_of(s.table.begin(), s.table.end(),
                                           [](char ch) { return is_name_char(ch) || ch == '.'; })) {
                            c.reject("table", "'" + s.table + "' must be 3–255 letters, digits, '-', '_' or '.'");
                          }
                        }),
      checked<Settings>(string_row("pool", &Settings::pool, "the pool's name: tags, queue names and runner names carry it"),
                        [](const Config& c, Settings& s) {
                          if (s.pool.empty() || s.pool.size() > 40 ||
                              !std::all_of(s.pool.begin(), s.pool.end(), is_name_char)) {
                            c.reject("pool", "'" + s.pool + "' must be 1–40 letters, digits, '-' or '_'");
                          }
                        }),
      string_row("region", &Settings::region, "AWS region (else AWS_REGION / AWS_DEFAULT_REGION)"),
      endpoint_row("endpoint_dynamodb", &Settings::endpoint_dynamodb,
                   "DynamoDB endpoint URL (else AWS_ENDPOINT_URL_DYNAMODB, else AWS's)"),
      endpoint_row("endpoint_sqs", &Settings::endpoint_sqs, "SQS endpoint URL (else AWS_ENDPOINT_URL_SQS, else AWS's)"),
      endpoint_row("endpoint_ec2", &Settings::endpoint_ec2, "EC2 endpoint URL (else AWS_ENDPOINT_URL_EC2, else AWS's)"),
      duration_row("aws_timeout", &Settings::aws_timeout, "timeout of one AWS request", 100 * kMs, 10 * kMin),
      int_row("aws_max_attempts", &Settings::aws_max_attempts, "attempts per AWS call, the first included", 1, 20),
      // GitHub. The URLs are resolved after the table, with a workflow's own as the fallback.
      {{"github_api_url", K::kString, "https://api.github.com",
        "GitHub REST API base (GHES: https://HOST/api/v3); when neither it nor github_server_url is set, a "
        "workflow's GITHUB_API_URL"},
       {}},
      {{"github_server_url", K::kString, "",
        "GitHub web URL runners register with (default: derived from github_api_url; when neither is set, a "
        "workflow's GITHUB_SERVER_URL)"},
       {}},
      checked<Settings>(
          string_row("github_owner", &Settings::github_owner,
                     "whose runners: \"owner/repo\", an organization, or \"enterprise:SLUG\" (an enterprise's runners: a "
                     "classic PAT with manage_runners:enterprise; GitHub Apps cannot manage them)"),
          [](const Config& c, Settings& s) {
            if (s.github_owner.empty()) return;
            try {
              (void)github::OwnerScope::parse(s.github_owner);
            } catch (const std::invalid_argument& e) {
              c.reject("github_owner", e.what());
            }
          }),
      checked<Settings>(
          string_row("github_runner_group", &Settings::github_runner_group,
                     "the runner group organization or enterprise runners join (config.sh --runnergroup; default: the "
                     "Default group); not for a repository's runners"),
          [](const Config& c, Settings& s) {
            if (s.github_runner_group.empty()) return;
            if (!github::valid_runner_group(s.github_runner_group)) {
              c.reject("github_runner_group", "'" + s.github_runner_group +
                                                  "': letters, digits, spaces and - _ . only, starting with a letter or "
                                                  "digit, at most 100");
            }
            if (!s.github_owner.empty() && github::OwnerScope::parse(s.github_owner).is_repository()) {
              c.reject("github_runner_group", "runner groups are for organization and enterprise runners; github_owner '" +
                                                  s.github_owner + "' is a repository");
            }
          }),
      {{"github_token", K::kSecret, "",
        "a personal access token: classic with repo (repository runners), admin:org (organization) or "
        "manage_runners:enterprise (enterprise), or fine-grained with Administration: read and write (repository) "
        "or Self-hosted runners: read and write (organization); set it through RUNPOOL_GITHUB_TOKEN or the config "
        "file, never on the command line"},
       [](const Config& c, Settings& s) { s.github_token = c.get_secret("github_token"); }},
      checked<Settings>(
          string_row("github_app_id", &Settings::github_app_id, "GitHub App: its client ID or App ID (instead of a PAT)"),
          [](const Config& c, Settings& s) {
            if (!s.github_token.empty() && !s.github_app_id.empty()) {
              c.reject("github_app_id", "give either github_token or a GitHub App, not both");
            }
            if (!s.github_app_id.empty() && !s.github_owner.empty() &&
                github::OwnerScope::parse(s.github_owner).is_enterprise()) {
              c.reject("github_app_id", "GitHub Apps cannot manage an enterprise's runners; give github_token, a classic "
                                        "personal access token with the manage_runners:enterprise scope");
            }
          }),
      string_row("github_app_private_key_file", &Settings::github_app_private_key_file,
                 "GitHub App: path of its PEM private key"),
      {{"github_app_private_key", K::kSecret, "", "GitHub App: the PEM private key itself (e.g. from the environment)"},
       [](const Config& c, Settings& s) {
         s.github_app_private_key = c.get_secret("github_app_private_key");
         if (!s.github_app_private_key_file.empty() && !s.github_app_private_key.empty()) {
           c.reject("github_app_private_key_file", "give either github_app_private_key_file or github_app_private_key");
         }
       }},
      {{"github_app_installation_id", K::kInt, "", "GitHub App: installation id (default: looked up)", 1},
       [](const Config& c, Settings& s) {
         if (c.has("github_app_installation_id")) s.github_app_installation_id = c.get_int("github_app_installation_id");
       }},
      duration_row("github_timeout", &Settings::github_timeout, "timeout of one GitHub request", 100 * kMs, 10 * kMin),
      int_row("github_max_pages", &Settings::github_max_pages,
              "the most pages (100 runners each) one runner listing may read; a longer list fails rather than act on a "
              "part of it",
              1, 100000),
      // The pool's instances.
      {{"resource_classes", K::kString, "",
        "resource classes and their instance types in order of preference: name=type[,type…][;name=…]"},
       [](const Config& c, Settings& s) {
         if (!c.has("resource_classes")) return;
         try {
           s.resource_classes = parse_resource_classes(c.get_string("resource_classes"));
         } catch (const std::invalid_argument& e) {
           c.reject("resource_classes", e.what());
         }
         for (const auto& rc : s.resource_classes) {
           if (s.queue_name(rc.name).size() > 80) {
             c.reject("resource_classes", "queue name " + s.queue_name(rc.name) + " is longer than 80");
           }
           // The agents' wake-up queues are named "<pool>-wake-<instance id>" (common/pool/wake_queue.h).
           if (rc.name.rfind("wake-", 0) == 0) {
             c.reject("resource_classes",
                      "'" + rc.name + "': names starting with wake- are kept for the agents' wake-up queues");
           }
         }
       }},
      checked<Settings>(
          string_row("default_resource_class", &Settings::default_resource_class,
                     "provision's class when none is given (default: the first)"),
          [](const Config& c, Settings& s) {
            if (!s.default_resource_class.empty()) {
              if (!s.find_class(s.default_resource_class)) {
                c.reject("default_resource_class", "'" + s.default_resource_class + "' is not one of resource_classes");
              }
            } else if (!s.resource_classes.empty()) {
              s.default_resource_class = s.resource_classes.front().name;
            }
          }),
      {{"usage_class", K::kString, "spot", "spot or on-demand, when provision is not told"},
       [](const Config& c, Settings& s) {
         auto usage = pool::parse_usage_class(c.get_string("usage_class"));
         if (!usage) c.reject("usage_class", "'" + c.get_string("usage_class") + "' must be spot or on-demand");
         s.usage_class = *usage;
       }},
      bool_row("on_demand_fallback", &Settings::on_demand_fallback,
               "launch on-demand when spot capacity is short (and claim either)"),
      list_row("allowed_instance_types", &Settings::allowed_instance_types,
               "globs limiting the types provision claims and launches ('c* m7i.*')"),
      checked<Settings>(list_row("subnets", &Settings::subnets, "subnet ids to launch into (CreateFleet tries them all)"),
                        [](const Config& c, Settings& s) {
                          for (const auto& sn : s.subnets) {
                            if (!valid_aws_id(sn, "subnet-")) c.reject("subnets", "'" + sn + "' is not a subnet id");
                          }
                        }),
      checked<Settings>(string_row("image_id", &Settings::image_id, "AMI of the runner instances"),
                        [](const Config& c, Settings& s) {
                          if (!s.image_id.empty() && !valid_aws_id(s.image_id, "ami-")) {
                            c.reject("image_id", "'" + s.image_id + "' is not an AMI id");
                          }
                        }),
      {{"resource_class_images", K::kString, "",
        "AMIs of particular resource classes (an arm64 or GPU image), class=ami-…[;class=ami-…]; others run image_id"},
       [](const Config& c, Settings& s) {
         for (const std::string& entry : split(c.get_string("resource_class_images"), ';')) {
           if (trim(entry).empty()) continue;
           auto eq = entry.find('=');
           std::string cls = eq == std::string::npos ? "" : trim(entry.substr(0, eq));
           std::string ami = eq == std::string::npos ? "" : trim(entry.substr(eq + 1));
           if (!s.find_class(cls) || !valid_aws_id(ami, "ami-") || s.resource_class_images.count(cls)) {
             c.reject("resource_class_images",
                      "'" + trim(entry) + "' is not class=ami-… for a class of resource_classes, once per class");
           }
           s.resource_class_images[cls] = ami;
         }
       }},
      string_row("instance_profile", &Settings::instance_profile,
                 "instance profile (name or ARN) giving the agent its narrow role"),
      checked<Settings>(
          string_row("instance_role_id", &Settings::instance_role_id,
                     "the unique id (AROA…) of the instance profile's role (required): each record is stored under "
                     "\"<role id>:<instance id>\", the caller id AWS gives the instance's requests, so the instance "
                     "policy lets an instance reach its own record only; the stack's InstanceRoleId output, or `aws iam "
                     "get-role --role-name NAME --query Role.RoleId`"),
          [](const Config& c, Settings& s) {
            if (!s.instance_role_id.empty() && !pool::is_role_unique_id(s.instance_role_id)) {
              c.reject("instance_role_id", "'" + s.instance_role_id +
                                               "' is not a role's unique id (AROA followed by capital letters and digits; "
                                               "not the role's name or ARN)");
            }
          }),
      checked<Settings>(list_row("security_groups", &Settings::security_groups, "security group ids"),
                        [](const Config& c, Settings& s) {
                          for (const auto& sg : s.security_groups) {
                            if (!valid_aws_id(sg, "sg-")) {
                              c.reject("security_groups", "'" + sg + "' is not a security group id");
                            }
                          }
                        }),
      checked<Settings>(
          string_row("launch_template", &Settings::launch_template, "launch template name (default: runpool-<pool>)"),
          [](const Config& c, Settings& s) {
            if (s.launch_template.empty()) s.launch_template = "runpool-" + s.pool;
            // An id (lt-<hex>) is also a valid name, but runpoolctl names the template in its
            // requests (LaunchTemplateName): taken as a name it would make a second template.
            if (valid_aws_id(s.launch_template, "lt-")) {
              c.reject("launch_template", "'" + s.launch_template +
                                              "' is a launch template id; give its name (the stack's LaunchTemplateName "
                                              "output, or runpool-<pool>)");
              return;
            }
            if (s.launch_template.size() < 3 || s.launch_template.size() > 128 ||
                !std::all_of(s.launch_template.begin(), s.launch_template.end(), [](char ch) {
                  return is_name_char(ch) || ch == '.' || ch == '/' || ch == '(' || ch == ')';
                })) {
              c.reject("launch_template", "'" + s.launch_template + "' is not a launch template name");
            }
          }),
      {{"instance_tags", K::kList, "",
        "extra tags on the instances and their volumes, Key=Value each ('Name=ci-runner CostCenter=42'); keys "
        "starting runpool: are runpool's own. Without a Name here, runpoolctl init names instances runpool-<pool> "
        "unless the launch template names them"},
       [](const Config& c, Settings& s) {
         for (const auto& kv : c.get_list("instance_tags")) {
           auto eq = kv.find('=');
           std::string key = eq == std::string::npos ? "" : kv.substr(0, eq);
           if (key.empty() || key.size() > 128 || kv.size() - eq - 1 > 256) {
             c.reject("instance_tags",
                      "'" + kv + "' is not Key=Value (a key of 1 to 128 characters, a value of at most 256)");
           }
           if (key.rfind("runpool:", 0) == 0 || key.rfind("aws:", 0) == 0) {
             c.reject("instance_tags", "'" + key + "': keys starting runpool: or aws: are not the operator's to set");
           }
           s.instance_tags.emplace_back(key, kv.substr(eq + 1));
         }
       }},
      int_row("root_volume_size", &Settings::root_volume_size, "the root volume's size in GiB; 0: the AMI's", 0, 65536),
      checked<Settings>(
          string_row("root_volume_type", &Settings::root_volume_type,
                     "the root volume's type (gp3, gp2, io2, …); empty: the AMI's"),
          [](const Config& c, Settings& s) {
            static const std::set<std::string> kVolumeTypes = {"gp3", "gp2", "io1", "io2", "st1", "sc1", "standard"};
            if (!s.root_volume_type.empty() && !kVolumeTypes.count(s.root_volume_type)) {
              c.reject("root_volume_type",
                       "'" + s.root_volume_type + "' is not an EBS volume type (gp3 gp2 io1 io2 st1 sc1 standard)");
            }
          }),
      checked<Settings>(
          string_row("root_volume_device", &Settings::root_volume_device,
                     "the AMI's root device name that root_volume_size and root_volume_type apply to (Amazon Linux and "
                     "Debian: /dev/xvda; Ubuntu: /dev/sda1)"),
          [](const Config& c, Settings& s) {
            if (s.root_volume_device.rfind("/dev/", 0) != 0 || s.root_volume_device.size() > 32 ||
                !std::all_of(s.root_volume_device.begin(), s.root_volume_device.end(),
                             [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '/'; })) {
              c.reject("root_volume_device", "'" + s.root_volume_device + "' is not a device name like /dev/xvda");
            }
          }),
      string_row("spot_allocation_strategy", &Settings::spot_allocation_strategy,
                 "CreateFleet's spot allocation strategy"),
      {{"user_data_template", K::kString, RUNPOOL_USER_DATA_TEMPLATE,
        "the user-data template (@AGENT_CONFIG@ and @AGENT_BINARY@ are filled in)"},
       [](const Config& c, Settings& s) {
         std::error_code ec;
         const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
         s.user_data_template =
             locate_template(c.get_string("user_data_template"), RUNPOOL_USER_DATA_TEMPLATE, ec ? "" : self.string());
       }},
      checked<Settings>(
          string_row("agent_binary", &Settings::agent_binary,
                     "the agent binary's absolute path on the instance; empty: the packaged runpool-agent.service runs it"),
          [](const Config& c, Settings& s) {
            if (!s.agent_binary.empty() &&
                (s.agent_binary[0] != '/' || !std::all_of(s.agent_binary.begin(), s.agent_binary.end(), [](char ch) {
                  return std::isalnum(static_cast<unsigned char>(ch)) || ch == '/' || ch == '.' || ch == '_' ||
                         ch == '-' || ch == '+';
                }))) {
              c.reject("agent_binary", "'" + s.agent_binary + "' must be an absolute path of letters, digits and / . _ - +");
            }
          }),
      // The agent's keys, passed through into user-data (read after the table: agent_config).
      {{"agent_runner_root", K::kString, "", "agent: runner_root (may hold {instance_id}); unset: the agent's default"}, {}},
      {{"agent_runner_template", K::kString, "", "agent: runner_template, the unpacked runner copied into the root"}, {}},
      {{"agent_runner_user", K::kString, "", "agent: runner_user, the unprivileged user running the runner"}, {}},
      {{"agent_drain_capable", K::kBool, "",
        "agent: drain_capable — ignored (kept so older configuration parses): the agent detects how the runner drains"},
       {}},
      {{"agent_heartbeat_interval", K::kDuration, "", "agent: heartbeat_interval",
        cloud_init::kHeartbeatIntervalBounds.min.count(), cloud_init::kHeartbeatIntervalBounds.max.count()},
       {}},
      {{"agent_assignment_poll_interval", K::kDuration, "", "agent: assignment_poll_interval",
        cloud_init::kAssignmentPollIntervalBounds.min.count(), cloud_init::kAssignmentPollIntervalBounds.max.count()},
       {}},
      {{"agent_imds_endpoint", K::kString, "", "agent: imds_endpoint (tests only; else the instance's own)"}, {}},
      {{"agent_extra", K::kString, "", "agent: further config lines, key=value;key=value"}, {}},
      // Lifecycle deadlines (pool::Timeouts).
      millis_row<Settings>("boot_timeout", [](Settings& s) -> int64_t& { return s.timeouts.boot_ms; },
                           "created: launch → registered, else terminated", kSec, kDay),
      millis_row<Settings>("registration_timeout", [](Settings& s) -> int64_t& { return s.timeouts.registration_ms; },
                           "claimed: claim → registered, else terminated", kSec, kDay),
      millis_row<Settings>("max_runtime", [](Settings& s) -> int64_t& { return s.timeouts.max_runtime_ms; },
                           "running: then a drain starts", kSec, 30 * kDay),
      millis_row<Settings>("drain_timeout", [](Settings& s) -> int64_t& { return s.timeouts.drain_ms; },
                           "draining: drain → drained, else terminated", kSec, kDay),
      millis_row<Settings>("hard_grace", [](Settings& s) -> int64_t& { return s.timeouts.hard_grace_ms; },
                           "running: terminated regardless this long after max_runtime", kSec, kDay),
      millis_row<Settings>("idle_ttl", [](Settings& s) -> int64_t& { return s.timeouts.idle_ttl_ms; },
                           "idle: an unclaimed instance retires after this", kSec, 30 * kDay),
      millis_row<Settings>("terminate_timeout", [](Settings& s) -> int64_t& { return s.timeouts.terminate_ms; },
                           "terminating: retry termination until then", kSec, kDay),
      millis_row<Settings>("retention", [](Settings& s) -> int64_t& { return s.timeouts.retention_ms; },
                           "terminated records are deleted after this", kSec, 365 * kDay),
      // How runpoolctl waits.
      duration_row("init_timeout", &Settings::init_timeout,
                   "init: how long to wait for the table and its index to become active", kSec, kDay),
      duration_row("provision_timeout", &Settings::provision_timeout,
                   "provision: claim + launch + registration must finish in this", kSec, kDay),
      duration_row("provision_straggler_wait", &Settings::provision_straggler_wait,
                   "provision with --min-count: once that many run, how much longer the rest may take before they are "
                   "let go",
                   Duration{0}, kHour),
      duration_row("release_timeout", &Settings::release_timeout, "release: how long to wait for the agents' drained",
                   kSec, kDay),
      duration_row("cancel_drain_wait", &Settings::cancel_drain_wait,
                   "a failed provision: how long to wait for claimed instances to drain back to the pool", Duration{0},
                   kHour),
      duration_row("poll_interval", &Settings::poll_interval, "how often waits re-read the table", 10 * kMs, kMin),
      duration_row("claim_wait", &Settings::claim_wait, "long poll of one pool receive (0–20s)", Duration{0}, 20 * kSec),
      duration_row("claim_visibility", &Settings::claim_visibility, "a received pool message stays hidden this long",
                   kSec, 12 * kHour),
      duration_row("claim_min_remaining", &Settings::claim_min_remaining,
                   "an idle instance must have this much idle life left to be claimed", Duration{0}, kDay),
      duration_row("max_heartbeat_age", &Settings::max_heartbeat_age,
                   "an idle instance's agent must have beaten this recently", kSec, kDay),
      int_row("fleet_rounds", &Settings::fleet_rounds, "CreateFleet calls per usage class to top up a partial launch", 1,
              10),
      int_row("max_count", &Settings::max_count, "the most instances one provision may ask for", 1, 1000),
      duration_row("orphan_grace", &Settings::orphan_grace,
                   "refresh: a tagged instance without a live record is terminated after this", kSec, kDay),
      duration_row("rerun_window", &Settings::rerun_window,
                   "refresh: for this long after a release, a re-run of the workflow run (GitHub's \"re-run failed "
                   "jobs\") whose jobs wait on the released label gets runners for it again; then what the "
                   "provision was for is forgotten (0: re-runs are not served). The token needs Actions: read on the "
                   "repositories",
                   Duration{0}, 30 * kDay),
      duration_row("keep_failed", &Settings::keep_failed,
                   "keep a failed instance (its agent reported failed, or it never registered in time) running for "
                   "this long for inspection instead of terminating it: out of service (its registration token "
                   "removed), billed as any running instance; then refresh terminates it (0: terminate at once)",
                   Duration{0}, 7 * kDay),
      duration_row("advertise_grace", &Settings::advertise_grace,
                   "refresh: an idle record whose pool message may be missing (advertise_pending still set) is "
                   "re-advertised after this; a release's SendMessage must fit in it",
                   kSec, kHour),
      checked<Settings>(duration_row("agent_silence", &Settings::agent_silence,
                                     "refresh: an idle instance whose agent has not beaten for this long is terminated "
                                     "(longer than max_heartbeat_age)",
                                     kSec, kDay),
                        [](const Config&, Settings& s) { s.scale_down.agent_silence_ms = s.agent_silence.count(); }),
      duration_row("max_instance_age", &Settings::max_instance_age,
                   "an idle instance older than this (since its launch) is never claimed and refresh retires it, so a "
                   "warm pool keeps rolling onto the current image and runner (0: no limit)",
                   Duration{0}, 365 * kDay),
      {{"resource_class_max_instance_age", K::kString, "",
        "max_instance_age of particular resource classes, class=duration[;class=duration] (small=3d;large=7d); "
        "others use max_instance_age"},
       [](const Config& c, Settings& s) {
         per_class_entries(
             c, s, "resource_class_max_instance_age", "class=duration",
             [](const std::string& v) {
               auto d = parse_duration(v);
               return d && d->count() >= 0 ? d : std::nullopt;
             },
             [&](const std::string& cls, Duration age) { s.resource_class_max_instance_age[cls] = age; });
       }},
  };
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
  std::vector<Row> reuse = {
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
  t.insert(t.end(), reuse.begin(), reuse.end());
  std::vector<Row> rest = {
      // Shared pools and scale-down.
      {{"pool_mode", KeyType::kString, "run-scoped",
        "run-scoped (provision registers runners per workflow run under a unique label) or shared (scale-up "
        "keeps runners registered with shared_labels, serving any workflow)"},
       [](const Config& c, Settings& s) {
         const std::string mode = c.get_string("pool_mode");
         if (mode != "run-scoped" && mode != "shared") c.reject("pool_mode", "'" + mode + "' must be run-scoped or shared");
         s.shared = mode == "shared";
       }},
      checked<Settings>(
          list_row("shared_labels", &Settings::shared_labels,
                   "shared pools: the labels a runner registers with; its resource class is appended"),
          [](const Config& c, Settings& s) {
            if (s.shared_labels.empty() || s.shared_labels.size() > 50) c.reject("shared_labels", "must hold 1 to 50 labels");
            for (const auto& l : s.shared_labels) {
              if (l.size() > 100 || l[0] == '-' || l[0] == '.' ||
                  !std::all_of(l.begin(), l.end(), [](char ch) { return is_name_char(ch) || ch == '.'; })) {
                c.reject("shared_labels",
                         "'" + l + "' is not a label (1–100 of A-Z a-z 0-9 . _ -, not starting with - or .)");
              }
            }
          }),
      checked<Settings>(
          string_row("os", &Settings::os,
                     "the image's operating system, linux or windows (scale-down's minimum running time)"),
          [](const Config& c, Settings& s) {
            if (s.os != "linux" && s.os != "windows") c.reject("os", "'" + s.os + "' must be linux or windows");
          }),
      {{"scale_down_schedule", KeyType::kString, "[]",
        "the idle quota as JSON: [{\"cron\": \"* 8-18 * * mon-fri\", \"time_zone\": \"Europe/Berlin\", \"idle\": 3, "
        "\"eviction\": \"oldest_first\", \"resource_class\": \"small\"}, …]; the first entry whose cron matches the "
        "current minute decides, none matching means 0; an empty schedule keeps every idle instance "
        "(docs/configuration.md)"},
       [](const Config& c, Settings& s) {
         try {
           s.scale_down_schedule = schedule::parse_idle_schedule(c.get_string("scale_down_schedule"));
         } catch (const std::invalid_argument& e) {
           c.reject("scale_down_schedule", e.what());
         }
       }},
      millis_row<Settings>("min_running_time_linux",
                           [](Settings& s) -> int64_t& { return s.scale_down.min_running_linux_ms; },
                           "scale-down: a Linux instance younger than this is kept", Duration{0}, kDay),
      millis_row<Settings>("min_running_time_windows",
                           [](Settings& s) -> int64_t& { return s.scale_down.min_running_windows_ms; },
                           "scale-down: a Windows instance younger than this is kept", Duration{0}, kDay),
      millis_row<Settings>("runner_boot_time", [](Settings& s) -> int64_t& { return s.scale_down.boot_time_ms; },
                           "scale-down: an instance whose runner GitHub does not list this long into created, claimed "
                           "or running is marked orphan",
                           kSec, kDay),
      duration_row("scale_down_drain_wait", &Settings::scale_down_drain_wait,
                   "scale-down: how long a pass waits for the drains it started (the rest finish on the next pass)",
                   Duration{0}, kHour),
      // Serving a runner scale set.
      checked<Settings>(string_row("scale_set_name", &Settings::scale_set_name,
                                   "serve: the runner scale set's name, the label workflows give as runs-on (\"\": the "
                                   "pool's name)"),
                        [](const Config& c, Settings& s) {
                          if (s.scale_set_name.size() > 100) c.reject("scale_set_name", "must be at most 100 characters");
                        }),
      string_row("scale_set_resource_class", &Settings::scale_set_resource_class,
                 "serve: the resource class the scale set's runners come from (\"\": default_resource_class)"),
      int_row("scale_set_min_armed", &Settings::scale_set_min_armed,
              "serve: runners kept started and listening with no job, for the fastest pickup", 0, 1000),
      int_row("scale_set_max_runners", &Settings::scale_set_max_runners,
              "serve: the most runners the scale set has at once (starting, armed and busy)", 1, 10000),
      duration_row("scale_set_arm_grace", &Settings::scale_set_arm_grace,
                   "serve: an armed runner younger than this is never removed (a job may be on its way to it)",
                   Duration{0}, kHour),
      duration_row("scale_set_return_wait", &Settings::scale_set_return_wait,
                   "serve: a runner short is left to an instance being cleaned back into the pool (seconds) rather "
                   "than launched (a minute's boot) while that cleaning began less than this long ago (0: always launch)",
                   Duration{0}, kHour),
      duration_row("serve_reconcile_interval", &Settings::serve_reconcile_interval,
                   "serve: how often the scale set's instances are looked at when no message comes", 100 * kMs, kMin),
      duration_row("serve_lease_ttl", &Settings::serve_lease_ttl,
                   "serve: how long one write of the scale set's lease holds it; a standby takes over this long "
                   "after the holder's last renewal",
                   3 * kSec, kHour),
      duration_row("serve_retry_wait", &Settings::serve_retry_wait,
                   "serve: the pause after a failed call, and between attempts to open a session another listener "
                   "still holds",
                   100 * kMs, kHour),
      // Metrics.
      string_row("metrics_file", &Settings::metrics_file, "append CloudWatch embedded-metric-format lines to this file"),
      string_row("metrics_log_group", &Settings::metrics_log_group,
                 "send embedded-metric-format events to this CloudWatch Logs group"),
      checked<Settings>(string_row("metrics_namespace", &Settings::metrics_namespace,
                                   "the CloudWatch namespace of the metrics"),
                        [](const Config& c, Settings& s) {
                          if (s.metrics_namespace.empty() || s.metrics_namespace.size() > 255) {
                            c.reject("metrics_namespace", "must be 1–255 characters");
                          }
                        }),
      endpoint_row("endpoint_logs", &Settings::endpoint_logs,
                   "CloudWatch Logs endpoint URL (else AWS_ENDPOINT_URL_CLOUDWATCH_LOGS, else AWS's)"),
      // Logging: read by the command line before the settings (cli_global_options).
      {{"log_format", KeyType::kString, "text", "text or json (on stderr)"}, {}},
      {{"log_level", KeyType::kString, "info", "trace, debug, info, warn, error"}, {}},
  };
  t.insert(t.end(), rest.begin(), rest.end());
  return t;
}

}  // namespace

const SettingsTable<Settings>& settings_table() {
  static const SettingsTable<Settings> table = make_settings_table();
  return table;
}

std::vector<KeySpec> settings_schema() { return schema_of(settings_table()); }

Settings load_settings(const Config& c, const std::function<const char*(const char*)>& getenv) {
  Settings s;
  load_rows(settings_table(), c, s);

  // What relates to the environment or to several keys.
  if (s.region.empty()) {
    for (const char* var : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
      if (const char* v = getenv(var); v && *v) {
        s.region = v;
        break;
      }
    }
  }
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
  // What each class ends up with is checked (the pool's values alone when there is no class yet).
  if (s.resource_classes.empty()) {
    if (std::string why = pool::reuse_policy_error(s.reuse_policy); !why.empty()) c.reject("reuse", why);
  }
  for (const auto& rc : s.resource_classes) {
    if (std::string why = pool::reuse_policy_error(s.reuse_policy_for(rc.name)); !why.empty()) {
      auto it = s.reuse_overridden_by.find(rc.name);
      c.reject(it == s.reuse_overridden_by.end() ? "reuse" : it->second, "class '" + rc.name + "': " + why);
    }
  }

  // The agent's configuration, rendered into user-data.
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
    if (key.empty() || !std::all_of(key.begin(), key.end(), [](char ch) {
          return std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)) ||
                 ch == '_';
        })) {
      c.reject("agent_extra", "'" + line + "' is not key=value");
    }
    s.agent_config.emplace_back(key, trim(line.substr(eq + 1)));
  }
  if (c.has("agent_heartbeat_interval") && c.get_duration("agent_heartbeat_interval") >= s.max_heartbeat_age) {
    c.reject("max_heartbeat_age", "must be longer than agent_heartbeat_interval");
  }
  // Shared runners get no wake-up queue (launch makes none: they are never claimed); their agents
  // read their records every assignment_poll_interval.
  if (s.shared) s.agent_config.emplace_back("wake_queue", "false");

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
