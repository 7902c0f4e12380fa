// An HttpClient decorator that shows every answer's Date header to the AWS clock, so the agent's
// table times follow AWS's clock without touching the service clients.
#pragma once

#include "common/aws_clock.h"
#include "common/http.h"

namespace runpool::agent {

class ClockObservingHttp final : public HttpClient {
 public:
  ClockObservingHttp(HttpClient& inner, AwsClock& clock, Clock& local) : inner_(inner), clock_(clock), local_(local) {}
  HttpResponse send(const HttpRequest& request) override {
    WallTime sent = local_.now();
    HttpResponse r = inner_.send(request);
    clock_.observe(r.header("date"), sent, local_.now());
    return r;
  }

 private:
  HttpClient& inner_;
  AwsClock& clock_;
  Clock& local_;
};

}  // namespace runpool::agent
