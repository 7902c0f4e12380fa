#include "common/aws/endpoints.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace runpool::aws {

const char* real_getenv(const char* name) { return std::getenv(name); }

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
  return "https://" + service + "." + region + ".amazonaws.com";
}

std::string resolve_region(const AwsSettings& settings, const GetEnv& getenv) {
  if (!settings.region.empty()) return settings.region;
  if (const char* v = getenv("AWS_REGION"); v && *v) return v;
  if (const char* v = getenv("AWS_DEFAULT_REGION"); v && *v) return v;
  return "";
}

}  // namespace runpool::aws
