#include "controller/backend.h"

#include <string_view>

#include "common/aws/endpoints.h"

namespace runpool::controller {

Backend::Backend(const Settings& settings, const aws::GetEnv& getenv) {
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
  aws::SessionSettings ss;
  ss.region = settings.region;
  ss.retry.max_attempts = settings.aws_max_attempts;
  ss.timeout = settings.aws_timeout;
  session_ = std::make_unique<aws::AwsSession>(*credentials_, local_, ss);
  dynamodb_ = std::make_unique<aws::DynamoDbClient>(session_->caller("dynamodb", endpoint("dynamodb")), local_);
  dynamodb_lease_ = std::make_unique<aws::DynamoDbClient>(session_->caller("dynamodb", endpoint("dynamodb")), local_);
  sqs_ = std::make_unique<aws::SqsClient>(session_->caller("sqs", endpoint("sqs")));
  sqs_poll_ = std::make_unique<aws::SqsClient>(session_->caller("sqs", endpoint("sqs")));
  ec2_ = std::make_unique<aws::Ec2Client>(session_->caller("ec2", endpoint("ec2")));
  table_ = std::make_unique<pool::DynamoStateTable>(*dynamodb_, settings.table, settings.instance_role_id);
  runs_ = std::make_unique<pool::DynamoRunAssignmentStore>(*dynamodb_, settings.table);
  queue_ = std::make_unique<SqsPoolQueue>(*sqs_, *sqs_poll_, settings);
  compute_ = std::make_unique<Ec2Compute>(*ec2_, settings);
  github_ = std::make_unique<GithubRunners>(settings, http_github_, local_);
  logs_ = std::make_unique<aws::CloudWatchLogsClient>(session_->caller("logs", endpoint("logs")));
}

Backend::~Backend() = default;

}  // namespace runpool::controller
