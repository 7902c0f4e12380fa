#include "common/aws/endpoints.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <vector>

namespace runpool::aws {

const char* real_getenv(const char* name) { return std::getenv(name); }

namespace {

struct PartitionRule {
  Partition partition;
  const char* region_regex;  // partitions.json's regionRegex, verbatim
};

// AWS's partitions and the regions each claims (botocore and the SDKs' partitions.json). A region
// matches at most one pattern; each partition's "<name>-global" pseudo-region is its own too.
const std::array<PartitionRule, 8> kPartitions = {{
    {{"aws", "amazonaws.com"}, R"(^(us|eu|ap|sa|ca|me|af|il|mx)\-\w+\-\d+$)"},
    {{"aws-cn", "amazonaws.com.cn"}, R"(^cn\-\w+\-\d+$)"},
    {{"aws-us-gov", "amazonaws.com"}, R"(^us\-gov\-\w+\-\d+$)"},
    {{"aws-iso", "c2s.ic.gov"}, R"(^us\-iso\-\w+\-\d+$)"},
    {{"aws-iso-b", "sc2s.sgov.gov"}, R"(^us\-isob\-\w+\-\d+$)"},
    {{"aws-iso-e", "cloud.adc-e.uk"}, R"(^eu\-isoe\-\w+\-\d+$)"},
    {{"aws-iso-f", "csp.hci.ic.gov"}, R"(^us\-isof\-\w+\-\d+$)"},
    {{"aws-eusc", "amazonaws.eu"}, R"(^eusc\-(de)\-\w+\-\d+$)"},
}};

}  // namespace

Partition partition_of(std::string_view region) {
  static const std::vector<std::regex> patterns = [] {
    std::vector<std::regex> out;
    for (const auto& rule : kPartitions) out.emplace_back(rule.region_regex, std::regex::ECMAScript);
    return out;
  }();
  for (const auto& rule : kPartitions) {
    if (region == std::string(rule.partition.name) + "-global") return rule.partition;
  }
  const std::string r(region);
  for (size_t i = 0; i < kPartitions.size(); ++i) {
    if (std::regex_match(r, patterns[i])) return kPartitions[i].partition;
  }
  return kPartitions[0].partition;
}

std::string resolve_endpoint(const AwsSettings& settings, const std::string& service, const std::string& region,
                             const GetEnv& getenv) {
  auto strip = [](std::string url) {
    while (!url.empty() && url.back() == '/') url.pop_back();
    return url;
  };
  if (auto it = settings.endpoints.find(service); it != settings.endpoints.end() && !it->second.empty()) {
    return strip(it->second);
  }
  std::string upper = service;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (const char* v = getenv(("AWS_ENDPOINT_URL_" + upper).c_str()); v && *v) return strip(v);
  if (const char* v = getenv("AWS_ENDPOINT_URL"); v && *v) return strip(v);
  return "https://" + service + "." + region + "." + std::string(partition_of(region).dns_suffix);
}

std::string resolve_region(const AwsSettings& settings, const GetEnv& getenv) {
  if (!settings.region.empty()) return settings.region;
  if (const char* v = getenv("AWS_REGION"); v && *v) return v;
  if (const char* v = getenv("AWS_DEFAULT_REGION"); v && *v) return v;
  return "";
}

}  // namespace runpool::aws
