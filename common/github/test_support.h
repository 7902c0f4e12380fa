// Test helpers for the GitHub client's unit tests (header only; not part of the library): an RSA
// key generated on the fly (no private key is committed), a capture of everything spdlog writes,
// and the shared scripted HttpClient (common/testing/fake_http.h) under this namespace.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/testing/fake_http.h"

namespace runpool::github::testing {

// The scripted HttpClient is shared with the AWS clients' tests.
using runpool::testing::authorization_of;
using runpool::testing::FakeHttp;
using runpool::testing::header_of;
using runpool::testing::reply;

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
