// The EC2 query protocol: a form-encoded POST body (`Action=…&Version=2016-11-15&…`, nested and
// list members flattened to `Filter.1.Value.2`) and XML answers. A signed POST body rather than a
// signed GET query string, because curl 7.88 does not sort query parameters when it signs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <pugixml.hpp>

#include "common/aws/aws_caller.h"

namespace runpool::aws {

inline constexpr const char* kEc2ApiVersion = "2016-11-15";

// A flattened parameter key: key("LaunchTemplateConfigs", 1, "Overrides", 2, "InstanceType")
// gives "LaunchTemplateConfigs.1.Overrides.2.InstanceType". Indices are 1-based, as EC2 wants.
template <typename... Parts>
std::string form_key(const Parts&... parts) {
  std::string out;
  auto append = [&out](const auto& part) {
    if (!out.empty()) out += '.';
    if constexpr (std::is_integral_v<std::decay_t<decltype(part)>>) {
      out += std::to_string(part);
    } else {
      out += part;
    }
  };
  (append(parts), ...);
  return out;
}

// The parameters of one call, in the order they were added.
class Ec2Form {
 public:
  explicit Ec2Form(std::string action);

  Ec2Form& add(std::string name, std::string value);
  Ec2Form& add(std::string name, const char* value) { return add(std::move(name), std::string(value)); }
  Ec2Form& add(std::string name, int64_t value) { return add(std::move(name), std::to_string(value)); }
  Ec2Form& add(std::string name, int value) { return add(std::move(name), static_cast<int64_t>(value)); }
  // Adds nothing for an empty string / nullopt: EC2 reads an absent member as "not given".
  Ec2Form& add_nonempty(std::string name, const std::string& value);
  Ec2Form& add_optional(std::string name, const std::optional<int64_t>& value);
  // name.1=v1, name.2=v2, …
  Ec2Form& add_list(const std::string& name, const std::vector<std::string>& values);

  const std::string& action() const { return action_; }
  const std::vector<std::pair<std::string, std::string>>& params() const { return params_; }
  // "Action=…&Version=…&k=v…", every name and value percent-encoded.
  std::string encode() const;

 private:
  std::string action_;
  std::vector<std::pair<std::string, std::string>> params_;
};

// A parsed answer. The document owns the nodes, so it travels with its root.
struct Ec2Response {
  std::shared_ptr<pugi::xml_document> doc;
  pugi::xml_node root;  // <ActionResponse>
};

// Sends the form through `caller` (signing, retries, errors) and parses the XML answer. Throws
// AwsError: AWS's own code for an error answer, "MalformedResponse" for a body that is not the
// expected document (bad or truncated XML, wrong root element).
// EC2 reports capacity shortages (Insufficient*Capacity) as 5xx server errors; the shared retry
// policy (retry.h, is_aws_capacity_code) treats them as answers, thrown at once.
Ec2Response ec2_call(AwsCaller& caller, const Ec2Form& form);

// Reads <Response><Errors><Error><Code>/<Message> (also <ErrorResponse><Error>…); a body that is
// not such a document leaves the code empty and keeps the body's start as the message.
ErrorInfo parse_ec2_error(const HttpResponse& response);

// Standard base64 (with padding), as EC2 wants user data. decode returns nullopt on bad input.
std::string base64_encode(std::string_view data);
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace runpool::aws
