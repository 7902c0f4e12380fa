#include "controller/cloudformation_stack.h"

#include <stdexcept>

#include <pugixml.hpp>

#include "common/aws/ec2_query.h"
#include "common/http.h"

namespace runpool::controller {

StackOutputs parse_describe_stacks(const std::string& body) {
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size())) throw std::invalid_argument("DescribeStacks: the answer is not XML");
  pugi::xml_node root = doc.child("DescribeStacksResponse");
  if (!root) throw std::invalid_argument("DescribeStacks: the answer is not a DescribeStacksResponse");
  pugi::xml_node stack = root.child("DescribeStacksResult").child("Stacks").child("member");
  if (!stack) throw std::invalid_argument("DescribeStacks: the answer names no stack");
  StackOutputs out;
  out.name = stack.child("StackName").text().get();
  out.status = stack.child("StackStatus").text().get();
  for (pugi::xml_node o : stack.child("Outputs").children("member")) {
    out.outputs[o.child("OutputKey").text().get()] = o.child("OutputValue").text().get();
  }
  return out;
}

StackOutputs describe_stack(aws::AwsCaller& caller, const std::string& stack) {
  HttpRequest req;
  req.method = "POST";
  req.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  req.body = "Action=DescribeStacks&Version=2010-05-15&StackName=" + url_encode(stack);
  // CloudFormation's errors are <ErrorResponse><Error><Code>…, which EC2's parser reads too.
  HttpResponse resp = caller.call("DescribeStacks", std::move(req), aws::parse_ec2_error);
  return parse_describe_stacks(resp.body);
}

}  // namespace runpool::controller
