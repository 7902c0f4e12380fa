// A profile's credentials, as the AWS CLI resolves them. Of a profile's settings, the first that
// applies is used:
//   1. role_arn with source_profile or credential_source: STS AssumeRole, signed with the source's
//      credentials (a source profile's own static keys first; chains of roles are followed, loops
//      refused), with role_session_name, external_id and duration_seconds;
//   2. web_identity_token_file (with role_arn): STS AssumeRoleWithWebIdentity;
//   3. sso_* keys: IAM Identity Center, which is not signed in to here: an error that says what
//      to run instead;
//   4. aws_access_key_id + aws_secret_access_key (+ aws_session_token);
//   5. credential_process.
// credential_source is Environment, Ec2InstanceMetadata or EcsContainer. mfa_serial (a prompt for
// a code) is refused: runpoolctl runs unattended.
#pragma once

#include <memory>
#include <string>

#include "common/aws/credentials.h"
#include "common/aws/shared_config.h"
#include "common/aws/sts.h"

namespace runpool::aws {

struct ProfileSources {
  const SharedConfig& config;
  StsClient& sts;
  HttpClient& http;        // a container endpoint (credential_source = EcsContainer)
  ImdsClient* imds;        // credential_source = Ec2InstanceMetadata; may be null
  Clock& clock;
  const GetEnv& getenv;
  Duration refresh_before;
  std::string client;              // "runpoolctl": the program named in messages
  std::string default_session;     // role_session_name when the profile names none
};

// The provider for profile `name`. nullptr, with *why_not, when the profile is absent (and was not
// chosen explicitly) or sets no credentials; throws CredentialsError when its settings cannot work
// (an explicitly chosen profile that does not exist, SSO, a missing source_profile, a loop, a
// partial key pair, an unknown credential_source…).
std::unique_ptr<CredentialsProvider> profile_credentials(const ProfileSources& sources, const std::string& name,
                                                         bool explicit_choice, std::string* why_not);

}  // namespace runpool::aws
