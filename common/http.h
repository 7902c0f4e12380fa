// HTTP over libcurl: one reused handle per client (so connections stay alive between calls),
// timeouts on every request, optional SigV4 signing by libcurl itself. No retries here: the
// retry policy lives in retry.h and is applied by each service client, which knows its errors.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/secret.h"

namespace runpool {

struct SigV4Signing {
  std::string region;
  std::string service;  // "dynamodb", "sqs", "ec2"
  std::string access_key_id;
  Secret secret_access_key;
  Secret session_token;  // empty for long-term keys
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::pair<std::string, Secret>> secret_headers;  // e.g. Authorization
  std::string body;
  Duration timeout{std::chrono::seconds(30)};
  Duration connect_timeout{std::chrono::seconds(5)};
  std::optional<SigV4Signing> sigv4;
  // A local service's Unix socket to connect to instead of the URL's host (the Docker Engine API);
  // the URL still gives the path. Empty: TCP as usual.
  std::string unix_socket;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased; repeated headers joined by ", "
  std::string body;

  // The header's value, or "" when absent. `name` is matched case-insensitively.
  std::string header(const std::string& name) const;
};

// A request that got no HTTP answer: refused, reset, timed out, DNS failure.
class HttpTransportError : public std::runtime_error {
 public:
  HttpTransportError(const std::string& what, bool timed_out)
      : std::runtime_error(what), timed_out_(timed_out) {}
  bool timed_out() const { return timed_out_; }

 private:
  bool timed_out_;
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  // Sends the request and returns whatever status came back; throws HttpTransportError when
  // there was no answer.
  virtual HttpResponse send(const HttpRequest& request) = 0;
};

class CurlHttpClient final : public HttpClient {
 public:
  CurlHttpClient();
  ~CurlHttpClient() override;
  CurlHttpClient(const CurlHttpClient&) = delete;
  CurlHttpClient& operator=(const CurlHttpClient&) = delete;

  HttpResponse send(const HttpRequest& request) override;

  // Once `*flag` turns true, a transfer in progress ends within about a second (curl's progress
  // callback) and send() throws HttpTransportError: how a thread blocked in a long poll is
  // stopped. The flag must outlive the client.
  void cancel_when(const std::atomic<bool>* flag) { cancel_ = flag; }

 private:
  std::mutex mu_;  // one transfer at a time on the shared handle
  void* curl_;     // CURL*, kept opaque so curl.h stays out of every includer
  const std::atomic<bool>* cancel_ = nullptr;
};

// Percent-encodes for URLs and form bodies (RFC 3986 unreserved characters kept).
std::string url_encode(const std::string& s);

}  // namespace runpool
