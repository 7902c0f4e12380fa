#include "controller/backend.h"

#include <string_view>

#include "common/aws/endpoints.h"

namespace runpool::controller {

Backend::Backend(const Settings& settings, const aws::GetEnv& getenv) : settings_(settings) {
  require_aws(settings);
  imds_ = std::make_unique<aws::ImdsClient>(http_imds_, local_);
  // The AWS SDKs' chain: environment, web identity, shared config, container, instance role.
  aws::CredentialChainOptions chain;
  chain.region = settings.region;
  chain.imds = imds_.get();
  credentials_ = aws::credential_chain(chain, local_, getenv);
  aws::AwsSettings where{settings.region,
                         {{"dynamodb", settings.endpoint_dynamodb},
                          {"sqs", settings.endpoint_sqs},
                          {"ec2", settings.endpoint_ec2},
                          {"logs", settings.endpoint_logs}}};
  // The service id is "logs" here, but AWS's own variable for it is AWS_ENDPOINT_URL_CLOUDWATCH_LOGS;
  // the shorter AWS_ENDPOINT_URL_LOGS is honoured first.
  auto env = [&](const char* name) -> const char* {
    const char* v = getenv(name);
    if ((!v || !*v) && std::string_view(name) == "AWS_ENDPOINT_URL_LOGS") {
      v = getenv("AWS_ENDPOINT_URL_CLOUDWATCH_LOGS");
    }
    return v;
  };
  auto endpoint = [&](const char* service) { return aws::resolve_endpoint(where, service, settings.region, env); };
  dynamodb_caller_ = caller(http_dynamodb_, "dynamodb", endpoint("dynamodb"));
  sqs_caller_ = caller(http_sqs_, "sqs", endpoint("sqs"));
  sqs_poll_caller_ = caller(http_sqs_poll_, "sqs", endpoint("sqs"));
  ec2_caller_ = caller(http_ec2_, "ec2", endpoint("ec2"));
  logs_caller_ = caller(http_logs_, "logs", endpoint("logs"));
  dynamodb_ = std::make_unique<aws::DynamoDbClient>(*dynamodb_caller_, local_);
  sqs_ = std::make_unique<aws::SqsClient>(*sqs_caller_);
  sqs_poll_ = std::make_unique<aws::SqsClient>(*sqs_poll_caller_);
  ec2_ = std::make_unique<aws::Ec2Client>(*ec2_caller_);
  table_ = std::make_unique<pool::DynamoStateTable>(*dynamodb_, settings.table, settings.instance_role_id);
  queue_ = std::make_unique<SqsPoolQueue>(*sqs_, *sqs_poll_, settings);
  compute_ = std::make_unique<Ec2Compute>(*ec2_, settings);
  github_ = std::make_unique<GithubRunners>(settings, http_github_, local_);
  logs_ = std::make_unique<aws::CloudWatchLogsClient>(*logs_caller_);
}

Backend::~Backend() = default;

std::unique_ptr<aws::AwsCaller> Backend::caller(HttpClient& http, const std::string& service,
                                                const std::string& endpoint) {
  aws::ServiceSettings ss;
  ss.service = service;
  ss.endpoint = endpoint;
  ss.region = settings_.region;
  ss.retry.max_attempts = settings_.aws_max_attempts;
  ss.timeout = settings_.aws_timeout;
  auto c = std::make_unique<aws::AwsCaller>(http, *credentials_, local_, ss);
  c->set_response_observer([this](const HttpResponse& r, WallTime sent, WallTime received) {
    aws_clock_.observe(r.header("date"), sent, received);
  });
  return c;
}

}  // namespace runpool::controller
