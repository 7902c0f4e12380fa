#include "common/aws/aws_session.h"

namespace runpool::aws {

std::unique_ptr<HttpClient> AwsSession::curl(const std::atomic<bool>* cancel) {
  auto http = std::make_unique<CurlHttpClient>();
  if (cancel) http->cancel_when(cancel);
  return http;
}

AwsSession::AwsSession(CredentialsProvider& credentials, Clock& local, SessionSettings settings, Connect connect)
    : credentials_(credentials),
      local_(local),
      settings_(std::move(settings)),
      connect_(std::move(connect)),
      clock_(local) {}

AwsSession::~AwsSession() = default;

AwsCaller& AwsSession::caller(const std::string& service, const std::string& endpoint,
                              const std::atomic<bool>* cancel) {
  Connection c;
  c.http = connect_(cancel);
  c.caller = std::make_unique<AwsCaller>(*c.http, credentials_, local_,
                                         ServiceSettings{service, endpoint, settings_.region, settings_.retry,
                                                         settings_.timeout});
  c.caller->set_response_observer(
      [this](const HttpResponse& r, WallTime sent, WallTime received) { clock_.observe(r.header("date"), sent, received); });
  std::lock_guard<std::mutex> lock(mu_);
  connections_.push_back(std::move(c));
  return *connections_.back().caller;
}

}  // namespace runpool::aws
