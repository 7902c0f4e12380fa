// Where each AWS service is reached: an explicit override (flag or config), else the
// AWS_ENDPOINT_URL_<SERVICE> / AWS_ENDPOINT_URL variables as the AWS CLI reads them, else the
// public regional endpoint, in the DNS domain of the region's partition.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace runpool::aws {

using GetEnv = std::function<const char*(const char*)>;
const char* real_getenv(const char* name);

struct AwsSettings {
  std::string region;                             // empty: AWS_REGION / AWS_DEFAULT_REGION / IMDS
  std::map<std::string, std::string> endpoints;   // service ("dynamodb", "sqs", "ec2") -> URL
};

// The partition a region belongs to, as AWS's endpoint rules (partitions.json) define them: its
// name, the first field of every ARN there ("aws", "aws-cn", "aws-us-gov", …), and the DNS suffix
// of its endpoints ("amazonaws.com", "amazonaws.com.cn", …). A region no partition claims is in
// "aws", as the SDKs assume of regions newer than their tables.
struct Partition {
  std::string_view name;
  std::string_view dns_suffix;
  bool operator==(const Partition&) const = default;
};
Partition partition_of(std::string_view region);

// The endpoint URL for `service`, without a trailing slash.
std::string resolve_endpoint(const AwsSettings& settings, const std::string& service, const std::string& region,
                             const GetEnv& getenv = real_getenv);
// The region from settings, else the environment; "" when neither says.
std::string resolve_region(const AwsSettings& settings, const GetEnv& getenv = real_getenv);

}  // namespace runpool::aws
