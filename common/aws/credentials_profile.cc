#include "common/aws/credentials_profile.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "common/aws/credentials_providers.h"

namespace runpool::aws {
namespace {

constexpr const char* kSsoKeys[] = {"sso_start_url", "sso_session", "sso_account_id", "sso_role_name", "sso_region"};

class Resolver {
 public:
  explicit Resolver(const ProfileSources& s) : s_(s) {}

  std::unique_ptr<CredentialsProvider> resolve(const std::string& name, std::string* why_not) {
    if (std::find(visited_.begin(), visited_.end(), name) != visited_.end()) {
      std::string loop;
      for (const auto& v : visited_) loop += v + " -> ";
      throw CredentialsError("source_profile loop: " + loop + name);
    }
    auto it = s_.config.profiles.find(name);
    if (it == s_.config.profiles.end()) {
      throw CredentialsError("profile " + name + " (source_profile of " + visited_.back() + ") is not in " +
                             s_.config.paths.config + " or " + s_.config.paths.credentials);
    }
    const bool as_source = !visited_.empty();
    visited_.push_back(name);
    const Profile& p = it->second;
    const std::string what = "profile " + name;
    auto value = [&](const char* key) -> std::string {
      auto v = p.find(key);
      return v == p.end() ? "" : v->second;
    };
    auto has = [&](const char* key) { return !value(key).empty(); };

    const bool static_keys = has("aws_access_key_id") && has("aws_secret_access_key");
    // A source profile's own keys come before its role: they are what its role would be assumed with.
    if (as_source && static_keys) return static_credentials(p);

    if (has("role_arn") && (has("source_profile") || has("credential_source"))) {
      if (has("source_profile") && has("credential_source")) {
        throw CredentialsError(what + " sets both source_profile and credential_source; keep one");
      }
      if (has("mfa_serial")) {
        throw CredentialsError(what + ": role_arn with mfa_serial needs an MFA code, which " + s_.client +
                               " cannot ask for; use credentials of a session that has one");
      }
      std::unique_ptr<CredentialsProvider> source;
      if (has("source_profile")) {
        const std::string source_name = value("source_profile");
        if (source_name == name) {
          if (!static_keys) {
            throw CredentialsError(what + " is its own source_profile but has no aws_access_key_id and "
                                   "aws_secret_access_key");
          }
          source = static_credentials(p);
        } else {
          source = resolve(source_name, nullptr);
        }
      } else {
        source = credential_source(value("credential_source"), what);
      }
      AssumeRoleRequest r{value("role_arn"), session_name(p), value("external_id"), duration(p, what)};
      return std::make_unique<AssumeRoleCredentialsProvider>(s_.sts, std::move(source), std::move(r), s_.clock,
                                                             s_.refresh_before);
    }
    if (has("web_identity_token_file")) {
      if (!has("role_arn")) throw CredentialsError(what + ": web_identity_token_file needs role_arn");
      WebIdentitySettings w{value("web_identity_token_file"), value("role_arn"), session_name(p), duration(p, what)};
      return std::make_unique<WebIdentityCredentialsProvider>(s_.sts, std::move(w), s_.clock, s_.refresh_before);
    }
    if (has("role_arn")) {
      throw CredentialsError(what + ": role_arn needs source_profile, credential_source or web_identity_token_file");
    }
    if (std::any_of(std::begin(kSsoKeys), std::end(kSsoKeys), has)) {
      throw CredentialsError(what + " signs in through IAM Identity Center (SSO), which " + s_.client +
                             " does not do: run `aws sso login --profile " + name +
                             "`, then `eval \"$(aws configure export-credentials --profile " + name +
                             " --format env)\"` and run " + s_.client + " in that shell");
    }
    if (static_keys) return static_credentials(p);
    if (has("aws_access_key_id") || has("aws_secret_access_key")) {
      throw CredentialsError(what + " sets " + (has("aws_access_key_id") ? "aws_access_key_id" : "aws_secret_access_key") +
                             " without " + (has("aws_access_key_id") ? "aws_secret_access_key" : "aws_access_key_id"));
    }
    if (has("credential_process")) {
      return std::make_unique<ProcessCredentialsProvider>(value("credential_process"), what, s_.clock,
                                                          s_.refresh_before);
    }
    if (as_source) {
      throw CredentialsError(what + " (source_profile of " + visited_[visited_.size() - 2] + ") has no credentials");
    }
    *why_not = what + " sets no credentials";
    return nullptr;
  }

 private:
  static std::unique_ptr<CredentialsProvider> static_credentials(const Profile& p) {
    AwsCredentials c;
    c.access_key_id = p.at("aws_access_key_id");
    c.secret_access_key = Secret(p.at("aws_secret_access_key"));
    for (const char* key : {"aws_session_token", "aws_security_token"}) {
      if (auto it = p.find(key); it != p.end() && !it->second.empty()) {
        c.session_token = Secret(it->second);
        break;
      }
    }
    return std::make_unique<StaticCredentialsProvider>(std::move(c));
  }

  std::string session_name(const Profile& p) const {
    auto it = p.find("role_session_name");
    return it != p.end() && !it->second.empty() ? it->second : s_.default_session;
  }

  static std::optional<int> duration(const Profile& p, const std::string& what) {
    auto it = p.find("duration_seconds");
    if (it == p.end() || it->second.empty()) return std::nullopt;
    const std::string& v = it->second;
    if (v.size() > 5 || !std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); }) ||
        std::stoi(v) < 900 || std::stoi(v) > 43200) {
      throw CredentialsError(what + ": duration_seconds must be a number of seconds from 900 to 43200");
    }
    return std::stoi(v);
  }

  std::unique_ptr<CredentialsProvider> credential_source(const std::string& source, const std::string& what) {
    if (source == "Environment") {
      auto c = credentials_from_env(s_.getenv);
      if (!c) {
        throw CredentialsError(what + ": credential_source Environment, but AWS_ACCESS_KEY_ID and "
                               "AWS_SECRET_ACCESS_KEY are not set");
      }
      return std::make_unique<StaticCredentialsProvider>(std::move(*c));
    }
    if (source == "Ec2InstanceMetadata") {
      if (!s_.imds) throw CredentialsError(what + ": credential_source Ec2InstanceMetadata, but IMDS is not at hand");
      return std::make_unique<ImdsCredentialsProvider>(*s_.imds, s_.clock, s_.refresh_before);
    }
    if (source == "EcsContainer") {
      auto endpoint = container_endpoint_from_env(s_.getenv);
      if (!endpoint) {
        throw CredentialsError(what + ": credential_source EcsContainer, but AWS_CONTAINER_CREDENTIALS_RELATIVE_URI "
                               "and _FULL_URI are not set");
      }
      return std::make_unique<ContainerCredentialsProvider>(s_.http, std::move(*endpoint), s_.clock,
                                                            s_.refresh_before);
    }
    throw CredentialsError(what + ": credential_source " + source +
                           " is none of Environment, Ec2InstanceMetadata, EcsContainer");
  }

  const ProfileSources& s_;
  std::vector<std::string> visited_;
};

}  // namespace

std::unique_ptr<CredentialsProvider> profile_credentials(const ProfileSources& sources, const std::string& name,
                                                         bool explicit_choice, std::string* why_not) {
  const SharedConfig& c = sources.config;
  if (!c.profiles.count(name)) {
    const std::string files = c.paths.config + " or " + c.paths.credentials;
    if (explicit_choice) throw CredentialsError("AWS_PROFILE names profile " + name + ", which is not in " + files);
    *why_not = !c.config_found && !c.credentials_found ? "no " + files : "no profile " + name + " in " + files;
    return nullptr;
  }
  return Resolver(sources).resolve(name, why_not);
}

}  // namespace runpool::aws
