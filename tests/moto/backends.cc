#include "tests/moto/backends.h"

#include <unistd.h>

#include <atomic>
#include <stdexcept>

#include "common/aws/ec2_query.h"
#include "tests/moto/moto_server.h"
#include "tests/support/local_cloud.h"

#ifndef RUNPOOL_SOURCE_DIR
#error "RUNPOOL_SOURCE_DIR must be defined by the build"
#endif
#ifndef RUNPOOL_MOTO_SERVER
#error "RUNPOOL_MOTO_SERVER must name moto's moto_server script"
#endif

namespace runpool::testing {
namespace {

// Quick retries: both backends answer on 127.0.0.1 and neither throttles unless told to.
aws::ServiceSettings service(const std::string& name, const std::string& endpoint, const std::string& region) {
  return aws::ServiceSettings{name, endpoint, region,
                              RetryPolicy{4, std::chrono::milliseconds(20), std::chrono::milliseconds(200)},
                              std::chrono::seconds(30)};
}

// The first subnet moto's default VPC has (moto makes one per availability zone of the region).
std::string first_moto_subnet(const AwsBackend& b) {
  CurlHttpClient http;
  aws::StaticCredentialsProvider creds(b.credentials);
  aws::AwsCaller caller(http, creds, system_clock(), service("ec2", b.ec2, b.region));
  aws::Ec2Form form("DescribeSubnets");
  form.add("Filter.1.Name", "default-for-az").add("Filter.1.Value.1", "true");
  aws::Ec2Response resp = aws::ec2_call(caller, form);
  std::string id = resp.root.child("subnetSet").child("item").child("subnetId").text().get();
  if (id.empty()) throw std::runtime_error("moto's default VPC has no subnet");
  return id;
}

AwsBackend start_moto() {
  static MotoServer server(RUNPOOL_MOTO_SERVER);
  AwsBackend b;
  b.name = kMoto;
  b.region = "us-east-1";
  b.dynamodb = b.sqs = b.ec2 = server.endpoint();
  b.credentials = aws::AwsCredentials{"AKIAMOTOTESTKEY00001", Secret("moto-test-secret"), Secret(), std::nullopt};
  b.instance_role_id = "AROA4MOTOTESTROLE0001";
  b.subnet = first_moto_subnet(b);
  return b;
}

AwsBackend start_local_cloud() {
  LocalCloud& cloud = LocalCloud::shared();
  AwsBackend b;
  b.name = kLocalCloud;
  b.region = cloud.region();
  b.dynamodb = cloud.dynamodb();
  b.sqs = cloud.sqs();
  b.ec2 = cloud.ec2();
  b.credentials = cloud.controller_credentials();
  b.instance_role_id = cloud.instance_role_id();
  b.subnet = "subnet-0aaaaaaaaaaaaaaaa";  // the stand-in takes any well-formed subnet id
  return b;
}

}  // namespace

const AwsBackend& aws_backend(const std::string& name) {
  if (name == kMoto) {
    static const AwsBackend moto = start_moto();
    return moto;
  }
  if (name == kLocalCloud) {
    static const AwsBackend local = start_local_cloud();
    return local;
  }
  throw std::invalid_argument("no backend " + name);
}

std::vector<std::string> backend_names() { return {kMoto, kLocalCloud}; }

std::string backend_test_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

BackendClients::BackendClients(const AwsBackend& b) : creds_(b.credentials) {
  db_caller_ = std::make_unique<aws::AwsCaller>(db_http_, creds_, system_clock(), service("dynamodb", b.dynamodb, b.region));
  sqs_caller_ = std::make_unique<aws::AwsCaller>(sqs_http_, creds_, system_clock(), service("sqs", b.sqs, b.region));
  poll_caller_ = std::make_unique<aws::AwsCaller>(poll_http_, creds_, system_clock(), service("sqs", b.sqs, b.region));
  ec2_caller_ = std::make_unique<aws::AwsCaller>(ec2_http_, creds_, system_clock(), service("ec2", b.ec2, b.region));
  db_ = std::make_unique<aws::DynamoDbClient>(*db_caller_);
  sqs_ = std::make_unique<aws::SqsClient>(*sqs_caller_);
  long_poll_ = std::make_unique<aws::SqsClient>(*poll_caller_);
  ec2_ = std::make_unique<aws::Ec2Client>(*ec2_caller_);
}

controller::Settings pool_settings(const AwsBackend& backend, const std::string& pool) {
  controller::Settings s;
  s.pool = pool;
  s.table = pool + "-table";
  s.region = backend.region;
  s.resource_classes = {{"small", {"c7i.large", "m7i.large"}}, {"large", {"m7i.2xlarge"}}};
  s.default_resource_class = "small";
  s.image_id = "ami-0123456789abcdef0";
  s.instance_profile = "runpool-agent";
  s.instance_role_id = backend.instance_role_id;
  s.launch_template = "runpool-" + pool;
  s.subnets = {backend.subnet};
  s.spot_allocation_strategy = "price-capacity-optimized";
  s.user_data_template = std::string(RUNPOOL_SOURCE_DIR) + "/cloud-init/user-data.sh.in";
  s.agent_binary = "/usr/bin/runpool-agent";
  s.agent_config = {{"table", s.table}, {"pool", s.pool}, {"region", s.region}};
  return s;
}

std::string unique_name(const std::string& prefix) {
  static std::atomic<int> n{0};
  return prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(++n);
}

}  // namespace runpool::testing
