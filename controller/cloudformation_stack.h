// A CloudFormation stack's outputs, read with DescribeStacks (the query protocol, API version
// 2010-05-15: a form-encoded POST and an XML answer, signed as service "cloudformation"), for
// `runpoolctl config from-stack`. Nothing else of CloudFormation is called.
#pragma once

#include <map>
#include <string>

#include "common/aws/aws_caller.h"

namespace runpool::controller {

struct StackOutputs {
  std::string name;
  std::string status;                         // StackStatus, e.g. CREATE_COMPLETE
  std::map<std::string, std::string> outputs;  // OutputKey -> OutputValue
};

// The first stack of a DescribeStacks answer. Throws std::invalid_argument for a body that is not
// such a document or names no stack.
StackOutputs parse_describe_stacks(const std::string& body);

// Calls DescribeStacks for `stack` (a name or a stack id). Throws AwsError (ValidationError when
// no such stack exists) and std::invalid_argument for a malformed answer.
StackOutputs describe_stack(aws::AwsCaller& caller, const std::string& stack);

}  // namespace runpool::controller
