// The real clients behind a Context, built from the settings: one AWS session
// (common/aws/aws_session.h) with SigV4 credentials from the AWS SDKs' default chain, the shared
// retry policy and the AWS clock fed by every AWS answer's Date header; a connection per service
// (plus one for SQS long polls).
#pragma once

#include <memory>

#include "common/aws/aws_session.h"
#include "common/aws/cloudwatch_logs.h"
#include "common/aws/credentials.h"
#include "common/aws/dynamodb.h"
#include "common/aws/ec2.h"
#include "common/aws/imds.h"
#include "common/aws/sqs.h"
#include "common/aws_clock.h"
#include "common/http.h"
#include "common/pool/dynamo_state_table.h"
#include "common/pool/run_assignment_store.h"
#include "controller/ec2_compute.h"
#include "controller/github_runners.h"
#include "controller/settings.h"
#include "controller/sqs_pool_queue.h"

namespace runpool::controller {

class Backend {
 public:
  // Throws ConfigError when the region is not set.
  explicit Backend(const Settings& settings, const aws::GetEnv& getenv = aws::real_getenv);
  ~Backend();

  AwsClock& clock() { return session_->clock(); }
  aws::DynamoDbClient& dynamodb() { return *dynamodb_; }
  // On a connection of its own: serve renews its lease from a thread of its own, whatever the
  // serving loop's calls are waiting for.
  aws::DynamoDbClient& dynamodb_for_lease() { return *dynamodb_lease_; }
  aws::SqsClient& sqs() { return *sqs_; }
  aws::Ec2Client& ec2() { return *ec2_; }
  pool::StateTable& table() { return *table_; }
  pool::RunAssignmentStore& run_assignments() { return *runs_; }
  PoolQueue& queue() { return *queue_; }
  Compute& compute() { return *compute_; }
  Runners& github() { return *github_; }
  github::GithubClient& github_client() { return github_->client(); }
  Clock& local_clock() { return local_; }
  aws::CloudWatchLogsClient& logs() { return *logs_; }  // metrics_log_group (controller/metrics.h)

 private:
  SystemClock local_;
  CurlHttpClient http_github_, http_imds_;
  std::unique_ptr<aws::ImdsClient> imds_;
  std::unique_ptr<aws::CredentialsProvider> credentials_;
  std::unique_ptr<aws::AwsSession> session_;  // every AWS service's caller, and the AWS clock
  std::unique_ptr<aws::DynamoDbClient> dynamodb_, dynamodb_lease_;
  std::unique_ptr<aws::SqsClient> sqs_, sqs_poll_;
  std::unique_ptr<aws::Ec2Client> ec2_;
  std::unique_ptr<pool::DynamoStateTable> table_;
  std::unique_ptr<pool::DynamoRunAssignmentStore> runs_;
  std::unique_ptr<SqsPoolQueue> queue_;
  std::unique_ptr<Ec2Compute> compute_;
  std::unique_ptr<GithubRunners> github_;
  std::unique_ptr<aws::CloudWatchLogsClient> logs_;
};

}  // namespace runpool::controller
