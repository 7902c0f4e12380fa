// `runpoolctl config from-stack`: the settings a runpool CloudFormation stack's outputs give
// (packaging/cloudformation/runpool.yaml), as runpool.conf lines. Pure: the outputs come from
// DescribeStacks (cloudformation_stack.h), the file is written by the command.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace runpool::controller {

// Output key -> runpoolctl setting, in the order the file lists them. Every one is required
// except MetricsLogGroup and Region (a stack made by an older template may lack them).
const std::vector<std::pair<std::string, std::string>>& stack_output_settings();

// The key = value lines for a stack's outputs, headed by a comment naming the stack. Throws
// std::invalid_argument naming what is missing or wrong: a stack that is not in a complete state,
// a required output absent or empty, a launch template output that is an id.
std::string stack_config_text(const std::string& stack, const std::string& status,
                              const std::map<std::string, std::string>& outputs);

}  // namespace runpool::controller
