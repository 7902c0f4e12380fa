// Sends one AWS API call: endpoint, SigV4 signing (by libcurl) with live credentials, the shared
// retry policy, and AWS's error answers turned into AwsError. Protocol clients (JSON 1.0 for
// DynamoDB and SQS, the query protocol for EC2) sit on top and only say how to read errors.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "common/aws/aws_error.h"
#include "common/aws/credentials.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/http.h"
#include "common/retry.h"

namespace runpool::aws {

struct ServiceSettings {
  std::string service{};   // signing name: "dynamodb", "sqs", "ec2"
  std::string endpoint{};  // "https://dynamodb.us-east-1.amazonaws.com" or a local stand-in
  std::string region{};
  RetryPolicy retry{};
  Duration timeout{std::chrono::seconds(30)};
  bool sign = true;        // false: sent unsigned (STS AssumeRoleWithWebIdentity), no credentials read
};

struct ErrorInfo {
  std::string code;
  std::string message;
};

// Reads AWS's error code and message out of an error response, in the protocol's own format.
using ErrorParser = std::function<ErrorInfo(const HttpResponse&)>;

// Sees every HTTP answer (any status, retries included) with when its request left and when it
// came back on the caller's clock — how the AWS clock (common/aws_clock.h) learns AWS's time.
using ResponseObserver = std::function<void(const HttpResponse&, WallTime sent, WallTime received)>;

class AwsCaller {
 public:
  AwsCaller(HttpClient& http, CredentialsProvider& credentials, Clock& clock, ServiceSettings settings);

  // Signs and sends `request` (its url is set to the endpoint when empty), retrying what the
  // policy calls retryable. Returns the 2xx response; throws AwsError for anything else.
  // `timeout` replaces settings().timeout for this call only (a long poll must outlast its wait).
  HttpResponse call(const std::string& operation, HttpRequest request, const ErrorParser& parse_error,
                    std::optional<Duration> timeout = std::nullopt);

  const ServiceSettings& settings() const { return settings_; }
  // Optional; set before the first call.
  void set_response_observer(ResponseObserver observer) { observer_ = std::move(observer); }
  // Counters for tests and benchmarks: HTTP requests sent, including retries.
  long requests_sent() const { return requests_sent_.load(); }

 private:
  HttpClient& http_;
  CredentialsProvider& credentials_;
  Clock& clock_;
  ServiceSettings settings_;
  ResponseObserver observer_;
  std::atomic<long> requests_sent_{0};
};

// The JSON protocols (DynamoDB JSON 1.0, SQS JSON): POST / with X-Amz-Target: <prefix>.<op>.
// An empty 2xx body reads as {} (local-aws-sqs answers an empty ReceiveMessage that way).
Json::Value json_call(AwsCaller& caller, const std::string& target_prefix, const std::string& operation,
                      const Json::Value& body);
ErrorInfo parse_json_error(const HttpResponse& response);

// Runs `parse` over a 2xx answer's document; a JsonError (a field missing or of the wrong type)
// becomes the same AwsError json_call gives for a body that is not JSON.
template <typename F>
auto parse_answer(AwsCaller& caller, const std::string& operation, F&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const JsonError& e) {
    throw AwsError(caller.settings().service, operation, 200, "MalformedResponse", e.what());
  }
}

}  // namespace runpool::aws
