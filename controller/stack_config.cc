#include "controller/stack_config.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

namespace runpool::controller {

const std::vector<std::pair<std::string, std::string>>& stack_output_settings() {
  static const std::vector<std::pair<std::string, std::string>> kMap = {
      {"Region", "region"},
      {"Table", "table"},
      {"Pool", "pool"},
      {"InstanceProfile", "instance_profile"},
      {"InstanceRoleId", "instance_role_id"},
      // The name: runpoolctl names the template in its requests (the LaunchTemplate output is the id).
      {"LaunchTemplateName", "launch_template"},
      {"MetricsLogGroup", "metrics_log_group"},
  };
  return kMap;
}

namespace {

bool stack_output_optional(const std::string& key) { return key == "MetricsLogGroup" || key == "Region"; }

// A stack whose resources are all in place: created, updated, or rolled back to its last update.
bool stack_complete(const std::string& status) {
  static const std::set<std::string> kComplete = {"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE",
                                                  "IMPORT_COMPLETE", "IMPORT_ROLLBACK_COMPLETE"};
  return kComplete.count(status) > 0;
}

// A value must stay one line of the file: no line break, no comment marker, no edge blanks.
bool stack_value_one_line(const std::string& v) {
  return v.find_first_of("\r\n#") == std::string::npos && !v.empty() &&
         !std::isspace(static_cast<unsigned char>(v.front())) && !std::isspace(static_cast<unsigned char>(v.back()));
}

}  // namespace

std::string stack_config_text(const std::string& stack, const std::string& status,
                              const std::map<std::string, std::string>& outputs) {
  if (!stack_complete(status)) {
    throw std::invalid_argument("stack " + stack + " is " + (status.empty() ? "in no known state" : status) +
                                ", not complete: wait for it, or fix it, first");
  }
  std::string missing;
  std::string out = "# From CloudFormation stack " + stack + "'s outputs (runpoolctl config from-stack).\n";
  for (const auto& [output, key] : stack_output_settings()) {
    auto it = outputs.find(output);
    if (it == outputs.end() || it->second.empty()) {
      if (!stack_output_optional(output)) missing += (missing.empty() ? "" : ", ") + output;
      continue;
    }
    if (!stack_value_one_line(it->second)) throw std::invalid_argument("output " + output + " is not a one-line value");
    if (key == "launch_template" && it->second.rfind("lt-", 0) == 0 && it->second.size() <= 20 &&
        std::all_of(it->second.begin() + 3, it->second.end(),
                    [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; })) {
      throw std::invalid_argument("output " + output + " is a launch template id (" + it->second +
                                  "), not its name: launch_template takes the name");
    }
    out += key + " = " + it->second + "\n";
  }
  if (!missing.empty()) {
    throw std::invalid_argument("stack " + stack + " has no " + missing +
                                " output: is it runpool's stack (packaging/cloudformation/runpool.yaml), at its "
                                "current version?");
  }
  out +=
      "# Yours to add: resource_classes (the classes the stack's ResourceClasses names, with their types),\n"
      "# subnets, security_groups and image_id when the launch template lacks them, github_owner and the\n"
      "# GitHub credential (RUNPOOL_GITHUB_TOKEN in the environment, never in this file).\n";
  return out;
}

}  // namespace runpool::controller
