// The two AWS backends the moto tier runs the same test bodies against: moto's server (an
// independent implementation of the AWS APIs) and the project's local cloud (dynalite,
// local-aws-sqs and runpool's own EC2 stand-in). A parameterised test over both shows a
// divergence as a test passing on one backend and failing on the other.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/aws/dynamodb.h"
#include "common/aws/ec2.h"
#include "common/aws/sqs.h"
#include "common/http.h"
#include "controller/settings.h"

namespace runpool::testing {

inline constexpr const char* kMoto = "moto";
inline constexpr const char* kLocalCloud = "localcloud";

struct AwsBackend {
  std::string name;  // kMoto or kLocalCloud
  std::string region;
  std::string dynamodb, sqs, ec2;  // endpoints (one and the same URL on moto)
  aws::AwsCredentials credentials;
  // The instance role's unique id records are keyed by (moto models no instance role: any
  // well-formed id does).
  std::string instance_role_id;
  std::string subnet;  // a subnet the backend's EC2 knows
  bool moto() const { return name == kMoto; }
};

// The backend of that name, started on first use and shared by every test of the binary.
const AwsBackend& aws_backend(const std::string& name);

// Every backend name, for INSTANTIATE_TEST_SUITE_P(…, ::testing::ValuesIn(backend_names()), …).
std::vector<std::string> backend_names();
std::string backend_test_name(const ::testing::TestParamInfo<std::string>& info);

// One backend's clients, each service on its own HTTP connection (and SQS long polls on another).
class BackendClients {
 public:
  explicit BackendClients(const AwsBackend& backend);

  aws::DynamoDbClient& db() { return *db_; }
  aws::SqsClient& sqs() { return *sqs_; }
  aws::SqsClient& long_poll() { return *long_poll_; }
  aws::Ec2Client& ec2() { return *ec2_; }

 private:
  aws::StaticCredentialsProvider creds_;
  CurlHttpClient db_http_, sqs_http_, poll_http_, ec2_http_;
  std::unique_ptr<aws::AwsCaller> db_caller_, sqs_caller_, poll_caller_, ec2_caller_;
  std::unique_ptr<aws::DynamoDbClient> db_;
  std::unique_ptr<aws::SqsClient> sqs_, long_poll_;
  std::unique_ptr<aws::Ec2Client> ec2_;
};

// A name no other test of this run (nor an earlier run against the same backend) uses:
// "<prefix>-<pid>-<n>".
std::string unique_name(const std::string& prefix);

// A pool's settings as `runpoolctl init` and `provision` need them on this backend: classes small
// (c7i.large, m7i.large) and large (m7i.2xlarge), the repository's user-data template, the
// backend's instance role id and subnet.
controller::Settings pool_settings(const AwsBackend& backend, const std::string& pool);

// The base of every test of the tier: GetParam() names the backend.
class BackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  BackendTest() : backend_(aws_backend(GetParam())), aws_(backend_) {}
  bool on_moto() const { return backend_.moto(); }

  const AwsBackend& backend_;
  BackendClients aws_;
};

}  // namespace runpool::testing
