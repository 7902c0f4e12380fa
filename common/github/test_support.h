// Test helpers for the GitHub client's unit tests (header only; not part of the library):
// a scripted HttpClient, an RSA key generated on the fly (no private key is committed), and a
// capture of everything spdlog writes.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/http.h"
#include "common/secret.h"

namespace runpool::github::testing {

inline HttpResponse reply(long status, std::string body = "", std::map<std::string, std::string> headers = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

// Answers from a queue first, then from the handler; records every request.
class FakeHttp final : public HttpClient {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  void push(HttpResponse r) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back([r](const HttpRequest&) { return r; });
  }
  void push_transport_error() {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back([](const HttpRequest& req) -> HttpResponse {
      throw HttpTransportError(req.method + " " + req.url + ": Connection refused", false);
    });
  }
  void on(Handler h) {
    std::lock_guard<std::mutex> lock(mu_);
    handler_ = std::move(h);
  }

  HttpResponse send(const HttpRequest& request) override {
    Handler h;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
      if (!queue_.empty()) {
        h = queue_.front();
        queue_.pop_front();
      } else {
        h = handler_;
      }
    }
    if (!h) throw std::logic_error("FakeHttp: no answer scripted for " + request.method + " " + request.url);
    return h(request);
  }

  std::vector<HttpRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  HttpRequest last() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.back();
  }
  size_t count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.size();
  }

 private:
  mutable std::mutex mu_;
  std::deque<Handler> queue_;
  Handler handler_;
  std::vector<HttpRequest> requests_;
};

inline std::string header_of(const HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}
inline std::string authorization_of(const HttpRequest& r) {
  for (const auto& [k, v] : r.secret_headers) {
    if (k == "Authorization") return v.reveal();
  }
  return "";
}

// A fresh RSA key pair for the test binary: the EVP_PKEY (to verify with) and its PEM forms.
struct TestKey {
  std::shared_ptr<EVP_PKEY> pkey;
  std::string pkcs8_pem;
  std::string pkcs1_pem;  // "BEGIN RSA PRIVATE KEY", the form GitHub hands out
};

inline std::string pem_of(EVP_PKEY* key, bool traditional) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  int ok = traditional ? PEM_write_bio_PrivateKey_traditional(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)
                       : PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  if (ok != 1) throw std::runtime_error("PEM_write failed");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, n);
}

inline const TestKey& test_key() {
  static const TestKey key = [] {
    EVP_PKEY* raw = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048));
    if (!raw) throw std::runtime_error("RSA keygen failed");
    TestKey k{std::shared_ptr<EVP_PKEY>(raw, EVP_PKEY_free), pem_of(raw, false), pem_of(raw, true)};
    return k;
  }();
  return key;
}

inline bool verify_rs256(EVP_PKEY* key, const std::string& data, const std::string& sig) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) != 1) return false;
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                          reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
}

// Routes the default spdlog logger (at trace level) into a string for the object's lifetime.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string text() {
    spdlog::default_logger()->flush();
    return out_.str();
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream out_;
};

}  // namespace runpool::github::testing
