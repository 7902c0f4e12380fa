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
#include "controller/settings_rows.h"

namespace runpool::controller {

std::vector<ResourceClass> parse_resource_classes(const std::string& text) {
  std::vector<ResourceClass> out;
  std::set<std::string> names;
  if (settings_rows::trim(text).empty()) throw std::invalid_argument("no resource class given");
  for (const std::string& part : settings_rows::split(text, ';')) {
    if (part.empty()) continue;  // a trailing ';'
    auto eq = part.find('=');
    if (eq == std::string::npos) {
      throw std::invalid_argument("'" + part + "': expected name=type[,type…]");
    }
    ResourceClass rc;
    rc.name = settings_rows::trim(part.substr(0, eq));
    if (!settings_rows::valid_class_name(rc.name)) {
      throw std::invalid_argument("class name '" + rc.name + "': 1–32 letters, digits, '-' or '_'");
    }
    if (!names.insert(rc.name).second) throw std::invalid_argument("class '" + rc.name + "' is given twice");
    for (std::string t : settings_rows::split(part.substr(eq + 1), ',')) {
      if (t.empty()) continue;
      if (!settings_rows::valid_instance_type(t)) throw std::invalid_argument("class '" + rc.name + "': bad instance type '" + t + "'");
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

std::vector<settings_rows::Row> make_settings_table() {
  namespace r = settings_rows;
  std::vector<r::Row> t;
  for (auto part : {r::where_rows, r::instance_rows, r::timing_rows, r::reuse_rows, r::fleet_rows}) {
    std::vector<r::Row> rows = part();
    t.insert(t.end(), rows.begin(), rows.end());
  }
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
  for (const std::string& line : settings_rows::split(c.get_string("agent_extra"), ';')) {
    if (line.empty()) continue;
    auto eq = line.find('=');
    std::string key = eq == std::string::npos ? "" : settings_rows::trim(line.substr(0, eq));
    if (key.empty() || !std::all_of(key.begin(), key.end(), [](char ch) {
          return std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)) ||
                 ch == '_';
        })) {
      c.reject("agent_extra", "'" + line + "' is not key=value");
    }
    s.agent_config.emplace_back(key, settings_rows::trim(line.substr(eq + 1)));
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
