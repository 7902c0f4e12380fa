// GitHub App JSON Web Tokens: RS256 over base64url(header).base64url(claims), signed with the
// App's private key through OpenSSL's EVP_DigestSign.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/secret.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY, kept out of includers

namespace runpool::github {

// RFC 4648 §5 base64url, without padding.
std::string base64url_encode(std::string_view bytes);
// Accepts padded or unpadded input; nullopt on a character outside the alphabet or a bad length.
std::optional<std::string> base64url_decode(std::string_view text);

class RsaPrivateKey {
 public:
  // Parses a PEM RSA private key: PKCS#1 ("BEGIN RSA PRIVATE KEY", as GitHub issues them) or
  // PKCS#8. Throws std::invalid_argument — never quoting the key — on anything else, including
  // an encrypted key (no passphrase prompt).
  static RsaPrivateKey from_pem(const Secret& pem);

  // RSASSA-PKCS1-v1_5 with SHA-256 over `data`: the raw signature bytes.
  std::string sign_rs256(std::string_view data) const;

 private:
  explicit RsaPrivateKey(std::shared_ptr<evp_pkey_st> key) : key_(std::move(key)) {}
  std::shared_ptr<evp_pkey_st> key_;
};

// The longest lifetime GitHub accepts for an App JWT.
inline constexpr Duration kMaxAppJwtLifetime = std::chrono::minutes(10);

// {"alg":"RS256","typ":"JWT"} . {"iat": now-60s, "exp": now+lifetime, "iss": issuer}: iat is
// backdated to absorb clock skew; lifetime is clamped to kMaxAppJwtLifetime. `issuer` is the App's
// client ID or App ID, as configured (older GHES: App ID only).
Secret make_app_jwt(const RsaPrivateKey& key, const std::string& issuer, WallTime now,
                    Duration lifetime = std::chrono::minutes(9));

}  // namespace runpool::github
