#include "common/github/jwt.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <stdexcept>

#include <json/json.h>

#include "common/json.h"

namespace runpool::github {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int decode_char(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

// OpenSSL's reason for the last failure, with its error queue cleared. Reasons name the
// failure ("unsupported", "bad decrypt"), never key material.
std::string openssl_reason() {
  unsigned long code = ERR_peek_last_error();
  const char* text = code ? ERR_reason_error_string(code) : nullptr;
  std::string reason = text ? text : "unknown";
  ERR_clear_error();
  return reason;
}

int no_passphrase(char*, int, int, void*) { return 0; }

}  // namespace

std::string base64url_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                 static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    if (rest == 2) out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = decode_char(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

RsaPrivateKey RsaPrivateKey::from_pem(const Secret& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.reveal().data(), static_cast<int>(pem.reveal().size())), BIO_free);
  if (!bio) throw std::runtime_error("GitHub App private key: out of memory");
  EVP_PKEY* raw = PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr);
  if (!raw) {
    throw std::invalid_argument("GitHub App private key: not a readable unencrypted PEM private key (" +
                                openssl_reason() + ")");
  }
  std::shared_ptr<evp_pkey_st> key(raw, EVP_PKEY_free);
  if (EVP_PKEY_get_base_id(raw) != EVP_PKEY_RSA) {
    throw std::invalid_argument("GitHub App private key: not an RSA key (RS256 needs one)");
  }
  return RsaPrivateKey(std::move(key));
}

std::string RsaPrivateKey::sign_rs256(std::string_view data) const {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  size_t len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(data.data()), data.size()) !=
          1) {
    throw std::runtime_error("RS256 signing failed (" + openssl_reason() + ")");
  }
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1) {
    throw std::runtime_error("RS256 signing failed (" + openssl_reason() + ")");
  }
  sig.resize(len);
  return sig;
}

Secret make_app_jwt(const RsaPrivateKey& key, const std::string& issuer, WallTime now, Duration lifetime) {
  lifetime = std::min(lifetime, kMaxAppJwtLifetime);
  auto secs = [](WallTime t) {
    return static_cast<Json::Int64>(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  };
  Json::Value header(Json::objectValue);
  header["alg"] = "RS256";
  header["typ"] = "JWT";
  Json::Value claims(Json::objectValue);
  claims["iat"] = secs(now - std::chrono::seconds(60));
  claims["exp"] = secs(now + lifetime);
  claims["iss"] = issuer;
  std::string input = base64url_encode(write_json(header)) + "." + base64url_encode(write_json(claims));
  return Secret(input + "." + base64url_encode(key.sign_rs256(input)));
}

}  // namespace runpool::github
