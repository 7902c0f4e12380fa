// A scripted HttpClient for unit tests (header only; not part of the library). Answers come from a
// queue first, in order (canned responses, transport errors, one-shot handlers), then from an
// optional fallback handler; every request is recorded for inspection. Thread-safe: clients under
// test may send from several threads, and handlers run outside the lock so they may use the fake.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/http.h"
#include "common/json.h"

namespace runpool::testing {

inline HttpResponse reply(long status, std::string body = "", std::map<std::string, std::string> headers = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

// A request's header `name` (exact match), or "" when absent. Secret headers are revealed: tests only.
inline std::string header_of(const HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}
inline std::string secret_header_of(const HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.secret_headers) {
    if (k == name) return v.reveal();
  }
  return "";
}
inline std::string authorization_of(const HttpRequest& r) { return secret_header_of(r, "Authorization"); }

class FakeHttp final : public HttpClient {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  // A handler that answers like an unreachable server: HttpTransportError.
  static Handler refused(bool timed_out = false) {
    return [timed_out](const HttpRequest& req) -> HttpResponse {
      throw HttpTransportError(req.method + " " + req.url + (timed_out ? ": Timeout" : ": Connection refused"),
                               timed_out);
    };
  }

  // Queues one answer. Status 0 is no HTTP answer: queue push_transport_error() for that.
  void push(HttpResponse r) {
    if (r.status == 0) throw std::invalid_argument("FakeHttp: status 0 is not an answer; use push_transport_error()");
    push(Handler([r = std::move(r)](const HttpRequest&) { return r; }));
  }
  void push(long status, std::string body = "", std::map<std::string, std::string> headers = {}) {
    push(reply(status, std::move(body), std::move(headers)));
  }
  void push(Handler h) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(h));
  }
  void push_transport_error(bool timed_out = false) { push(refused(timed_out)); }

  // Answers whatever the queue does not.
  void on(Handler h) {
    std::lock_guard<std::mutex> lock(mu_);
    fallback_ = std::move(h);
  }

  // Forgets queued answers and recorded requests; the fallback stays.
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.clear();
    requests_.clear();
  }

  HttpResponse send(const HttpRequest& request) override {
    Handler h;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
      if (!queue_.empty()) {
        h = std::move(queue_.front());
        queue_.pop_front();
      } else {
        h = fallback_;
      }
    }
    if (!h) throw std::logic_error("FakeHttp: no answer scripted for " + request.method + " " + request.url);
    return h(request);
  }

  size_t count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.size();
  }
  // Queued answers not consumed yet.
  size_t pending() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.size();
  }
  std::vector<HttpRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  // The i-th request sent (from 0); std::out_of_range when there is none.
  HttpRequest request(size_t i) const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.at(i);
  }
  HttpRequest last() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (requests_.empty()) throw std::out_of_range("FakeHttp: no request sent");
    return requests_.back();
  }
  std::string header(size_t i, const std::string& name) const { return header_of(request(i), name); }
  // The i-th request's body parsed as JSON; JsonError when it is not.
  Json::Value body_json(size_t i) const { return parse_json(request(i).body, "request body"); }

 private:
  mutable std::mutex mu_;
  std::deque<Handler> queue_;
  Handler fallback_;
  std::vector<HttpRequest> requests_;
};

}  // namespace runpool::testing
