// One binary's AWS session: the credentials, region, retry policy and timeout that all its AWS calls
// share, and the AWS clock (common/aws_clock.h) that every answer's Date header feeds. runpoolctl
// and runpool-agent both build their service clients from one session. A table time written by
// either binary then follows AWS's clock the same way, whichever service answered last.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/aws/aws_caller.h"
#include "common/aws/credentials.h"
#include "common/aws_clock.h"
#include "common/http.h"

namespace runpool::aws {

struct SessionSettings {
  std::string region;
  RetryPolicy retry;
  Duration timeout{std::chrono::seconds(30)};
};

class AwsSession {
 public:
  // Opens one HTTP connection. The flag, when given, cancels a transfer in progress once it turns
  // true (CurlHttpClient::cancel_when). The default opens a CurlHttpClient; tests give fakes.
  using Connect = std::function<std::unique_ptr<HttpClient>(const std::atomic<bool>* cancel)>;
  static std::unique_ptr<HttpClient> curl(const std::atomic<bool>* cancel);

  // `credentials` and `local` must outlive the session.
  AwsSession(CredentialsProvider& credentials, Clock& local, SessionSettings settings, Connect connect = curl);
  ~AwsSession();
  AwsSession(const AwsSession&) = delete;
  AwsSession& operator=(const AwsSession&) = delete;

  // Local time corrected by what AWS's answers said.
  AwsClock& clock() { return clock_; }
  const SessionSettings& settings() const { return settings_; }

  // A caller for `service` (its signing name) at `endpoint`, over a connection of its own: threads
  // do not share a connection, and a long poll's can be cancelled through `cancel` without touching
  // the others. The caller lives as long as the session.
  AwsCaller& caller(const std::string& service, const std::string& endpoint,
                    const std::atomic<bool>* cancel = nullptr);

 private:
  struct Connection {
    std::unique_ptr<HttpClient> http;
    std::unique_ptr<AwsCaller> caller;
  };
  CredentialsProvider& credentials_;
  Clock& local_;
  SessionSettings settings_;
  Connect connect_;
  AwsClock clock_;
  std::mutex mu_;
  std::vector<Connection> connections_;
};

}  // namespace runpool::aws
