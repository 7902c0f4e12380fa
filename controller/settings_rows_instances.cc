// Settings: the pool's instances, and the agent's keys passed through into user-data.
#include "controller/settings_rows.h"

#include <filesystem>
#include <stdexcept>

#include "common/cloud_init/agent_key_bounds.h"
#include "common/github/endpoint.h"
#include "common/pool/record_key.h"
#include "controller/user_data.h"

#ifndef RUNPOOL_USER_DATA_TEMPLATE
#define RUNPOOL_USER_DATA_TEMPLATE "/usr/local/share/runpool/user-data.sh.in"
#endif

namespace runpool::controller::settings_rows {

std::vector<Row> instance_rows() {
  using K = KeyType;
  return {
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
  };
}

}  // namespace runpool::controller::settings_rows
