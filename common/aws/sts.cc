#include "common/aws/sts.h"

#include <pugixml.hpp>

#include "common/aws/ec2_query.h"

namespace runpool::aws {
namespace {

// STS answers IDPCommunicationError when it could not reach the identity provider for its keys:
// worth a few more tries, as the AWS SDKs make.
constexpr int kIdpAttempts = 3;

std::string form_of(const std::string& action, const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out = "Action=" + url_encode(action) + "&Version=" + url_encode(kStsApiVersion);
  for (const auto& [name, value] : params) {
    if (!value.empty()) out += "&" + url_encode(name) + "=" + url_encode(value);
  }
  return out;
}

std::string without(std::string text, const std::string& secret) {
  if (secret.empty()) return text;
  for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at)) {
    text.replace(at, secret.size(), Secret::kMask);
  }
  return text;
}

}  // namespace

StsSettings sts_settings(const std::string& region, const GetEnv& getenv) {
  StsSettings s;
  s.region = region.empty() ? "us-east-1" : region;
  s.endpoint = resolve_endpoint(AwsSettings{}, "sts", s.region, getenv);
  return s;
}

StsClient::StsClient(HttpClient& http, Clock& clock, StsSettings settings, RetryPolicy retry)
    : http_(http), clock_(clock), settings_(std::move(settings)), retry_(retry) {}

AwsCredentials StsClient::assume_role_with_web_identity(const AssumeRoleRequest& request, const Secret& token) {
  std::vector<std::pair<std::string, std::string>> params = {
      {"RoleArn", request.role_arn}, {"RoleSessionName", request.session_name}, {"WebIdentityToken", token.reveal()}};
  if (request.duration_seconds) params.emplace_back("DurationSeconds", std::to_string(*request.duration_seconds));
  const std::string action = "AssumeRoleWithWebIdentity";
  return call(action, form_of(action, params), nullptr, token.reveal());
}

AwsCredentials StsClient::assume_role(const AssumeRoleRequest& request, CredentialsProvider& source) {
  std::vector<std::pair<std::string, std::string>> params = {
      {"RoleArn", request.role_arn}, {"RoleSessionName", request.session_name}, {"ExternalId", request.external_id}};
  if (request.duration_seconds) params.emplace_back("DurationSeconds", std::to_string(*request.duration_seconds));
  const std::string action = "AssumeRole";
  return call(action, form_of(action, params), &source, "");
}

AwsCredentials StsClient::call(const std::string& action, const std::string& form, CredentialsProvider* source,
                               const std::string& secret_in_form) {
  static StaticCredentialsProvider unsigned_call{AwsCredentials{}};  // never read: sign is false
  ServiceSettings ss;
  ss.service = "sts";
  ss.endpoint = settings_.endpoint;
  ss.region = settings_.region;
  ss.retry = retry_;
  ss.timeout = std::chrono::seconds(10);
  ss.sign = source != nullptr;
  AwsCaller caller(http_, source ? *source : unsigned_call, clock_, ss);
  HttpRequest req;
  req.method = "POST";
  req.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  req.body = form;
  for (int attempt = 1;; ++attempt) {
    try {
      HttpResponse resp = caller.call(action, req, parse_ec2_error);
      return parse_sts_credentials(action, resp.body);
    } catch (const AwsError& e) {
      if (e.code() == "IDPCommunicationError" && attempt < kIdpAttempts) {
        clock_.sleep_for(retry_.base * attempt);
        continue;
      }
      // An answer that quotes the token back (no STS error does; a proxy's might) loses it here.
      std::string message = without(e.message(), secret_in_form);
      if (message != e.message()) throw AwsError(e.service(), e.operation(), e.status(), e.code(), message);
      throw;
    }
  }
}

AwsCredentials parse_sts_credentials(const std::string& action, const std::string& xml) {
  auto malformed = [&](const std::string& why) { return AwsError("sts", action, 200, "MalformedResponse", why); };
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size())) {
    throw malformed("the answer is not XML (" + std::to_string(xml.size()) + " bytes)");
  }
  const std::string path = action + "Response/" + action + "Result/Credentials";
  pugi::xml_node creds =
      doc.child((action + "Response").c_str()).child((action + "Result").c_str()).child("Credentials");
  if (!creds) throw malformed("the answer has no " + path);
  auto text = [&](const char* name) {
    std::string v = creds.child(name).text().get();
    if (v.empty()) throw malformed("the answer has no " + path + "/" + name);
    return v;
  };
  AwsCredentials c;
  c.access_key_id = text("AccessKeyId");
  c.secret_access_key = Secret(text("SecretAccessKey"));
  c.session_token = Secret(text("SessionToken"));
  WallTime expiration;
  if (!parse_iso8601(text("Expiration"), &expiration)) throw malformed(path + "/Expiration is not an ISO 8601 time");
  c.expiration = expiration;
  return c;
}

}  // namespace runpool::aws
